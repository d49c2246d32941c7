"""Real ACP agents with client-side services: the translator and work runner (``live.LiveAcp``, which
runs ``Work`` as ``actors.harness`` asks a session to) against Gemini CLI and claude-code-acp,
offline. The agent's file writes and shell commands go through corral's ``fs``/``terminal``
side; the files appear; a write the agent did not ask about waits for a decision."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import trio

from actors.harness import HarnessRequest
from protocol.events import Permission, Result, Tool
from protocol.models import Permissions
from tests.fakes.acp_offline import MODELS, aside, binary, install_hint, offline
from tests.fakes.model_script import Turn, call, say
from tests.fakes.model_server import FakeModels

from .live import LiveAcp

pytestmark = [pytest.mark.vendor]
TIMEOUT = 90


def _installed(agent: str) -> str:
    found = binary(agent)
    if found is None:
        if os.environ.get("CI"):
            pytest.fail(f"CI is set but {agent} is not installed ({install_hint(agent)})")
        pytest.skip(f"{agent} is not installed ({install_hint(agent)})")
    return found


async def run_turn(tmp: Path, agent: str, steps: list[Turn], *, mode: str,
                   decisions: dict[str, Any] | None = None) -> LiveAcp:
    """One prompt through a live agent with ``runs_work``; permissions decided by ``decisions``
    (tool name → decision, default allow). Returns the closed ``LiveAcp``."""
    path = _installed(agent)
    for name in ("work", "run"):
        (tmp / name).mkdir(exist_ok=True)
    server = FakeModels(steps, aside=aside(agent))
    async with trio.open_nursery() as nursery:
        port = await nursery.start(server.serve)
        env, options = offline(agent, port, tmp / "home")
        request = HarnessRequest(session_id="s-live", cwd=str(tmp / "work"), model=MODELS[agent],
                                 env=env, options={**options, "binary": path},
                                 work_dir=str(tmp / "run"), permissions=Permissions(mode=mode),
                                 runs_work=True)
        live = LiveAcp(agent, request, stderr_path=tmp / "stderr")
        with trio.fail_after(TIMEOUT):
            await nursery.start(live.run)
            await live.wait_until(lambda: live.translator.ready)
            await live.call("prompt", "do it")
            start = 0
            while True:
                found = await live.index_of(lambda e: isinstance(e, (Permission, Result)), start)
                event, start = live.events[found], found + 1
                if isinstance(event, Result):
                    break
                assert isinstance(event, Permission)
                decision = (decisions or {}).get(event.tool, "allow")
                await live.call("decide", event.permission_id, decision)
            await live.close()
        nursery.cancel_scope.cancel()
    return live


def writes(live: LiveAcp) -> list[Tool]:
    return [e for e in live.events if isinstance(e, Tool) and e.name == "write_text_file"]


async def test_gemini_writes_through_corral(tmp_path: Path) -> None:
    path = str(tmp_path / "work" / "hello.txt")
    live = await run_turn(tmp_path, "gemini", [call("write_file", file_path=path, content="hi\n"),
                                               say("Done.")], mode="ask")
    assert Path(path).read_text() == "hi\n"
    assert [(w.phase, w.is_error) for w in writes(live)] == [("started", False),
                                                             ("completed", False)]
    # Gemini's own permission covered the write: no second question.
    assert [e.tool for e in live.events if isinstance(e, Permission)] == ["write_file"]


async def test_claude_runs_its_shell_command_in_a_corral_terminal(tmp_path: Path) -> None:
    live = await run_turn(tmp_path, "claude-acp", [
        call("mcp__acp__Bash", command="echo made > made.txt", timeout=10000), say("Done.")],
        mode="ask")
    assert (tmp_path / "work" / "made.txt").read_text() == "made\n"
    assert [e.kind for e in live.events if isinstance(e, Permission)] == ["exec"]


async def test_an_unasked_write_waits_for_a_decision_and_a_denial_keeps_the_file_away(
        tmp_path: Path) -> None:
    # acceptEdits (auto_edit): the agent writes without asking; corral's policy still sees it.
    path = str(tmp_path / "work" / "kept.txt")
    live = await run_turn(tmp_path, "claude-acp", [
        call("mcp__acp__Write", file_path=path, content="x"), say("Done.")],
        mode="auto_edit", decisions={"write_text_file": "deny"})
    asks = [e for e in live.events if isinstance(e, Permission)]
    assert [(a.tool, a.kind) for a in asks] == [("write_text_file", "edit")]
    assert not Path(path).exists()
    assert writes(live)[-1].is_error

