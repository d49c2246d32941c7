"""The native agent's coding tools as a plain asyncio library: read write edit bash grep find ls.

No ADK here: the worker wraps ``TOOLS`` as function declarations and calls ``call_tool`` (or
one tool function) with a per-session ``Workspace``. Every tool returns a ``ToolOutcome`` and
never raises, except ``asyncio.CancelledError`` when its task is cancelled (bash kills its
process group first).
"""

from .errors import ToolError as ToolError
from .errors import ToolErrorCode as ToolErrorCode
from .files import edit as edit
from .files import read as read
from .files import write as write
from .reads import ReadRecord as ReadRecord
from .reads import ReadRecords as ReadRecords
from .limits import Limits as Limits
from .outcome import ToolOutcome as ToolOutcome
from .params import BashParams as BashParams
from .params import EditParams as EditParams
from .params import FindParams as FindParams
from .params import GrepParams as GrepParams
from .params import LsParams as LsParams
from .params import ReadParams as ReadParams
from .params import WriteParams as WriteParams
from .search import find as find
from .search import grep as grep
from .search import ls as ls
from .shell import bash as bash
from .table import TOOLS as TOOLS
from .table import TOOLS_BY_NAME as TOOLS_BY_NAME
from .table import ToolSpec as ToolSpec
from .table import call_tool as call_tool
from .workspace import Workspace as Workspace
