"""The OpenCode bridge (``actors.vendors.opencode.bridge``) with a real ``opencode serve``,
offline: the child an OpenCode session runs on a cluster node, here opened by a stand-in for a
placement backend's ``open`` that runs it on this machine (``open_child``), so the bridge is a
real process with the session's pipes, as the node agent runs it.

The same scripted turn through the shared server and through the bridge gives the same events;
the end of stdin stops the bridge and its server (exit 0); SIGKILL of the server ends the bridge
as the server ended (``crashed``, ``SIGKILL``), as a shared server's death ends its sessions'
children; the opener is asked for the OpenCode binary too (``needs``).
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import msgspec
import psutil
import pytest
import trio

from actors.vendors.opencode import OpenCodeServers
from actors.vendors.opencode.driver import BRIDGE
from protocol.events import Event, Init, Result
from supervisor.proc.child import ProcessChild, open_child
from supervisor.proc.spec import ProcessSpec
from tests.fakes.model_script import call, say
from tests.fakes.model_server import FakeModels
from tests.fakes.opencode_offline import INSTALL_HINT, opencode_binary, title_aside

from .live import LiveOpenCode, make_request

BINARY = opencode_binary()
pytestmark = [pytest.mark.vendor, pytest.mark.skipif(
    BINARY is None and not os.environ.get("CI"), reason=f"opencode is not installed ({INSTALL_HINT})")]

TIMEOUT = 150


class LocalOpener:
    """A placement backend's ``open`` on this machine: what it opened, and the ``needs`` asked."""

    def __init__(self) -> None:
        self.children: list[ProcessChild] = []
        self.specs: list[ProcessSpec] = []
        self.needs: list[list[str]] = []

    @asynccontextmanager
    async def __call__(self, spec: ProcessSpec, ledger: Any, *,
                       needs: Sequence[str] = ()) -> AsyncIterator[ProcessChild]:
        self.specs.append(spec)
        self.needs.append(list(needs))
        async with open_child(spec, ledger=ledger) as child:
            self.children.append(child)
            yield child


def _shape(events: list[Event]) -> list[tuple[Any, ...]]:
    """What a client sees of a turn, without what differs run to run (ids, times, pids) or by
    timing (how many deltas were joined): each event's type, text joined over a run of
    ``assistant`` events, a tool's name, phase and output, a result's stop reason."""
    shape: list[tuple[Any, ...]] = []
    for event in map(msgspec.to_builtins, events):
        kind = event["type"]
        if kind == "assistant" and shape and shape[-1][0] == "assistant":
            shape[-1] = ("assistant", shape[-1][1] + event["text"])
        elif kind == "assistant":
            shape.append(("assistant", event["text"]))
        elif kind == "tool":
            shape.append(("tool", event["name"], event["phase"], event.get("output")))
        elif kind == "result":
            shape.append(("result", event["stop_reason"], event["is_error"]))
        else:
            shape.append((kind, event.get("state")))
    return shape


async def _session(tmp: Path, opener: LocalOpener | None) -> tuple[list[Event], LiveOpenCode]:
    """One bash turn, through the bridge when ``opener`` is given; its events and the session."""
    assert BINARY is not None
    tmp.mkdir()
    fake = FakeModels([call("bash", command="printf made > made.txt && echo created",
                            description="make it"), say("Created it.")], aside=title_aside)
    servers = OpenCodeServers(None)
    async with trio.open_nursery() as nursery:
        port = await nursery.start(fake.serve)
        await nursery.start(servers.run)
        live = LiveOpenCode(servers, make_request(tmp, port, BINARY), opener=opener)
        await nursery.start(live.run)
        await live.wait_for(lambda e: isinstance(e, Init))
        await live.call("prompt", "create made.txt")
        await live.wait_for(lambda e: isinstance(e, Result))
        assert (tmp / "work" / "made.txt").read_text() == "made"
        events = list(live.events)
        nursery.cancel_scope.cancel()
    return events, live


async def test_the_bridge_gives_the_events_of_a_shared_server(tmp_path: Path) -> None:
    if BINARY is None:
        pytest.fail(f"CI is set but opencode is not installed ({INSTALL_HINT})")
    opener = LocalOpener()
    with trio.fail_after(TIMEOUT):
        shared, _ = await _session(tmp_path / "shared", None)
        bridged, _ = await _session(tmp_path / "bridged", opener)
    assert _shape(bridged) == _shape(shared)
    assert ("assistant", "Created it.") in _shape(bridged)
    assert ("tool", "bash", "completed", "created\n") in _shape(bridged)
    (spec,) = opener.specs
    assert spec.argv[1:4] == ["-m", BRIDGE, "--"] and spec.argv[4] == BINARY and spec.framing == "length_prefix"
    assert opener.needs == [[BINARY]]
    (child,) = opener.children
    assert child.status is not None and child.status.ok, child.status  # stdin closed: exit 0


def _server_of(bridge: int) -> psutil.Process:
    (server,) = [p for p in psutil.Process(bridge).children() if "serve" in p.cmdline()]
    return server


@asynccontextmanager
async def _bridged(tmp_path: Path, fake: FakeModels) -> AsyncIterator[tuple[LiveOpenCode, Any, psutil.Process]]:
    """A session through the bridge, its thread open: the attachment, the bridge child and the
    ``opencode serve`` under it; everything is cancelled on the way out."""
    if BINARY is None:
        pytest.fail(f"CI is set but opencode is not installed ({INSTALL_HINT})")
    opener = LocalOpener()
    async with trio.open_nursery() as nursery:
        port = await nursery.start(fake.serve)
        servers = OpenCodeServers(None)
        await nursery.start(servers.run)
        live = LiveOpenCode(servers, make_request(tmp_path, port, BINARY), opener=opener)
        await nursery.start(live.run)
        await live.wait_for(lambda e: isinstance(e, Init))
        (child,) = opener.children
        yield live, child, _server_of(child.pid)
        nursery.cancel_scope.cancel()


async def test_a_killed_server_ends_the_bridge_as_it_ended(tmp_path: Path) -> None:
    with trio.fail_after(TIMEOUT):
        async with _bridged(tmp_path, FakeModels([say("One.")], aside=title_aside)) as (live, child, server):
            server.kill()
            status = await child.wait()
            assert (status.reason, status.signal) == ("crashed", "SIGKILL"), (status, "\n".join(child.stderr_tail()))
            with trio.fail_after(10):
                await live.wait_ended()
    assert not psutil.pid_exists(server.pid) or server.status() == psutil.STATUS_ZOMBIE


async def test_the_end_of_stdin_stops_the_server(tmp_path: Path) -> None:
    with trio.fail_after(TIMEOUT):
        async with _bridged(tmp_path, FakeModels([], aside=title_aside)) as (live, child, server):
            status = await child.close()
    assert status.ok, status
    assert psutil.wait_procs([server], timeout=10)[1] == []
