"""Model adapters for the native worker: ``PROVIDER/NAME`` → an ADK ``BaseLlm`` (asyncio).

``resolve_provider`` applies the precedence of session options, config tables and environments;
``build_model`` gives the ADK model; ``ModelError`` is every failure (stable ``native.*`` codes);
``usage_of`` reads a final response's token usage in corral's terms.
"""

from .anthropic_messages import AnthropicLlm as AnthropicLlm
from .config import DEFAULT_BASE_URLS as DEFAULT_BASE_URLS
from .config import DEFAULT_KEY_ENVS as DEFAULT_KEY_ENVS
from .config import ProviderConfig as ProviderConfig
from .config import ProviderKind as ProviderKind
from .config import ProviderTable as ProviderTable
from .config import parse_model as parse_model
from .config import resolve_provider as resolve_provider
from .errors import CODES as CODES
from .errors import ModelError as ModelError
from .factory import CorralLlm as CorralLlm
from .factory import build_model as build_model
from .factory import close_model as close_model
from .gemini import GeminiLlm as GeminiLlm
from .openai_chat import OpenAIChatLlm as OpenAIChatLlm
from .openai_responses import OpenAIResponsesLlm as OpenAIResponsesLlm
from .usage import USAGE_KEY as USAGE_KEY
from .usage import usage_of as usage_of
