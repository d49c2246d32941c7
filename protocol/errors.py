"""Stable error codes and the one exception tree every layer raises.

A client sees ``{code, message, data}``; the code is the contract, the message is for people.
Codes map back to exception classes through a registry keyed by code (never by class name), so
an error that crossed a pipe or the websocket can be re-raised as the same type on the far side.
"""

from __future__ import annotations

import enum
from typing import Any, ClassVar


class ErrorCode(enum.StrEnum):
    """Every machine-readable error code corral emits. Never rename or reuse a value."""

    BAD_REQUEST = "bad_request"
    UNKNOWN_METHOD = "unknown_method"
    UNKNOWN_SESSION = "unknown_session"
    SESSION_BUSY = "session_busy"
    SESSION_CLOSED = "session_closed"
    UNKNOWN_PERMISSION = "unknown_permission"
    ALREADY_DECIDED = "already_decided"
    UNSUPPORTED = "unsupported"
    HARNESS_UNAVAILABLE = "harness_unavailable"
    FRAME_TOO_LARGE = "frame_too_large"
    UNAUTHORIZED = "unauthorized"
    BAD_HANDSHAKE = "bad_handshake"
    UNSUPPORTED_PROTOCOL = "unsupported_protocol"
    INTERNAL = "internal"
    # Runtime codes: raised inside the daemon, surfaced to clients where they apply.
    TIMEOUT = "timeout"
    ACTOR_GONE = "actor_gone"
    PROTOCOL_ERROR = "protocol_error"
    LAUNCH_FAILED = "launch_failed"
    CHILD_EXITED = "child_exited"
    INTENSITY_EXCEEDED = "intensity_exceeded"
    DAEMON_RUNNING = "daemon_running"
    DAEMON_NOT_RUNNING = "daemon_not_running"
    CONFIG_INVALID = "config_invalid"
    STORAGE_FAILED = "storage_failed"
    ADDRESS_IN_USE = "address_in_use"
    # MCP servers (actors/mcp): what a tool call through the daemon can meet.
    MCP_UNKNOWN_SERVER = "mcp.unknown_server"
    MCP_UNKNOWN_TOOL = "mcp.unknown_tool"
    MCP_SERVER_FAILED = "mcp.server_failed"
    MCP_SERVER_CRASHED = "mcp.server_crashed"
    MCP_START_FAILED = "mcp.start_failed"
    MCP_CALL_TIMEOUT = "mcp.call_timeout"
    MCP_CALL_FAILED = "mcp.call_failed"
    # Workspaces (git worktrees).
    MERGE_CONFLICT = "merge_conflict"
    TARGET_DIRTY = "target_dirty"
    GIT_FAILED = "git_failed"
    # Placement (a backend other than local places session children on cluster nodes).
    PLACEMENT_CWD_MISSING = "placement.cwd_missing"
    PLACEMENT_BINARY_MISSING = "placement.binary_missing"
    PLACEMENT_NO_NODE = "placement.no_node"
    PLACEMENT_UNKNOWN_NODE = "placement.unknown_node"


class CorralError(Exception):
    """Base of every error corral raises on purpose; carries a stable ``code``."""

    code: ClassVar[ErrorCode] = ErrorCode.INTERNAL

    def __init__(self, message: str, *, data: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.data = data

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # The first class declared for a code owns it; subclasses refine without stealing it.
        _REGISTRY.setdefault(cls.code, cls)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.code.value!r}, {self.message!r})"


_REGISTRY: dict[ErrorCode, type[CorralError]] = {ErrorCode.INTERNAL: CorralError}


def error_class(code: str) -> type[CorralError]:
    """The exception class registered for ``code``; ``CorralError`` for codes we do not know."""
    try:
        return _REGISTRY[ErrorCode(code)]
    except ValueError:
        return CorralError


def error_from_wire(code: str, message: str, data: dict[str, Any] | None = None) -> CorralError:
    """Rebuild an exception from its wire form, keeping an unknown code readable."""
    cls = error_class(code)
    err = cls(message, data=data)
    if cls is CorralError and code != ErrorCode.INTERNAL:
        err.data = {**(data or {}), "code": code}
    return err


class BadRequest(CorralError):
    """A request frame was malformed: not JSON, no ``type``, no ``id``, or a field of the wrong type."""

    code = ErrorCode.BAD_REQUEST


class UnknownMethod(CorralError):
    """A request named a ``type`` the daemon does not serve."""

    code = ErrorCode.UNKNOWN_METHOD


class UnknownSession(CorralError):
    """A request named a session id that does not exist."""

    code = ErrorCode.UNKNOWN_SESSION


class SessionBusy(CorralError):
    """The session cannot take this request in its current state."""

    code = ErrorCode.SESSION_BUSY


class SessionClosed(CorralError):
    """The session is ``closed`` or ``failed`` and takes no more work."""

    code = ErrorCode.SESSION_CLOSED


class UnknownPermission(CorralError):
    """A permission decision named an id that was never requested in this session."""

    code = ErrorCode.UNKNOWN_PERMISSION


class AlreadyDecided(CorralError):
    """A permission decision arrived after another one had already won."""

    code = ErrorCode.ALREADY_DECIDED


class Unsupported(CorralError):
    """The harness cannot do what was asked (for example, set_model on a harness without it)."""

    code = ErrorCode.UNSUPPORTED


class HarnessUnavailable(CorralError):
    """The harness binary is missing, too old, or unknown."""

    code = ErrorCode.HARNESS_UNAVAILABLE


