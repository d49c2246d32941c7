"""The public surface of each package is pinned: a change here is a change users see."""

from __future__ import annotations

import protocol
import supervisor

PROTOCOL = {
    "PROTOCOL_VERSION", "format_ts", "FrameError", "decode_hello", "decode_request",
    "decode_server_frame", "encode", "CorralError", "ErrorCode", "error_from_wire", "Event",
    "ContentLengthFramer", "Framer", "LengthPrefixFramer", "NdjsonFramer", "ClientRequest",
    "EventFrame", "ServerFrame", "Detection", "SessionInfo", "client_protocol_schema",
}
SUPERVISOR = {
    "Backoff", "RestartPolicy", "RestartTracker", "Ledger", "reconcile", "Mailbox", "Reply",
    "Child", "ExitStatus", "ProcessSpec", "open_child", "run_child", "ChildSpec", "RestartType",
    "Strategy", "SupervisorSpec", "Supervisor", "supervise", "Client", "open_client",
    "follow_session",
}


def _public(module: object) -> set[str]:
    return {n for n in vars(module) if not n.startswith("_") and not isinstance(getattr(module, n), type(protocol))}


def test_protocol_exports() -> None:
    assert _public(protocol) - {"annotations"} == PROTOCOL


def test_supervisor_exports() -> None:
    assert _public(supervisor) - {"annotations"} == SUPERVISOR
