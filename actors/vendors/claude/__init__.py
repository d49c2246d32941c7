"""The Claude Code driver: stream-json launch builder, sans-IO translator, errors and detection."""

from .detect import FEATURES as FEATURES
from .detect import MIN_VERSION as MIN_VERSION
from .detect import probe as probe
from .driver import ClaudeDriver as ClaudeDriver
from .errors import classify as classify
from .launch import build_launch as build_launch
from .launch import mcp_config as mcp_config
from .translate import ClaudeTranslator as ClaudeTranslator
