"""The public surface of each package is pinned: a change here is a change users see."""

from __future__ import annotations

import importlib
import types

import pytest

import protocol

PROTOCOL = {
    "PROTOCOL_VERSION", "format_ts", "FrameError", "decode_hello", "decode_request",
    "decode_server_frame", "encode", "CorralError", "ErrorCode", "error_from_wire", "Event",
    "ContentLengthFramer", "Framer", "LengthPrefixFramer", "NdjsonFramer", "ClientRequest",
    "EventFrame", "ServerFrame", "Detection", "SessionInfo", "client_protocol_schema",
}
SURFACES = {
    "supervisor": set(),
    "supervisor.tree": {
        "Backoff", "GiveUp", "RestartAfter", "RestartPolicy", "RestartTracker", "Mailbox", "Reply",
        "ChildSpec", "ChildType", "RestartType", "Strategy", "SupervisorSpec", "SupervisorStats",
        "Supervisor", "supervise", "supervisor_child",
    },
    "supervisor.proc": {"ProcessChild", "open_child", "run_child", "ExitStatus", "ProcessSpec"},
    "supervisor.ledger": {"Ledger", "LedgerRow", "ReconcileReport", "reconcile"},
    "supervisor.server": {"Host", "run_daemon"},
    "supervisor.client": {"Client", "open_client", "follow_session"},
    "supervisor.cli": {"main"},
}


def _public(module: object) -> set[str]:
    """The public names ``dir()`` lists (a package's lazy re-exports too, PEP 562)."""
    return {n for n in dir(module) if not n.startswith("_") and not isinstance(getattr(module, n), types.ModuleType)}


def test_protocol_exports() -> None:
    assert _public(protocol) - {"annotations"} == PROTOCOL


@pytest.mark.parametrize("name", sorted(SURFACES))
def test_supervisor_exports(name: str) -> None:
    assert _public(importlib.import_module(name)) - {"annotations"} == SURFACES[name]
