"""A daemon that stops lets every attached client see each session's last events first."""

from __future__ import annotations

import json
import signal
from pathlib import Path
from typing import Any

import pytest
import trio

from .daemonproc import RawClient, raw_client, start_daemon, stop_daemon

PERMISSION = {"type": "permission", "permission_id": "p1", "tool": "bash", "kind": "exec",
              "input": {"command": "rm -rf /tmp/x"}, "options": ["allow", "deny"]}
# Asks once, then reads its stdin until the session closes it.
SCRIPT = f"printf '%s\\n' '{json.dumps(PERMISSION)}'; while read -r _; do :; done"


async def _until_closed(client: RawClient) -> list[dict[str, Any]]:
    """Every frame pushed to ``client`` until its connection closes."""
    frames = []
    with trio.fail_after(30):
        async for frame in client.pushed:
            frames.append(frame)
    return frames


@pytest.mark.parametrize("how", ["request", "sigterm"])
async def test_clients_get_cancelled_exit_and_closed_before_their_connection_closes(
        tmp_path: Path, how: str) -> None:
    daemon = await start_daemon(tmp_path / "state")
    try:
        async with raw_client(daemon) as tcp, raw_client(daemon, unix=True) as unix:
            sid = (await tcp.ok("session.create", harness="fake", cwd=str(tmp_path),
                                options={"script": SCRIPT}))["session"]["id"]
            for client in (tcp, unix):
                await client.ok("session.subscribe", session_id=sid)
                await client.events_until(sid, lambda f: f["event"]["type"] == "permission")
            if how == "request":
                await unix.ok("daemon.shutdown")
            else:
                daemon.process.send_signal(signal.SIGTERM)
            for client in (tcp, unix):
                events = [f["event"] for f in await _until_closed(client) if f.get("session_id") == sid]
                kinds = [(e["type"], e.get("decision") or e.get("state") or e.get("reason")) for e in events]
                # In this order, and nothing after the final status (what lies between is the
                # session's business: today a ``status idle`` after the cancellation).
                assert ("permission_decided", "cancelled") in kinds and ("exit", "closed") in kinds, kinds
                decided, exit_ = kinds.index(("permission_decided", "cancelled")), kinds.index(("exit", "closed"))
                assert decided < exit_ < len(kinds) - 1 and kinds[-1] == ("status", "closed"), kinds
                assert events[decided]["permission_id"] == "p1" and events[decided]["by"] == "session"
        with trio.fail_after(30):
            assert await daemon.process.wait() == 0
    finally:
        await stop_daemon(daemon)
