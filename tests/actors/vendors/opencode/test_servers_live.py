"""The shared-server actor with a real ``opencode serve`` (offline, against the fake model server).

Two sessions with one launch share one server (one pid, one ledger row of kind
``opencode-server``); a different launch gets its own; SIGKILL of the server ends both sessions'
children with the server's status, the supervisor starts the server again, and both sessions
resume their conversations on it by OpenCode session id; the last release stops the server.
"""

from __future__ import annotations

import os
import signal
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import psutil
import pytest
import trio

from actors.vendors.opencode import OpenCodeServers, ServerChild
from protocol.events import Init, Result
from supervisor.ledger.store import Ledger
from tests.fakes.model_script import say
from tests.fakes.model_server import FakeModels, Recorded
from tests.fakes.opencode_offline import INSTALL_HINT, opencode_binary, title_aside

from .live import LiveOpenCode, make_request

BINARY = opencode_binary()
pytestmark = [pytest.mark.vendor, pytest.mark.skipif(
    BINARY is None and not os.environ.get("CI"), reason=f"opencode is not installed ({INSTALL_HINT})")]

TIMEOUT = 150


def user_texts(request: Recorded) -> list[str]:
    return [m["content"] if isinstance(m["content"], str) else
            "".join(p.get("text", "") for p in m["content"] if p.get("type") == "text")
            for m in request.body["messages"] if m["role"] == "user"]


@asynccontextmanager
async def rig(tmp: Path, fake: FakeModels) -> AsyncIterator[tuple[OpenCodeServers, int, Ledger]]:
    if BINARY is None:
        pytest.fail(f"CI is set but opencode is not installed ({INSTALL_HINT})")
    ledger = Ledger(tmp / "state")
    servers = OpenCodeServers(ledger)
    async with trio.open_nursery() as nursery:
        port = await nursery.start(fake.serve)
        await nursery.start(servers.run)
        yield servers, port, ledger
        nursery.cancel_scope.cancel()


async def attach(nursery: trio.Nursery, servers: OpenCodeServers, tmp: Path, port: int,
                 **fields: Any) -> LiveOpenCode:
    assert BINARY is not None
    live = LiveOpenCode(servers, make_request(tmp, port, BINARY, **fields))
    await nursery.start(live.run)
    await live.wait_for(lambda e: isinstance(e, Init))
    return live


async def turn(live: LiveOpenCode, text: str) -> Result:
    start = len(live.events)
    await live.call("prompt", text)
    result = await live.wait_for(lambda e: isinstance(e, Result), start)
    assert isinstance(result, Result)
    return result


async def test_two_sessions_share_one_server_and_the_last_close_stops_it(tmp_path: Path) -> None:
    fake = FakeModels([say("One."), say("Two.")], aside=title_aside)
    with trio.fail_after(TIMEOUT):
        async with rig(tmp_path, fake) as (servers, port, ledger):
            async with trio.open_nursery() as nursery:
                first = await attach(nursery, servers, tmp_path, port, session_id="s-1")
                second = await attach(nursery, servers, tmp_path, port, session_id="s-2")
                (server,) = servers.servers()
                assert servers.leases(server) == 2
                assert first.child.pid == second.child.pid == server.pid
                assert [(r.kind, r.pid) for r in ledger.rows()] == [("opencode-server", server.pid)]
                assert first.translator.vendor_session_id != second.translator.vendor_session_id
                detection = await first.driver.detect()
                assert {"fake/fake-model", "fake/fake-other"} <= set(detection.features.models)
                assert (await turn(first, "one")).stop_reason == "end_turn"
                assert (await turn(second, "two")).stop_reason == "end_turn"
                pid = server.pid
                assert pid is not None
                nursery.cancel_scope.cancel()  # both sessions detach
            await servers.wait_until(lambda: not servers.servers())
            assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
            assert ledger.rows() == []


async def test_a_different_launch_gets_its_own_server(tmp_path: Path) -> None:
    fake = FakeModels(aside=title_aside)
    with trio.fail_after(TIMEOUT):
        async with rig(tmp_path, fake) as (servers, port, _):
            async with trio.open_nursery() as nursery:
                one = await attach(nursery, servers, tmp_path, port)
                two = await attach(nursery, servers, tmp_path, port,
                                   options={"extra_args": ["--print-logs"]})
                assert one.child.pid != two.child.pid and len(servers.servers()) == 2
                nursery.cancel_scope.cancel()


async def test_sigkill_of_the_server_ends_both_sessions_and_both_resume(tmp_path: Path) -> None:
    fake = FakeModels([say("Noted: apricot."), say("Noted: banana."), say("Apricot."),
                       say("Banana.")], aside=title_aside)
    with trio.fail_after(TIMEOUT):
        async with rig(tmp_path, fake) as (servers, port, ledger):
            async with trio.open_nursery() as nursery:
                lives = [await attach(nursery, servers, tmp_path, port, session_id=f"s-{n}")
                         for n in (1, 2)]
                for live, word in zip(lives, ("apricot", "banana")):
                    await turn(live, f"remember {word}")
                old = lives[0].child.pid
                children: list[ServerChild] = [live.child for live in lives]
                os.kill(old, signal.SIGKILL)
                for live in lives:
                    with trio.fail_after(30):
                        await _ended(live)
                statuses = [await child.close() for child in children]
                assert all(child.lost for child in children)
                assert all((s.reason, s.signal) == ("crashed", "SIGKILL") for s in statuses), statuses
                ids = [live.translator.vendor_session_id for live in lives]
                resumed = [await attach(nursery, servers, tmp_path, port, session_id=f"s-{n}",
                                        resume=sid) for n, sid in zip((1, 2), ids)]
                (server,) = servers.servers()  # the same actor, restarted by its supervisor
                assert server.pid != old and server.generation == 2
                assert [live.translator.vendor_session_id for live in resumed] == ids
                assert [r.pid for r in ledger.rows()] == [server.pid]
                for live, question in zip(resumed, ("first word?", "second word?")):
                    assert (await turn(live, question)).stop_reason == "end_turn"
                nursery.cancel_scope.cancel()
    later = fake.model_requests()[2:]
    assert [user_texts(r) for r in later] == [["remember apricot", "first word?"],
                                             ["remember banana", "second word?"]]


async def _ended(live: LiveOpenCode) -> None:
    try:
        await live.wait_for(lambda e: False)
    except EOFError:
        return