class FrameTooLarge(CorralError):
    """A frame exceeded the configured byte limit; the stream cannot be trusted past it."""

    code = ErrorCode.FRAME_TOO_LARGE


class Unauthorized(CorralError):
    """The handshake carried no token or a wrong one."""

    code = ErrorCode.UNAUTHORIZED


class BadHandshake(CorralError):
    """The first frame on a connection was not a well-formed ``hello``."""

    code = ErrorCode.BAD_HANDSHAKE


class UnsupportedProtocol(CorralError):
    """The client asked for a protocol version this daemon does not speak."""

    code = ErrorCode.UNSUPPORTED_PROTOCOL


class Timeout(CorralError):
    """A bounded wait ran out (a request/reply, a handshake, a close sequence)."""

    code = ErrorCode.TIMEOUT


class ActorGone(CorralError):
    """The actor a request was addressed to has stopped; the request was not handled."""

    code = ErrorCode.ACTOR_GONE


class ProtocolError(CorralError):
    """The peer sent bytes that break its protocol (garbage, a bad header, a torn frame)."""

    code = ErrorCode.PROTOCOL_ERROR


class LaunchFailed(CorralError):
    """A child process could not be started; ``data`` carries the OS error."""

    code = ErrorCode.LAUNCH_FAILED


class ChildExited(CorralError):
    """A child process exited while something was still waiting on it."""

    code = ErrorCode.CHILD_EXITED


class IntensityExceeded(CorralError):
    """A supervisor saw more restarts than its intensity allows in its period and gave up."""

    code = ErrorCode.INTENSITY_EXCEEDED


class DaemonRunning(CorralError):
    """Another daemon already holds this state directory's lock."""

    code = ErrorCode.DAEMON_RUNNING


class DaemonNotRunning(CorralError):
    """No daemon answers for this state directory."""

    code = ErrorCode.DAEMON_NOT_RUNNING


class AddressInUse(CorralError):
    """The daemon cannot listen: its TCP address (``[daemon] host``/``port``, or ``--port``) is
    taken by another program; the message names the address and how to pick another."""

    code = ErrorCode.ADDRESS_IN_USE


class ConfigInvalid(CorralError):
    """The configuration file could not be parsed or holds a value of the wrong type."""

    code = ErrorCode.CONFIG_INVALID


class StorageFailed(CorralError):
    """Writing durable state failed (a full disk, a read-only directory)."""

    code = ErrorCode.STORAGE_FAILED


class McpUnknownServer(CorralError):
    """A request named an MCP server the daemon does not supervise (or the session may not use)."""

    code = ErrorCode.MCP_UNKNOWN_SERVER


class McpUnknownTool(CorralError):
    """A call named a tool its server does not list, or one outside the server's ``tools`` allow-list."""

    code = ErrorCode.MCP_UNKNOWN_TOOL


class McpServerFailed(CorralError):
    """The server crashed more often than its restart intensity allows: no process runs, and every
    call fails at once with this code until ``mcp.restart``."""

    code = ErrorCode.MCP_SERVER_FAILED


class McpServerCrashed(CorralError):
    """The server (its process, or its HTTP connection) went away while the call was in flight;
    the server is being restarted, the call was not retried."""

    code = ErrorCode.MCP_SERVER_CRASHED


class McpStartFailed(CorralError):
    """The server could not be started or did not finish the MCP handshake within its
    ``startup_timeout``."""

    code = ErrorCode.MCP_START_FAILED


class McpCallTimeout(CorralError):
    """A tool call got no result within its timeout; MCP's cancellation was sent to the server."""

    code = ErrorCode.MCP_CALL_TIMEOUT


class McpCallFailed(CorralError):
    """The server answered a request with a JSON-RPC error (``data`` carries its code)."""

    code = ErrorCode.MCP_CALL_FAILED

class MergeConflict(CorralError):
    """``workspace.merge`` would conflict; nothing was changed. ``data["files"]`` lists the
    conflicting paths."""

    code = ErrorCode.MERGE_CONFLICT


class TargetDirty(CorralError):
    """``workspace.merge`` was refused because the checkout it merges into has uncommitted
    changes to tracked files (or untracked files the merge would overwrite), listed in
    ``data["files"]``; nothing was changed."""

    code = ErrorCode.TARGET_DIRTY


class GitFailed(CorralError):
    """A git command the daemon ran failed for a reason without a code of its own; the message
    carries git's own words (``data``: the command and its exit status)."""

    code = ErrorCode.GIT_FAILED


class PlacementCwdMissing(CorralError):
    """The session's ``cwd`` is not a directory on the node chosen for its child; the message
    names the node's id and IP (a shared filesystem is the documented set-up)."""

    code = ErrorCode.PLACEMENT_CWD_MISSING


class PlacementBinaryMissing(CorralError):
    """The harness's binary is not on the node chosen for the session's child; the message
    names the binary and the node's id and IP."""

    code = ErrorCode.PLACEMENT_BINARY_MISSING


class PlacementNoNode(CorralError):
    """No node can host a session's child now: none is alive with CPUs (or, with ``[placement]
    node_resource`` set, none offers that resource)."""

    code = ErrorCode.PLACEMENT_NO_NODE


class PlacementUnknownNode(CorralError):
    """``options.placement.node`` names no alive node (by id or IP) the backend may place on;
    the message lists the ones it may."""

    code = ErrorCode.PLACEMENT_UNKNOWN_NODE
