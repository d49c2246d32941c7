"""Error codes are a contract: the list is pinned, and codes map back to their classes."""

from __future__ import annotations

from protocol import errors
from protocol.errors import ErrorCode, error_from_wire

GOLDEN = [
    "bad_request", "unknown_method", "unknown_session", "session_busy", "session_closed",
    "unknown_permission", "already_decided", "unsupported", "harness_unavailable",
    "frame_too_large", "unauthorized", "bad_handshake", "unsupported_protocol", "internal",
    "timeout", "actor_gone", "protocol_error", "launch_failed", "child_exited",
    "intensity_exceeded", "daemon_running", "daemon_not_running", "config_invalid",
    "storage_failed", "address_in_use",
    "mcp.unknown_server", "mcp.unknown_tool", "mcp.server_failed", "mcp.server_crashed",
    "mcp.start_failed", "mcp.call_timeout", "mcp.call_failed",
    "merge_conflict", "target_dirty", "git_failed",
    "placement.cwd_missing", "placement.binary_missing", "placement.no_node",
    "placement.unknown_node",
]


def test_the_code_list_is_pinned() -> None:
    assert [code.value for code in ErrorCode] == GOLDEN


def test_every_code_has_a_class_that_round_trips() -> None:
    for code in ErrorCode:
        err = error_from_wire(code.value, "m", {"k": 1})
        assert err.code is code and err.message == "m" and err.data == {"k": 1}
    assert isinstance(error_from_wire("unknown_session", "x"), errors.UnknownSession)


def test_an_unknown_code_stays_readable() -> None:
    err = error_from_wire("claude.limit.rate_limited", "slow down")
    assert err.code is ErrorCode.INTERNAL
    assert err.data == {"code": "claude.limit.rate_limited"}
