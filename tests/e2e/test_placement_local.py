"""The placement surface on the ``local`` backend, over the wire against a real daemon:
``placement.status`` lists this machine as the one node with its live load, sessions carry no
``placement`` and children no ``node_id``, and ``options.placement`` is checked at
``session.create`` (its shape: ``bad_request`` naming the field; the node: only ``local`` or
``127.0.0.1`` here, anything else ``placement.unknown_node`` before anything is made)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .daemonproc import DaemonProc, RawClient, raw_client


async def _idle(client: RawClient, sid: str) -> None:
    await client.ok("session.subscribe", session_id=sid)
    await client.events_until(sid, lambda f: f["event"] == {"type": "status", "state": "idle",
                                                            "stalled": False})


async def _create(client: RawClient, cwd: Path, node: str) -> dict[str, Any]:
    session: dict[str, Any] = (await client.ok(
        "session.create", harness="fake", cwd=str(cwd), options={"placement": {"node": node}}))["session"]
    await _idle(client, session["id"])
    return session


async def test_placement_status_is_this_machine_with_its_live_load(daemon: DaemonProc, tmp_path: Path) -> None:
    async with raw_client(daemon) as client:
        pid = (await client.ok("daemon.status"))["pid"]
        before = await client.ok("placement.status")
        assert before == {"backend": "local", "address": None, "nodes": [
            {"node_id": "local", "node_ip": "127.0.0.1", "alive": True, "agent_pid": pid,
             "children": len((await client.ok("daemon.status"))["children"]), "sessions": 0}]}

        first = await _create(client, tmp_path, "local")
        second = await _create(client, tmp_path, "127.0.0.1")
        assert first["placement"] is None and second["placement"] is None
        status = await client.ok("daemon.status")
        ours = [c for c in status["children"] if c["pid"] in (first["pid"], second["pid"])]
        assert len(ours) == 2 and all(c["node_id"] is None for c in status["children"])
        (node,) = (await client.ok("placement.status"))["nodes"]
        assert node["sessions"] == 2 and node["children"] == len(status["children"])
        assert node["children"] == before["nodes"][0]["children"] + 2

        await client.ok("session.close", session_id=first["id"])
        (node,) = (await client.ok("placement.status"))["nodes"]
        assert node["sessions"] == 1 and node["children"] == before["nodes"][0]["children"] + 1
        got = (await client.ok("session.get", session_id=second["id"]))["session"]
        assert got["placement"] is None


async def test_options_placement_is_refused_before_anything_is_made(daemon: DaemonProc, tmp_path: Path) -> None:
    cases: list[tuple[Any, str, dict[str, Any]]] = [
        ({"node": "10.1.2.3"}, "placement.unknown_node", {"node": "10.1.2.3"}),
        ({"node": "a3f1c0de"}, "placement.unknown_node", {"node": "a3f1c0de"}),
        ("local", "bad_request", {"field": "options.placement"}),
        ({"node": 7}, "bad_request", {"field": "options.placement.node"}),
        ({"node": "local", "gpu": True}, "bad_request", {"field": "options.placement.gpu"}),
    ]
    async with raw_client(daemon) as client:
        for placement, code, data in cases:
            for workspace in (None, {"mode": "worktree"}):  # neither path makes anything first
                extra = {"workspace": workspace} if workspace else {}
                reply = await client.call("session.create", harness="fake", cwd=str(tmp_path),
                                          options={"placement": placement}, **extra)
                assert reply["type"] == "error" and reply["code"] == code, reply
                assert reply["data"] == data, reply
                if code == "placement.unknown_node":
                    assert "local (127.0.0.1)" in reply["message"], reply
        assert (await client.ok("session.list"))["sessions"] == []
        assert (await client.ok("placement.status"))["nodes"][0]["sessions"] == 0
