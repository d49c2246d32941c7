"""The ACP work runner: real files (confined to the cwd) and real terminals (own process group,
bounded output, killed with the runner)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import psutil
import trio

from actors.vendors.acp import jobs, open_work_runner
from actors.vendors.acp.work_runner import MAX_OUTPUT
from supervisor.ledger.store import Ledger

TIMEOUT = 30


async def test_files_are_read_and_written_inside_the_cwd_only(tmp_path: Path) -> None:
    root = tmp_path / "work"
    root.mkdir()
    (tmp_path / "secret").write_text("no")
    (root / "link").symlink_to(tmp_path / "secret")
    with trio.fail_after(TIMEOUT):
        async with open_work_runner(str(root), {}) as runner:
            path = str(root / "sub" / "a.txt")
            assert await runner.run(jobs.WriteFile(path=path, content="1\n2\n3\n")) == jobs.Done()
            assert await runner.run(jobs.ReadFile(path=path)) == jobs.Done({"content": "1\n2\n3\n"})
            assert await runner.run(jobs.ReadFile(path=path, line=2, limit=1)) == jobs.Done(
                {"content": "2\n"})
            missing = str(root / "missing")
            assert await runner.run(jobs.ReadFile(path=missing)) == jobs.Failed(
                jobs.NOT_FOUND, f"{missing} does not exist")
            assert await runner.run(jobs.ReadFile(path=missing, missing_empty=True)) == jobs.Done(
                {"content": ""})
            for outside in (str(tmp_path / "secret"), str(root / "link"), "relative.txt"):
                read = await runner.run(jobs.ReadFile(path=outside))
                wrote = await runner.run(jobs.WriteFile(path=outside, content="x"))
                assert isinstance(read, jobs.Failed) and isinstance(wrote, jobs.Failed)
    assert (tmp_path / "secret").read_text() == "no"


async def test_a_terminal_runs_in_its_own_group_and_its_output_is_bounded(tmp_path: Path) -> None:
    with trio.fail_after(TIMEOUT):
        async with open_work_runner(str(tmp_path), {"GREETING": "hi"}) as runner:
            opened = await runner.run(jobs.OpenTerminal(
                command="echo $GREETING $EXTRA; echo oops >&2; exit 3", cwd=str(tmp_path),
                env={"EXTRA": "there"}, limit=1000))
            assert isinstance(opened, jobs.Done)
            tid = opened.result["terminalId"]
            assert await runner.run(jobs.WaitTerminal(terminal_id=tid)) == jobs.Done(
                {"exitCode": 3, "signal": None})
            output = await runner.run(jobs.TerminalOutput(terminal_id=tid))
            assert output == jobs.Done({"output": "hi there\noops\n", "truncated": False,
                                        "exitStatus": {"exitCode": 3, "signal": None}})
            big = await runner.run(jobs.OpenTerminal(
                command=sys.executable, args=["-c", "print('é' * 5000, end='')"],
                cwd=str(tmp_path), limit=101))
            assert isinstance(big, jobs.Done)
            await runner.run(jobs.WaitTerminal(terminal_id=big.result["terminalId"]))
            tail = await runner.run(jobs.TerminalOutput(terminal_id=big.result["terminalId"]))
            assert isinstance(tail, jobs.Done) and tail.result["truncated"]
            assert set(tail.result["output"]) == {"é"} and len(tail.result["output"]) == 50
            assert await runner.run(jobs.TerminalOutput(terminal_id="nope")) == jobs.Failed(
                jobs.NOT_FOUND, "no terminal 'nope'")
            refused = await runner.run(jobs.OpenTerminal(command="ls", cwd="/", limit=10))
            assert isinstance(refused, jobs.Failed)
    assert MAX_OUTPUT >= 1000


async def test_kill_release_and_the_end_of_the_work_runner_kill_the_whole_group(tmp_path: Path) -> None:
    fifo = tmp_path / "pids"
    os.mkfifo(fifo)
    # A shell that leaves a grandchild behind and names both: the group kill must take both.
    command = f'sleep 300 & echo "$! $$" > {fifo}; wait'

    async def family_of_terminal() -> list[int]:
        text = await trio.to_thread.run_sync(fifo.read_text)  # blocks until the shell wrote
        return [int(p) for p in text.split()]

    with trio.fail_after(TIMEOUT):
        async with open_work_runner(str(tmp_path), {}) as runner:
            first = await runner.run(jobs.OpenTerminal(command=command, cwd=str(tmp_path),
                                                       limit=100))
            assert isinstance(first, jobs.Done)
            tid = first.result["terminalId"]
            family = await family_of_terminal()
            assert len({os.getpgid(p) for p in family}) == 1
            assert os.getpgid(family[0]) != os.getpgid(0)
            assert await runner.run(jobs.CloseTerminal(terminal_id=tid)) == jobs.Done()
            gone, alive = psutil.wait_procs([psutil.Process(p) for p in family
                                             if psutil.pid_exists(p)], timeout=10)
            assert alive == []
            waited = await runner.run(jobs.WaitTerminal(terminal_id=tid))
            assert isinstance(waited, jobs.Done) and waited.result["signal"] == "SIGKILL"
            await runner.run(jobs.OpenTerminal(command=command, cwd=str(tmp_path), limit=100))
            left = await family_of_terminal()
    gone, alive = psutil.wait_procs([psutil.Process(p) for p in left if psutil.pid_exists(p)],
                                    timeout=10)
    assert alive == []


async def test_dot_dot_symlinks_fifos_and_the_state_directory_are_refused_with_a_reason(
        tmp_path: Path) -> None:
    root, state = tmp_path / "work", tmp_path / "work" / ".corral"
    (state / "sessions").mkdir(parents=True)
    (state / "token").write_text("secret")
    (root / "out").symlink_to(tmp_path)
    os.mkfifo(root / "pipe")
    with trio.fail_after(TIMEOUT):
        async with open_work_runner(str(root), {}, state_dir=str(state)) as runner:
            for path, why in [(f"{root}/../x", "outside"), (f"{root}/out/x", "outside"),
                              ("/etc/passwd", "outside"), ("x", "not an absolute path"),
                              (f"{state}/token", "state directory"),
                              (f"{root}/sub/../.corral/sessions/new", "state directory")]:
                wrote = await runner.run(jobs.WriteFile(path=path, content="pwned"))
                read = await runner.run(jobs.ReadFile(path=path))
                assert isinstance(wrote, jobs.Failed) and why in wrote.message, (path, wrote)
                assert isinstance(read, jobs.Failed) and why in read.message, (path, read)
            opened = await runner.run(jobs.OpenTerminal(command="true", cwd=str(state), limit=10))
            assert isinstance(opened, jobs.Failed) and "state directory" in opened.message
            fifo = await runner.run(jobs.ReadFile(path=str(root / "pipe")))
            assert fifo == jobs.Failed(jobs.DENIED, f"{root}/pipe is not a regular file")
    assert (state / "token").read_text() == "secret"
    assert not (tmp_path / "x").exists() and not (state / "sessions" / "new").exists()


async def test_a_worktree_under_the_state_directory_is_its_own_root(tmp_path: Path) -> None:
    state = tmp_path / "state"
    tree = state / "worktrees" / "s-1"
    tree.mkdir(parents=True)
    (state / "sessions").mkdir()
    with trio.fail_after(TIMEOUT):
        async with open_work_runner(str(tree), {}, state_dir=str(state)) as runner:
            assert await runner.run(jobs.WriteFile(path=f"{tree}/a", content="1")) == jobs.Done()
            token = await runner.run(jobs.ReadFile(path=f"{state}/token"))
            assert isinstance(token, jobs.Failed) and "outside" in token.message
        # A session whose cwd is a session directory gets nothing of the state directory.
        async with open_work_runner(str(state / "sessions"), {}, state_dir=str(state)) as runner:
            refused = await runner.run(jobs.WriteFile(path=f"{state}/sessions/a", content="1"))
            assert isinstance(refused, jobs.Failed) and "state directory" in refused.message


async def test_terminals_are_recorded_in_the_crash_ledger_until_reaped(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / "state")
    with trio.fail_after(TIMEOUT):
        async with open_work_runner(str(tmp_path), {}, ledger=ledger, key="session:s-1") as runner:
            opened = await runner.run(jobs.OpenTerminal(command="sleep 300", cwd=str(tmp_path),
                                                        limit=10))
            assert isinstance(opened, jobs.Done)
            [row] = ledger.rows()
            assert row.kind == "acp-terminal" and row.key.startswith("session:s-1:terminal:")
            pid = row.pid
        assert ledger.rows() == []
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
