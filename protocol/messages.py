"""The client protocol's messages, in one import: handshake, requests, results, responses, pushes.

A request is ``{"type": METHOD, "id": INT, …params}``; each gets one ``ok`` or ``error`` with
its id. Tags are the method names of PROTOCOL.md and never change. The Structs live by kind in
``requests``, ``results`` and ``frames``; this module is the one place the rest of corral
imports them from.
"""

from .frames import Hello as Hello
from .frames import Welcome as Welcome
from .frames import Ok as Ok
from .frames import ErrorFrame as ErrorFrame
from .frames import EventFrame as EventFrame
from .frames import Lagged as Lagged
from .frames import ServerFrame as ServerFrame
from .frames import ClientFrame as ClientFrame
from .frames import AnyFrame as AnyFrame
from .requests import Request as Request
from .requests import DaemonStatus as DaemonStatus
from .requests import DaemonShutdown as DaemonShutdown
from .requests import HarnessList as HarnessList
from .requests import SessionCreate as SessionCreate
from .requests import SessionList as SessionList
from .requests import SessionGet as SessionGet
from .requests import SessionSubscribe as SessionSubscribe
from .requests import SessionUnsubscribe as SessionUnsubscribe
from .requests import SessionPrompt as SessionPrompt
from .requests import SessionInterrupt as SessionInterrupt
from .requests import SessionPermission as SessionPermission
from .requests import SessionSetModel as SessionSetModel
from .requests import SessionSetPermissions as SessionSetPermissions
from .requests import SessionClose as SessionClose
from .requests import SessionCompact as SessionCompact
from .requests import SessionResume as SessionResume
from .requests import LspList as LspList
from .requests import McpList as McpList
from .requests import McpRestart as McpRestart
from .requests import MergeStrategy as MergeStrategy
from .requests import WorkspaceDiff as WorkspaceDiff
from .requests import WorkspaceCommit as WorkspaceCommit
from .requests import WorkspaceMerge as WorkspaceMerge
from .requests import WorkspaceDiscard as WorkspaceDiscard
from .requests import UiLoginCode as UiLoginCode
from .requests import PlacementStatusRequest as PlacementStatusRequest
from .requests import ClientRequest as ClientRequest
from .requests import REQUEST_TYPES as REQUEST_TYPES
from .results import Empty as Empty
from .results import SupervisorInfo as SupervisorInfo
from .results import DaemonStatusResult as DaemonStatusResult
from .results import HarnessListResult as HarnessListResult
from .results import SessionResult as SessionResult
from .results import SessionWarning as SessionWarning
from .results import SessionListResult as SessionListResult
from .results import SubscribeResult as SubscribeResult
from .results import PromptResult as PromptResult
from .results import LspState as LspState
from .results import LspServerInfo as LspServerInfo
from .results import LspListResult as LspListResult
from .results import McpListResult as McpListResult
from .results import McpServerResult as McpServerResult
from .results import DiffResult as DiffResult
from .results import CommitResult as CommitResult
from .results import LoginCodeResult as LoginCodeResult
from .results import PlacementStatus as PlacementStatus
from .results import RESULT_TYPES as RESULT_TYPES
