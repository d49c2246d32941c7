"""Instruction files, skills and the active tool set of a native session through a real daemon.

The session's ``env`` gives the worker a home of the test's own (``HOME``), holding a Claude
``CLAUDE.md`` and a Claude skill; the cwd is a repository with an ``AGENTS.md`` and a nested
``pkg/AGENTS.md``. The fake model server records what the worker sends. A SIGKILL'd worker is
restarted with the same active tool set.
"""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import trio

from tests.fakes.model_script import call, say
from tests.fakes.model_server import FakeModels, Recorded

from .test_native_e2e import KEY, TIMEOUT
from .vendor_rig import daemon_session, is_kind, of


def put(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def declared(request: Recorded) -> list[str]:
    return [t.get("name") for t in (request.body or {}).get("tools", [])]


async def test_instructions_skills_and_tool_set_reach_the_model(tmp_path: Path) -> None:
    home, work = tmp_path / "home", tmp_path / "work"
    (work / ".git").mkdir(parents=True)
    put(home / ".claude" / "CLAUDE.md", "USER RULES from the home")
    put(home / ".claude" / "skills" / "review" / "SKILL.md",
        "---\nname: review\ndescription: Review a change\n---\nREVIEW BODY: be thorough.")
    put(work / "AGENTS.md", "ROOT RULES of the repository")
    put(work / "pkg" / "AGENTS.md", "PKG RULES for pkg")
    server = FakeModels([call("ls", path="pkg"), call("load_skill", name="review"), say("done")])
    with trio.fail_after(TIMEOUT):
        async with trio.open_nursery() as nursery:
            port = await nursery.start(server.serve)
            params = {"harness": "native", "cwd": str(work), "model": "openai/fake-model",
                      "options": {"base_url": f"http://127.0.0.1:{port}/v1",
                                  "tools": ["read", "ls", "list_skills", "load_skill"]},
                      "env": {"OPENAI_API_KEY": KEY, "HOME": str(home)},
                      "permissions": {"mode": "auto"}}
            async with daemon_session(tmp_path / "state", params, timeout=TIMEOUT) as rig:
                init = (await rig.until(is_kind("init")))[-1]
                events = await rig.turn("look around")
                # the tool set is the session's: a restarted worker keeps it
                os.kill(await rig.pid(), signal.SIGKILL)
                again = (await rig.until(is_kind("init")))[-1]
            nursery.cancel_scope.cancel()
    assert again["tools"] == init["tools"]
    assert init["tools"] == ["read", "ls", "list_skills", "load_skill"]
    assert [(t["name"], t["is_error"]) for t in of(events, "tool") if t["phase"] == "completed"] \
        == [("ls", False), ("load_skill", False)]
    first, second, third = server.model_requests()
    assert declared(first) == ["read", "ls", "list_skills", "load_skill"]
    body = json.dumps(first.body)
    assert body.index("USER RULES") < body.index("ROOT RULES") and "PKG RULES" not in body
    assert "PKG RULES" in json.dumps(second.body)
    assert "REVIEW BODY" in json.dumps(third.body)
