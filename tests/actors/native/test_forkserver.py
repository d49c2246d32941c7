"""The native fork server with real processes: forked workers, its death and restart, the fallback.

Each test runs a ``ForkServer`` (the daemon side) in this process, which is made a child
subreaper as the daemon is, and spawns workers through ``open_child(spawner=server.spawn)`` as
the native driver does. Workers talk to the fake model server of the test.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import msgspec
import psutil
import pytest
import trio

from actors.native.daemon.forkclient import SOCKET_NAME, socket_address
from actors.native.daemon.forkservice import KIND, ForkServer
from protocol.events import Assistant, Init, Result
from protocol.framing import LengthPrefixFramer
from protocol.native import Prompt, ProviderSettings, Shutdown, Start, decode_event, encode_command
from supervisor.ledger import reconcile
from supervisor.ledger.store import LEDGER_FILE, Ledger, load, write
from supervisor.proc.child import ExitStatus, ProcessChild, ProcessSpec, open_child
from supervisor.proc.identity import read_marker, same_process, start_token
from tests.fakes.model_script import say
from tests.fakes.model_server import FakeModels
from tests.fakes.proctools import processes, subreaper, wait_cmdline, wait_dead, wait_no_descendants

from .test_worker_process import ROOT

pytestmark = pytest.mark.usefixtures("subreaper")
assert subreaper  # the fixture is used by name through pytestmark

TIMEOUT = 120
WORKER = [sys.executable, "-m", "actors.native"]


def worker_spec(key: str = "session:s:1") -> ProcessSpec:
    return ProcessSpec(key=key, kind="harness:native", argv=WORKER, cwd=str(ROOT),
                       framing="length_prefix", shutdown=5)


def start_frame(tmp: Path, port: int) -> bytes:
    provider = ProviderSettings(kind="openai", provider="openai", model="fake-model",
                                base_url=f"http://127.0.0.1:{port}/v1", api_key="sk-test")
    (tmp / "work").mkdir(exist_ok=True)
    start = Start(cwd=str(tmp / "work"), model="openai/fake-model", provider=provider,
                  store_dir=str(tmp / "store"))
    return LengthPrefixFramer().encode(encode_command(start))


async def send(child: ProcessChild, command: Prompt | Shutdown) -> None:
    await child.send(LengthPrefixFramer().encode(encode_command(command)))


async def next_event(child: ProcessChild) -> object:
    return decode_event(await child.receive_frame())


@asynccontextmanager
async def rig(tmp: Path, server: FakeModels) -> AsyncIterator[tuple[ForkServer, Ledger, int]]:
    """The fake model server and a supervised fork server on ``tmp/state``."""
    state = tmp / "state"
    state.mkdir(mode=0o700, exist_ok=True)
    ledger = Ledger(state)
    forks = ForkServer(state, ledger, cwd=str(ROOT))
    async with trio.open_nursery() as nursery:
        port = await nursery.start(server.serve)
        spec = forks.child_spec()
        await nursery.start(spec.start)
        yield forks, ledger, port
        nursery.cancel_scope.cancel()


def rows(ledger: Ledger) -> dict[str, dict[str, object]]:
    return {r["key"]: r for r in msgspec.json.decode(Path(ledger.path).read_bytes())["rows"]}


async def test_a_forked_worker_answers_a_start_and_a_prompt(tmp_path: Path) -> None:
    server = FakeModels([say("Hello from a fork.")])
    with trio.fail_after(TIMEOUT):
        async with rig(tmp_path, server) as (forks, ledger, port):
            async with open_child(worker_spec(), ledger=ledger, spawner=forks.spawn) as child:
                assert (forks.forks, forks.fallbacks) == (1, 0)
                template = forks.statistics().pid
                assert template is not None
                proc = psutil.Process(child.pid)
                # the daemon's child, in its own group, not the template's descendant
                assert proc.ppid() == os.getpid() and os.getpgid(child.pid) == child.pid
                assert child.pid not in {p.pid for p in psutil.Process(template).children(True)}
                row = rows(ledger)[child.ledger_key]
                assert (row["kind"], row["pid"], row["pgid"]) == ("harness:native", child.pid,
                                                                  child.pid)
                token = msgspec.convert(row["token"], type=type(start_token(child.pid)))
                assert same_process(token, start_token(child.pid))
                assert [r["kind"] for r in rows(ledger).values()].count(KIND) == 1
                # /proc shows the template's environment block: its marker names the server
                state_dir, key = read_marker(child.pid)
                assert state_dir == ledger.state_dir and key is not None
                assert key.startswith(KIND) and key != child.ledger_key

                await child.send(start_frame(tmp_path, port))
                init = await next_event(child)
                assert isinstance(init, Init) and init.model == "openai/fake-model"
                await send(child, Prompt(text="hello"))
                events = [await next_event(child)]
                while not isinstance(events[-1], Result):
                    events.append(await next_event(child))
                assert "".join(e.text for e in events if isinstance(e, Assistant)) == \
                    "Hello from a fork."
                assert "sk-test" in str(server.model_requests()[0].headers)
                await send(child, Shutdown())
                assert await child.wait() == ExitStatus(reason="exited", exit_code=0)
            assert child.ledger_key not in rows(ledger)
    assert await wait_no_descendants() == []


async def test_a_forked_workers_exit_status_and_death_are_the_daemons_to_see(
        tmp_path: Path) -> None:
    with trio.fail_after(TIMEOUT):
        async with rig(tmp_path, FakeModels()) as (forks, ledger, _):
            async with open_child(worker_spec(), ledger=ledger, spawner=forks.spawn) as child:
                os.kill(child.pid, signal.SIGKILL)
                assert await child.wait() == ExitStatus(reason="crashed", signal="SIGKILL")
            async with open_child(worker_spec("session:s:2"), ledger=ledger,
                                  spawner=forks.spawn) as child:
                await child.close_stdin()  # the end of stdin: the worker exits 0
                assert await child.wait() == ExitStatus(reason="exited", exit_code=0)
            assert forks.forks == 2
    assert await wait_no_descendants() == []


async def test_killing_the_fork_server_leaves_workers_running_and_it_is_restarted(
        tmp_path: Path) -> None:
    server = FakeModels([say("still here")])
    with trio.fail_after(TIMEOUT):
        async with rig(tmp_path, server) as (forks, ledger, port):
            async with open_child(worker_spec(), ledger=ledger, spawner=forks.spawn) as first:
                old = forks.statistics().pid
                assert old is not None
                os.kill(old, signal.SIGKILL)
                # it had served, so its supervisor starts it again without waiting for demand
                while forks.statistics().pid in (old, None):
                    await trio.sleep(0.01)
                async with open_child(worker_spec("session:s:2"), ledger=ledger,
                                      spawner=forks.spawn) as second:
                    new = forks.statistics().pid
                    assert new is not None and new != old
                    assert (forks.forks, forks.fallbacks) == (2, 0)
                    assert [r["pid"] for r in rows(ledger).values() if r["kind"] == KIND] == [new]
                    # the first worker outlived its template and still works
                    assert psutil.Process(first.pid).status() != psutil.STATUS_ZOMBIE
                    await first.send(start_frame(tmp_path, port))
                    assert isinstance(await next_event(first), Init)
                    await send(first, Prompt(text="are you there?"))
                    while not isinstance(await next_event(first), Result):
                        pass
                    assert psutil.Process(second.pid).ppid() == os.getpid()
    assert await wait_no_descendants() == []


def break_socket_path(state: Path) -> Path:
    """A directory where the socket should be: the template cannot bind, so it never serves."""
    state.mkdir(mode=0o700)
    assert socket_address(state) == str(state / SOCKET_NAME)
    (state / SOCKET_NAME).mkdir()
    return state / SOCKET_NAME


async def test_a_long_state_dir_gets_an_abstract_socket(tmp_path: Path) -> None:
    deep = tmp_path / ("d" * 60) / ("e" * 60)
    deep.mkdir(parents=True)
    assert socket_address(deep / "state").startswith("@corral-forkserver-")
    with trio.fail_after(TIMEOUT):
        async with rig(deep, FakeModels()) as (forks, ledger, _):
            async with open_child(worker_spec(), ledger=ledger, spawner=forks.spawn) as child:
                assert (forks.forks, forks.fallbacks) == (1, 0)
                assert psutil.Process(child.pid).ppid() == os.getpid()
    assert await wait_no_descendants() == []


async def test_a_broken_fork_server_falls_back_to_a_plain_exec(tmp_path: Path) -> None:
    break_socket_path(tmp_path / "state")
    with trio.fail_after(TIMEOUT):
        async with rig(tmp_path, FakeModels()) as (forks, ledger, port):
            async with open_child(worker_spec(), ledger=ledger, spawner=forks.spawn) as child:
                assert (forks.forks, forks.fallbacks) == (0, 1)
                assert (await wait_cmdline(child.pid, ["-m", "actors.native"]))[1:] == ["-m", "actors.native"]
                await child.send(start_frame(tmp_path, port))
                assert isinstance(await next_event(child), Init)
            assert forks.statistics().state in ("idle", "down")
    assert await wait_no_descendants() == []


async def test_a_supervised_fork_server_is_restarted_lazily_after_a_failed_start(
        tmp_path: Path) -> None:
    state = tmp_path / "state"
    broken = break_socket_path(state)
    ledger = Ledger(state)
    forks = ForkServer(state, ledger, cwd=str(ROOT))
    with trio.fail_after(TIMEOUT):
        async with trio.open_nursery() as nursery:
            spec = forks.child_spec()
            handle = await nursery.start(spec.start)
            assert forks.statistics().state == "idle"
            async with open_child(worker_spec(), ledger=ledger, spawner=forks.spawn):
                pass
            assert forks.fallbacks == 1
            broken.rmdir()  # repaired: the next spawn gets a fork
            while forks.statistics().state != "idle":
                await trio.sleep(0.01)
            async with open_child(worker_spec("session:s:2"), ledger=ledger,
                                  spawner=forks.spawn):
                assert (forks.forks, forks.fallbacks) == (1, 1)
            assert handle is not None
            nursery.cancel_scope.cancel()
    assert await wait_no_descendants() == []


@pytest.mark.parametrize("found_by", ["ledger", "marker"])
async def test_reconcile_kills_a_forked_worker_that_outlived_its_daemon(
        tmp_path: Path, found_by: str) -> None:
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    with trio.fail_after(TIMEOUT):
        stand_in = await trio.lowlevel.open_process(
            [sys.executable, "-m", "tests.fakes.fork_daemon", str(state)], cwd=str(ROOT),
            stdout=subprocess.PIPE)
        try:
            assert stand_in.stdout is not None
            line = b""
            while not line.endswith(b"\n"):
                chunk = await stand_in.stdout.receive_some()
                assert chunk, "the stand-in daemon ended early"
                line += chunk
            started = json.loads(line)
            assert started["forks"] == 1
        finally:
            stand_in.kill()
            await stand_in.wait()
        holder = psutil.Process(started["holder"])
        try:
            worker = psutil.Process(started["worker"])
            assert await wait_dead(processes([started["server"]])) == []  # its parent-death signal
            assert worker.is_running() and worker.status() != psutil.STATUS_ZOMBIE
            # /proc shows the template's environment: the marker names the fork server's row
            marker_dir, marker_key = read_marker(worker.pid)
            assert marker_dir == os.path.realpath(state) and marker_key.startswith(KIND)
            ledger = state / LEDGER_FILE
            rows, _ = load(str(ledger))
            assert sorted(r.kind for r in rows) == ["harness:native", KIND]
            if found_by == "marker":  # as if the daemon died before it wrote the worker's row
                write(str(ledger), [r for r in rows if r.pid != worker.pid])
            report = await trio.to_thread.run_sync(reconcile, state)
            killed = {k.pid: k for k in report.killed}
            assert killed[worker.pid].role == ("leader" if found_by == "ledger" else "marker")
            assert await wait_dead([worker]) == []
            assert load(str(ledger)) == ([], None)
        finally:
            holder.kill()
    assert await wait_no_descendants() == []


async def test_a_fork_server_that_does_not_answer_is_killed_and_the_spawn_execs(
        tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    ledger = Ledger(state)
    forks = ForkServer(state, ledger, cwd=str(ROOT), answer_timeout=1.0)
    with trio.fail_after(TIMEOUT):
        async with trio.open_nursery() as nursery:
            await nursery.start(forks.child_spec().start)
            async with open_child(worker_spec(), ledger=ledger, spawner=forks.spawn):
                stuck = forks.statistics().pid
                assert stuck is not None
            os.kill(stuck, signal.SIGSTOP)  # it accepts connections, and answers none
            async with open_child(worker_spec("session:s:2"), ledger=ledger,
                                  spawner=forks.spawn) as child:
                assert (forks.forks, forks.fallbacks) == (1, 1)
                assert (await wait_cmdline(child.pid, ["-m", "actors.native"]))[1:] == ["-m", "actors.native"]
                assert await wait_dead(processes([stuck])) == []  # killed, then restarted
                while forks.statistics().pid in (stuck, None):
                    await trio.sleep(0.01)
            nursery.cancel_scope.cancel()
    assert await wait_no_descendants() == []


def test_the_template_waits_for_threads_left_behind_then_counts_what_stays() -> None:
    # A warm-up turn that timed out on a loaded machine can leave a worker thread that ends by
    # itself shortly after: the template waits for it instead of refusing to serve. In a fresh
    # interpreter of its own, as the template is (this one has threads of its own).
    script = (
        "import threading, time\n"
        "from actors.native.forkserver.server import _threads_left\n"
        "release = threading.Event()\n"
        "threading.Thread(target=release.wait).start()\n"
        "print(_threads_left(time.monotonic() + 0.05))\n"  # still there at the deadline
        "threading.Timer(0.05, release.set).start()\n"
        "print(_threads_left(time.monotonic() + 30))\n"  # ended, and was waited for
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=60, check=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.stdout.split() == ["2", "1"]
