"""Native workers forked by the daemon's fork server, through real daemons.

A native session's worker is forked from the fork server (its command line is the template's),
yet it is the daemon's child in a group of its own, and ``daemon.status`` lists the server under
a kind of its own. After a daemon SIGKILL nothing of it is left once the next daemon has booted.
(That the reconcile kills a forked worker that outlived its daemon is tested with a stand-in
daemon in ``tests/actors/native/test_forkserver.py``.)
"""

from __future__ import annotations

import os
from pathlib import Path

import psutil
import trio

from supervisor.ledger.store import LEDGER_FILE, load
from supervisor.proc.identity import read_marker
from tests.fakes.model_script import say
from tests.fakes.model_server import FakeModels

from .daemonproc import raw_client, start_daemon, stop_daemon, wait_gone
from .test_native_e2e import TIMEOUT, create_params
from .vendor_rig import cmdline, marked_gone

SERVER = "native-forkserver"


def children(status: dict[str, object], kind: str) -> list[int]:
    return [c["pid"] for c in status["children"] if c["kind"] == kind]  # type: ignore[attr-defined,index]


async def test_a_native_worker_is_forked_listed_and_gone_after_close(tmp_path: Path) -> None:
    server = FakeModels([say("forked and fine")])
    state = tmp_path / "state"
    with trio.fail_after(TIMEOUT):
        async with trio.open_nursery() as nursery:
            port = await nursery.start(server.serve)
            daemon = await start_daemon(state)
            try:
                async with raw_client(daemon) as client:
                    status = await client.ok("daemon.status")
                    assert children(status, SERVER) == []  # nothing until a native session
                    params = create_params(tmp_path, "openai", port)
                    sid = (await client.ok("session.create", **params))["session"]["id"]
                    await client.ok("session.subscribe", session_id=sid)
                    await client.events_until(sid, lambda f: f["event"]["type"] == "init")
                    pid = (await client.ok("session.get", session_id=sid))["session"]["pid"]
                    status = await client.ok("daemon.status")
                    (template,) = children(status, SERVER)
                    assert children(status, "harness:native") == [pid]
                    assert "actors.native.forkserver" in cmdline(pid)  # forked, not exec'd
                    worker = psutil.Process(pid)
                    assert worker.ppid() == daemon.process.pid and os.getpgid(pid) == pid
                    assert read_marker(pid)[0] == os.path.realpath(state)
                    await client.ok("session.prompt", session_id=sid, text="hi")
                    frames = await client.events_until(
                        sid, lambda f: f["event"]["type"] == "result")
                    said = "".join(f["event"]["text"] for f in frames
                                   if f["event"]["type"] == "assistant")
                    assert said == "forked and fine"
                    await client.ok("session.close", session_id=sid)
                    await client.events_until(sid, lambda f: f["event"]["type"] == "exit")
                    assert wait_gone([pid]) == []
                    status = await client.ok("daemon.status")
                    assert children(status, SERVER) == [template]  # permanent
                    assert children(status, "harness:native") == []
            finally:
                assert await stop_daemon(daemon) == 0
            nursery.cancel_scope.cancel()
    assert marked_gone(state) == []
    assert load(str(state / LEDGER_FILE)) == ([], None)


async def test_after_a_daemon_sigkill_the_next_daemon_leaves_no_worker(tmp_path: Path) -> None:
    server = FakeModels()
    state = tmp_path / "state"
    with trio.fail_after(TIMEOUT):
        async with trio.open_nursery() as nursery:
            port = await nursery.start(server.serve)
            crashed = await start_daemon(state)
            try:
                async with raw_client(crashed) as client:
                    pids = []
                    for _ in range(2):
                        params = create_params(tmp_path, "openai", port)
                        sid = (await client.ok("session.create", **params))["session"]["id"]
                        await client.ok("session.subscribe", session_id=sid)
                        await client.events_until(sid, lambda f: f["event"]["type"] == "init")
                        pids.append((await client.ok("session.get", session_id=sid))["session"]["pid"])
                    pids += children(await client.ok("daemon.status"), SERVER)
            finally:
                crashed.process.kill()
                await crashed.process.wait()
            assert len(load(str(state / LEDGER_FILE))[0]) == 3  # two workers and the server
            daemon = await start_daemon(state)
            try:
                assert wait_gone(pids) == []
                async with raw_client(daemon) as client:
                    status = await client.ok("daemon.status")
                    assert status["children"] == []  # reconciled; no native session yet
            finally:
                assert await stop_daemon(daemon) == 0
            nursery.cancel_scope.cancel()
    assert marked_gone(state) == []
    assert load(str(state / LEDGER_FILE)) == ([], None)
