"""A native session's subagent through a real daemon: a ``.claude/agents`` file of the repository
becomes a tool; its run reaches the model as a request of its own (its instructions, its tools,
the task), and its events reach the client tagged with ``subagent``."""

from __future__ import annotations

import json
from pathlib import Path

import trio

from tests.fakes.model_script import call, say
from tests.fakes.model_server import FakeModels, Recorded

from .test_native_e2e import KEY, TIMEOUT
from .vendor_rig import daemon_session, is_kind, of


def declared(request: Recorded) -> list[str]:
    return [t.get("name") for t in (request.body or {}).get("tools", [])]


async def test_a_repository_agent_file_is_a_subagent_tool(tmp_path: Path) -> None:
    home, work = tmp_path / "home", tmp_path / "work"
    (work / ".git").mkdir(parents=True)
    (work / "pkg").mkdir()
    agents = work / ".claude" / "agents"
    agents.mkdir(parents=True)
    (agents / "finder.md").write_text(
        "---\nname: finder\ndescription: Finds files\ntools: LS, Glob\n---\nFINDER RULES\n")
    server = FakeModels([call("finder", task="where is pkg?"), call("ls", path="."),
                         say("pkg is at the root"), say("done")])
    with trio.fail_after(TIMEOUT):
        async with trio.open_nursery() as nursery:
            port = await nursery.start(server.serve)
            params = {"harness": "native", "cwd": str(work), "model": "openai/fake-model",
                      "options": {"base_url": f"http://127.0.0.1:{port}/v1"},
                      "env": {"OPENAI_API_KEY": KEY, "HOME": str(home)},
                      "permissions": {"mode": "auto"}}
            async with daemon_session(tmp_path / "state", params, timeout=TIMEOUT) as rig:
                init = (await rig.until(is_kind("init")))[-1]
                events = await rig.turn("find pkg")
            nursery.cancel_scope.cancel()
    assert "finder" in init["tools"]
    done = [t for t in of(events, "tool") if t["phase"] == "completed"]
    assert [(t["name"], t.get("subagent")) for t in done] == [("ls", "finder"), ("finder", None)]
    assert "subagent" not in done[1]
    assert done[1]["output"] == "pkg is at the root" and not done[1]["is_error"]
    parent, sub, _, last = server.model_requests()
    assert "finder" in declared(parent)
    assert sorted(declared(sub)) == ["find", "ls"]
    assert "FINDER RULES" in json.dumps(sub.body) and "find pkg" not in json.dumps(sub.body)
    assert "where is pkg?" in json.dumps(sub.body)
    assert "pkg is at the root" in json.dumps(last.body)
