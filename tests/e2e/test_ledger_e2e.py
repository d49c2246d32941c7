"""The crash ledger through real daemons: after ``corral stop`` it holds no row, whatever came before."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path
from typing import Any

import psutil
import trio

from supervisor.ledger.store import LEDGER_FILE, load

from .daemonproc import REPO, DaemonProc, raw_client, start_daemon, stop_daemon, wait_gone

# A harness child with a grandchild in its group and one in a session of its own.
SCRIPT = f"sleep 1000 & setsid sleep 1000 & exec {sys.executable} -m actors.fake.child"


def _kind(frame: dict[str, Any]) -> str:
    return str(frame["event"]["type"])


async def _open_sessions(daemon: DaemonProc, cwd: Path, count: int) -> list[int]:
    """Create ``count`` fake sessions; the pids of their harness children and grandchildren."""
    pids = []
    async with raw_client(daemon) as client:
        for _ in range(count):
            info = (await client.ok("session.create", harness="fake", cwd=str(cwd),
                                    options={"script": SCRIPT}))["session"]
            pids += [info["pid"], *(p.pid for p in psutil.Process(info["pid"]).children())]
    return pids


async def _corral_stop(state: Path) -> None:
    argv = [sys.executable, "-m", "actors.app", "stop", "--state-dir", str(state)]
    await trio.run_process(argv, cwd=str(REPO), capture_stdout=True)


async def test_after_corral_stop_the_ledger_is_empty_after_a_crash_and_restarts(tmp_path: Path) -> None:
    state = tmp_path / "state"
    crashed = await start_daemon(state)
    try:
        seen = await _open_sessions(crashed, tmp_path, 2)
    finally:
        crashed.process.kill()
        await crashed.process.wait()
    assert len(load(str(state / LEDGER_FILE))[0]) == 2  # what the next boot reconciles

    daemon = await start_daemon(state)
    try:
        seen += await _open_sessions(daemon, tmp_path, 3)
        async with raw_client(daemon) as client:
            for info in (await client.ok("session.list"))["sessions"]:
                sid, pid = info["id"], info["pid"]
                if not pid:
                    continue  # closed at boot: the crashed daemon's
                await client.ok("session.subscribe", session_id=sid)
                await client.events_until(sid, lambda f: _kind(f) == "init")
                os.kill(pid, signal.SIGKILL)
                await client.events_until(sid, lambda f: _kind(f) == "init")
                pid = (await client.ok("session.get", session_id=sid))["session"]["pid"]
                seen += [pid, *(p.pid for p in psutil.Process(pid).children())]
        with trio.fail_after(60):
            await _corral_stop(state)
            assert await daemon.process.wait() == 0
    finally:
        await stop_daemon(daemon)
    assert load(str(state / LEDGER_FILE)) == ([], None)
    assert wait_gone(seen) == []
