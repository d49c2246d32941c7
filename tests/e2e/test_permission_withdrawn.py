"""A harness that withdraws its own permission request: one ``permission_decided``, no more.

Vendors clear approvals themselves (Codex sends ``serverRequest/resolved`` when a turn ends or is
interrupted); the driver reports that as ``permission_decided {cancelled}``. The session must
close the request then (no longer ``waiting``, no second decision when the turn ends) and drop
any repeat.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .daemonproc import DaemonProc, raw_client

_ASK = {"type": "permission", "permission_id": "p1", "tool": "bash", "kind": "exec",
        "input": {"command": "ls"}, "options": ["allow", "deny"]}
_WITHDRAWN = {"type": "permission_decided", "permission_id": "p1", "decision": "cancelled",
              "by": "session"}
_DONE = {"type": "result", "stop_reason": "end_turn", "is_error": False}


def _script(*lines: dict[str, Any]) -> str:
    quoted = " ".join("'" + json.dumps(line) + "'" for line in lines)
    return f"read line; printf '%s\\n' {quoted}; read line"


async def test_a_withdrawn_request_is_decided_once(daemon: DaemonProc, tmp_path: Path) -> None:
    async with raw_client(daemon) as client:
        sid = (await client.ok("session.create", harness="fake", cwd=str(tmp_path), options={
            "script": _script(_ASK, _WITHDRAWN, _WITHDRAWN, _DONE)}))["session"]["id"]
        await client.ok("session.subscribe", session_id=sid)
        assert (await client.ok("session.prompt", session_id=sid, text="go"))["delivery"] == "prompted"
        frames = await client.events_until(sid, lambda f: f["event"]["type"] == "result")
        frames += await client.events_until(sid, lambda f: f["event"]["type"] == "status")
        events = [f["event"] for f in frames]
        assert [e for e in events if e["type"] == "permission_decided"] == [
            {**_WITHDRAWN, "by_name": "session"}]  # the session names it as it says ``by``
        states = [e["state"] for e in events if e["type"] == "status"]
        assert states[-4:] == ["running", "waiting", "running", "idle"]
        again = await client.call("session.permission", session_id=sid, permission_id="p1",
                                  decision="allow")
        assert again["code"] == "already_decided"
