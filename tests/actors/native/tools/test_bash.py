"""bash: a fresh shell in the cwd, killed as a group on timeout or cancellation, bounded output."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from actors.native.tools import BashParams, ToolErrorCode, Workspace, bash

from .support import call, describe, gone, small, wait_until

# The shell records its own pid and a background grandchild's, then waits.
SPAWN = "echo $$ > shell.pid; sleep 300 & echo $! > child.pid; sleep 300"


def _pids(root: Path) -> list[int]:
    return [int((root / name).read_text()) for name in ("shell.pid", "child.pid")]


def test_output_exit_code_and_cwd(ws: Workspace, root: Path) -> None:
    outcome = call(ws, "bash", command="pwd; echo oops >&2; exit 3")
    assert outcome.is_error and outcome.code is ToolErrorCode.NONZERO_EXIT and outcome.exit_code == 3
    assert outcome.text == f"{root}\n[stderr]\noops\n[exit code 3]"
    ok = call(ws, "bash", command="true")
    assert (ok.is_error, ok.exit_code, ok.text) == (False, 0, "(no output)\n[exit code 0]")


def test_no_stdin(ws: Workspace) -> None:
    outcome = call(ws, "bash", command="cat; echo done")
    assert outcome.text.startswith("done") and outcome.exit_code == 0


def test_each_call_is_a_fresh_shell(ws: Workspace, root: Path) -> None:
    (root / "sub").mkdir()
    call(ws, "bash", command="cd sub; export X=1")
    assert call(ws, "bash", command="pwd; echo x=$X").text.startswith(f"{root}\nx=\n")


def test_timeout_kills_the_whole_group(root: Path) -> None:
    ws = small(root, bash_kill_grace=5.0)
    outcome = call(ws, "bash", command=SPAWN, timeout=1)
    assert outcome.code is ToolErrorCode.TIMEOUT and "1 s timeout" in outcome.text
    for pid in _pids(root):
        assert wait_until(lambda: gone(pid)), f"pid {pid} survived the timeout"


def test_timeout_kills_with_sigkill_what_ignores_sigterm(root: Path) -> None:
    ws = small(root, bash_kill_grace=0.2)
    outcome = call(ws, "bash", command="trap '' TERM; " + SPAWN, timeout=1)
    assert outcome.code is ToolErrorCode.TIMEOUT
    for pid in _pids(root):
        assert wait_until(lambda: gone(pid)), f"pid {pid} survived SIGKILL"


def test_requested_timeout_is_capped_at_the_maximum(root: Path) -> None:
    outcome = call(small(root, bash_max_timeout=1.0), "bash", command="sleep 300", timeout=500)
    assert outcome.code is ToolErrorCode.TIMEOUT
    assert "lowered from 500 s to the maximum of 1 s" in outcome.text


def test_cancellation_kills_the_group_and_propagates(ws: Workspace, root: Path) -> None:
    async def scenario() -> None:
        task = asyncio.create_task(bash(ws, BashParams(command=SPAWN)))
        for _ in range(1000):  # wait (bounded) for the grandchild to be started
            if (root / "child.pid").exists() and (root / "child.pid").read_text().strip():
                break
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(asyncio.wait_for(scenario(), 30))
    for pid in _pids(root):
        assert wait_until(lambda: gone(pid)), f"pid {pid} survived the cancellation: {describe(pid)}"


def test_cancellation_while_the_shell_is_still_starting_kills_its_group(ws: Workspace, root: Path) -> None:
    # asyncio is still connecting the pipes (held here) while the shell has already started a
    # grandchild: a cancellation then must stop the whole group, not the shell alone.
    async def scenario() -> None:
        loop = asyncio.get_running_loop()
        real = loop.subprocess_exec
        held, release = asyncio.Event(), asyncio.Event()

        async def slow_start(*args: Any, **kwargs: Any) -> Any:
            started = await real(*args, **kwargs)
            for _ in range(1000):  # bounded wait for the grandchild
                if (root / "child.pid").exists() and (root / "child.pid").read_text().strip():
                    break
                await asyncio.sleep(0.01)
            held.set()
            await release.wait()
            return started

        setattr(loop, "subprocess_exec", slow_start)
        task = asyncio.create_task(bash(ws, BashParams(command=SPAWN)))
        await held.wait()
        task.cancel()
        release.set()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(asyncio.wait_for(scenario(), 30))
    for pid in _pids(root):
        assert wait_until(lambda: gone(pid)), f"pid {pid} survived the cancellation: {describe(pid)}"


def test_background_job_holding_the_output_does_not_hang_the_call(root: Path) -> None:
    ws = small(root, bash_drain_grace=0.2)
    outcome = call(ws, "bash", command="sleep 300 & echo $! > child.pid; echo started")
    assert outcome.exit_code == 0 and "started" in outcome.text and "were killed" in outcome.text
    pid = int((root / "child.pid").read_text())
    assert wait_until(lambda: gone(pid))


def test_output_keeps_head_and_tail_with_an_elision_marker(root: Path) -> None:
    ws = small(root, call_output_bytes=4000)
    outcome = call(ws, "bash", command="echo START; head -c 200000 /dev/zero | tr '\\0' x; echo; echo END")
    assert outcome.truncated
    assert outcome.text.startswith("START\nxxx") and outcome.text.endswith("xxx\nEND\n[exit code 0]")
    assert "bytes elided …]" in outcome.text
    assert len(outcome.text.encode()) <= 4000


def test_stderr_is_bounded_too(root: Path) -> None:
    ws = small(root, call_output_bytes=4000)
    outcome = call(ws, "bash", command="head -c 200000 /dev/zero | tr '\\0' e >&2; echo out")
    assert outcome.text.startswith("out\n[stderr]\neee") and "bytes elided" in outcome.text
    assert len(outcome.text.encode()) <= 4000
