"""Sessions on a Ray cluster, end to end: a real daemon with ``[placement] backend = "ray"`` on
the shared loopback cluster (``tests.raycluster``), its gateway and node agents, real children.

A fake session's child runs on a node (its process carries that node's marker), answers a
prompt through the agent, and sessions spread over both nodes; the SIGKILL of a node agent ends
its sessions' children with ``exit {reason: lost}`` and restarts them (on a live node) within
two seconds, with no child of the dead agent left alive.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import psutil
import pytest
import trio

from tests.raycluster import RayCluster

from .daemonproc import (
    DaemonProc,
    RawClient,
    raw_client,
    start_daemon,
    stop_daemon,
    wait_gone,
)

pytestmark = pytest.mark.slow

NODE_ENV = "CORRAL_NODE_ID"


def _kind(frame: dict[str, Any]) -> str:
    return str(frame["event"]["type"])


@pytest.fixture
async def ray_daemon(ray_cluster: RayCluster, tmp_path: Path) -> AsyncIterator[DaemonProc]:
    config = tmp_path / "corral.toml"
    config.write_text(f'[placement]\nbackend = "ray"\naddress = "{ray_cluster.address}"\n'
                      'heartbeat_timeout = 3.0\n')
    proc = await start_daemon(tmp_path / "state", config=str(config), timeout=180)
    try:
        yield proc
    finally:
        await stop_daemon(proc, timeout=60)


async def _session(client: RawClient, cwd: Path) -> dict[str, Any]:
    session: dict[str, Any] = (await client.ok("session.create", harness="fake", cwd=str(cwd)))["session"]
    await client.ok("session.subscribe", session_id=session["id"])
    await client.events_until(session["id"], lambda f: _kind(f) == "init", timeout=60)
    got: dict[str, Any] = (await client.ok("session.get", session_id=session["id"]))["session"]
    return got


def _node_of(pid: int) -> str | None:
    try:
        return psutil.Process(pid).environ().get(NODE_ENV)
    except psutil.Error:
        return None


async def _on_a_node(client: RawClient, ready: Callable[[dict[str, Any]], bool], create_timeout: float,
                     ready_timeout: float, **params: Any) -> tuple[str, dict[str, Any]]:
    """Create a session, follow it until ``ready``, and check its child runs on the Ray node its
    ``placement`` names; its id and ``session.get``'s session."""
    created = await client.call("session.create", timeout=create_timeout, **params)
    assert created["type"] == "ok", created
    sid: str = created["result"]["session"]["id"]
    await client.ok("session.subscribe", session_id=sid)
    await client.events_until(sid, ready, timeout=ready_timeout)
    session: dict[str, Any] = (await client.ok("session.get", session_id=sid))["session"]
    assert session["placement"]["backend"] == "ray"
    assert _node_of(session["pid"]) == session["placement"]["node_id"]
    return sid, session


async def test_a_fake_session_runs_on_a_node_and_sessions_spread(ray_daemon: DaemonProc, tmp_path: Path) -> None:
    async with raw_client(ray_daemon) as client:
        first = await _session(client, tmp_path)
        placement = first["placement"]
        assert placement["backend"] == "ray" and placement["epoch"] == 1
        assert _node_of(first["pid"]) == placement["node_id"]  # the child is the agent's, not ours
        assert first["pid"] not in {p.pid for p in ray_daemon.descendants()}
        children = (await client.ok("daemon.status"))["children"]
        assert {"key": f"session:{first['id']}:1", "kind": "harness:fake", "pid": first["pid"],
                "node_id": placement["node_id"]} in children
        await client.ok("session.prompt", session_id=first["id"], text="hello node")
        turn = await client.events_until(first["id"], lambda f: _kind(f) == "result", timeout=60)
        assert "".join(f["event"]["text"] for f in turn if _kind(f) == "assistant") == "echo: hello node"

        second = await _session(client, tmp_path)
        assert second["placement"]["node_id"] != placement["node_id"]
        status = await client.ok("placement.status")
        hosting = {n["node_id"]: n["sessions"] for n in status["nodes"] if n["sessions"]}
        assert hosting == {placement["node_id"]: 1, second["placement"]["node_id"]: 1}
        assert status["backend"] == "ray"

        for session in (first, second):
            await client.ok("session.close", session_id=session["id"])
        assert wait_gone([first["pid"], second["pid"]]) == []


async def test_sigkill_of_a_node_agent_is_lost_and_restarted(ray_daemon: DaemonProc, tmp_path: Path) -> None:
    async with raw_client(ray_daemon) as client:
        session = await _session(client, tmp_path)
        sid, child = session["id"], session["pid"]
        status = await client.ok("placement.status")
        (agent,) = [n["agent_pid"] for n in status["nodes"]
                    if n["node_id"] == session["placement"]["node_id"]]
        killed_at = time.monotonic()
        os.kill(agent, signal.SIGKILL)
        frames = await client.events_until(sid, lambda f: _kind(f) == "restarted", timeout=30)
        restarted_after = time.monotonic() - killed_at
        exit_event = next(f["event"] for f in frames if _kind(f) == "exit")
        assert exit_event["reason"] == "lost"
        assert exit_event["exit_code"] is None and exit_event["signal"] is None
        assert restarted_after < 2.0, f"restarted {restarted_after:.2f} s after the agent's death"
        assert wait_gone([child], timeout=5) == []
        await client.events_until(sid, lambda f: _kind(f) == "init", timeout=60)
        again = (await client.ok("session.get", session_id=sid))["session"]
        assert again["placement"]["epoch"] == 2 and again["pid"] != child
        await client.ok("session.prompt", session_id=sid, text="still here")
        turn = await client.events_until(sid, lambda f: _kind(f) == "result", timeout=60)
        assert "".join(f["event"]["text"] for f in turn if _kind(f) == "assistant") == "echo: still here"
        await client.ok("session.close", session_id=sid)


async def test_sigkill_of_a_raylet_restarts_the_session_on_the_other_node(
        ray_daemon: DaemonProc, ray_cluster: RayCluster, tmp_path: Path) -> None:
    async with raw_client(ray_daemon) as client:
        session = await _session(client, tmp_path)
        sid, child, node_id = session["id"], session["pid"], session["placement"]["node_id"]
        (node,) = [n for n in ray_cluster.workers if n.node_id == node_id]
        status = await client.ok("placement.status")
        (agent,) = [n["agent_pid"] for n in status["nodes"] if n["node_id"] == node_id]
        killed_at = time.monotonic()
        node.kill_raylet()  # SIGKILL; the agent and its child live on, unaware
        try:
            frames = await client.events_until(sid, lambda f: _kind(f) == "restarted", timeout=30)
            restarted_at = time.monotonic()
            assert restarted_at - killed_at < 10.0
            assert next(f["event"] for f in frames if _kind(f) == "exit")["reason"] == "lost"
            # The fence: the old agent hears no heartbeat, kills its child and exits.
            assert wait_gone([child, agent], timeout=3.0 + 2.0) == [], \
                f"old epoch alive {time.monotonic() - restarted_at:.1f} s after restarted"
            await client.events_until(sid, lambda f: _kind(f) == "init", timeout=60)
            again = (await client.ok("session.get", session_id=sid))["session"]
            assert again["placement"]["node_id"] != node_id and again["placement"]["epoch"] == 2
            await client.ok("session.prompt", session_id=sid, text="moved")
            turn = await client.events_until(sid, lambda f: _kind(f) == "result", timeout=60)
            assert "".join(f["event"]["text"] for f in turn if _kind(f) == "assistant") == "echo: moved"
            await client.ok("session.close", session_id=sid)
        finally:  # the shared cluster gets a second live node back
            ray_cluster.cluster.remove_node(node, allow_graceful=False)
            ray_cluster.workers.remove(node)
            joined = ray_cluster.add_node()
        # A node that joins gets an agent of its own.
        with trio.fail_after(60):
            while True:
                nodes = (await client.ok("placement.status"))["nodes"]
                if any(n["node_id"] == joined.node_id and n["agent_pid"] for n in nodes):
                    break
                await trio.sleep(0.2)


def _marked_alive() -> list[int]:
    """Every process of this machine carrying a node agent's marker (a remote child)."""
    found = []
    for proc in psutil.process_iter():
        try:
            if NODE_ENV in proc.environ() and proc.status() != psutil.STATUS_ZOMBIE:
                found.append(proc.pid)
        except psutil.Error:
            pass
    return found


async def _start(tmp_path: Path, ray_cluster: RayCluster, heartbeat: float) -> DaemonProc:
    config = tmp_path / f"corral-{heartbeat}.toml"
    config.write_text(f'[placement]\nbackend = "ray"\naddress = "{ray_cluster.address}"\n'
                      f'heartbeat_timeout = {heartbeat}\n')
    return await start_daemon(tmp_path / "state", config=str(config), timeout=180)


async def test_stop_leaves_nothing_on_any_node(ray_cluster: RayCluster, tmp_path: Path) -> None:
    daemon = await _start(tmp_path, ray_cluster, 30.0)
    try:
        async with raw_client(daemon) as client:
            sessions = [await _session(client, tmp_path) for _ in range(3)]
            status = await client.ok("placement.status")
            agents = [n["agent_pid"] for n in status["nodes"] if n["agent_pid"]]
            assert len(agents) == 2
            gateway = [p.pid for p in daemon.descendants()
                       if "supervisor.placement.ray.gateway" in " ".join(p.cmdline())]
            assert len(gateway) == 1
    finally:
        assert await stop_daemon(daemon, timeout=60) == 0
    assert wait_gone([s["pid"] for s in sessions] + agents + gateway, timeout=10) == []
    assert _marked_alive() == []


async def test_a_restarted_daemon_reconciles_the_children_of_the_one_killed(
        ray_cluster: RayCluster, tmp_path: Path) -> None:
    # A heartbeat timeout longer than the restart, so the agents are still there to be asked.
    first = await _start(tmp_path, ray_cluster, 60.0)
    try:
        async with raw_client(first) as client:
            session = await _session(client, tmp_path)
            agents = {n["node_id"]: n["agent_pid"] for n in (await client.ok("placement.status"))["nodes"]}
        first.process.send_signal(signal.SIGKILL)
        await first.process.wait()
        assert psutil.pid_exists(session["pid"])  # fenced only after 60 s: still running
        assert (tmp_path / "state" / "placement-ledger.json").read_text() != "[]"
    finally:
        await stop_daemon(first)
    second = await _start(tmp_path, ray_cluster, 60.0)
    try:
        assert wait_gone([session["pid"]], timeout=10) == []
        async with raw_client(second) as client:
            with trio.fail_after(60):  # no node is listed until the gateway joined the cluster
                while not (nodes := (await client.ok("placement.status"))["nodes"]):
                    await trio.sleep(0.1)
            now = {n["node_id"]: n["agent_pid"] for n in nodes}
            assert {k: v for k, v in now.items() if v} == {k: v for k, v in agents.items() if v}
            closed = (await client.ok("session.get", session_id=session["id"]))["session"]
            assert closed["state"] in ("closed", "failed")
        assert (tmp_path / "state" / "placement-ledger.json").read_text() == "[]"
    finally:
        assert await stop_daemon(second, timeout=60) == 0
    assert _marked_alive() == []


async def test_a_native_session_runs_on_a_node(ray_daemon: DaemonProc, tmp_path: Path) -> None:
    pytest.importorskip("google.adk.runners")
    from tests.fakes.model_script import call, say
    from tests.fakes.model_server import FakeModels

    server = FakeModels([call("write", path="hello.txt", content="hello\n"), say("Wrote it.")])
    work = tmp_path / "work"
    work.mkdir()
    async with trio.open_nursery() as nursery:
        port = await nursery.start(server.serve)
        async with raw_client(ray_daemon) as client:
            sid, session = await _on_a_node(
                client, lambda f: _kind(f) == "init", 60, 60, harness="native", cwd=str(work),
                model="openai/fake-model", options={"base_url": f"http://127.0.0.1:{port}/v1"},
                env={"OPENAI_API_KEY": "sk-native-ray-0123456789"}, permissions={"mode": "auto"})
            await client.ok("session.prompt", session_id=sid, text="write hello.txt")
            turn = await client.events_until(sid, lambda f: _kind(f) == "result", timeout=90)
            said = "".join(f["event"]["text"] for f in turn if _kind(f) == "assistant")
            assert said == "Wrote it.", "; ".join(str(f["event"]) for f in turn if _kind(f) in ("error", "result", "tool"))
            assert (work / "hello.txt").read_text() == "hello\n"
            await client.ok("session.close", session_id=sid)
            assert wait_gone([session["pid"]]) == []
        nursery.cancel_scope.cancel()


@pytest.mark.vendor
async def test_a_claude_session_runs_on_a_node(ray_daemon: DaemonProc, tmp_path: Path) -> None:
    from tests.fakes.anthropic_server import FakeAnthropic, text
    from tests.fakes.claude_offline import OFFLINE_ENV, claude_binary

    binary = claude_binary()
    if binary is None:
        if os.environ.get("CI"):
            pytest.fail("Claude Code is not installed, and CI must run this test")
        pytest.skip("Claude Code is not installed")
    server = FakeAnthropic([text("Hello from a node.")])
    for name in ("work", "home"):
        (tmp_path / name).mkdir()
    async with trio.open_nursery() as nursery:
        port = await nursery.start(server.serve)
        async with raw_client(ray_daemon) as client:
            sid, session = await _on_a_node(
                client, lambda f: _kind(f) == "status" and f["event"]["state"] == "idle", 60, 90,
                harness="claude", cwd=str(tmp_path / "work"),
                options={"binary": binary, "home": str(tmp_path / "home" / ".claude")},
                env={**OFFLINE_ENV, "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{port}",
                     "ANTHROPIC_API_KEY": "test-key", "HOME": str(tmp_path / "home")},
                permissions={"mode": "auto"})
            await client.ok("session.prompt", session_id=sid, text="hello")
            turn = await client.events_until(sid, lambda f: _kind(f) == "result", timeout=90)
            assert "".join(f["event"]["text"] for f in turn if _kind(f) == "assistant") == "Hello from a node."
            await client.ok("session.close", session_id=sid)
            assert wait_gone([session["pid"]]) == []
        nursery.cancel_scope.cancel()


@pytest.mark.vendor
async def test_an_opencode_session_runs_on_a_node_and_resumes_after_its_server_dies(
        ray_daemon: DaemonProc, tmp_path: Path) -> None:
    """On a node an OpenCode session's child is the bridge (its own ``opencode serve`` behind
    stdin and stdout): the same events as on a shared server of the daemon's, and a server killed
    on the node ends the child as ``exit crashed SIGKILL``; the session restarts and resumes its
    conversation, as it does locally (``tests/e2e/test_opencode_e2e.py``)."""
    from actors.vendors.opencode.driver import BRIDGE
    from tests.fakes.model_script import call, say
    from tests.fakes.model_server import FakeModels
    from tests.fakes.opencode_offline import (
        INSTALL_HINT,
        MODEL,
        offline_env,
        opencode_binary,
        provider_config,
        title_aside,
    )

    binary = opencode_binary()
    if binary is None:
        if os.environ.get("CI"):
            pytest.fail(f"opencode is not installed ({INSTALL_HINT}), and CI must run this test")
        pytest.skip(f"opencode is not installed ({INSTALL_HINT})")
    fake = FakeModels([call("bash", command="printf made > made.txt && echo created", description="make it"),
                       say("Created it."), say("Made it.")], aside=title_aside)
    work = tmp_path / "work"
    work.mkdir()
    async with trio.open_nursery() as nursery:
        port = await nursery.start(fake.serve)
        async with raw_client(ray_daemon) as client:
            sid, session = await _on_a_node(
                client, lambda f: _kind(f) == "init", 90, 120, harness="opencode", cwd=str(work), model=MODEL,
                options={"binary": binary, "config": provider_config(port)}, env=offline_env(tmp_path),
                permissions={"mode": "auto"})
            assert BRIDGE in " ".join(psutil.Process(session["pid"]).cmdline())
            assert not [c for c in (await client.ok("daemon.status"))["children"]
                        if c["kind"] == "opencode-server"]  # no shared server of the daemon's

            await client.ok("session.prompt", session_id=sid, text="create made.txt")
            turn = [f["event"] for f in await client.events_until(sid, lambda f: _kind(f) == "result", timeout=120)]
            assert (work / "made.txt").read_text() == "made"
            tools = [e for e in turn if e["type"] == "tool"]
            assert (tools[0]["name"], tools[0]["kind"], tools[0]["phase"]) == ("bash", "exec", "started")
            assert (tools[-1]["phase"], tools[-1]["output"]) == ("completed", "created\n")
            assert "".join(e["text"] for e in turn if e["type"] == "assistant") == "Created it."
            assert [e["stop_reason"] for e in turn if e["type"] == "result"] == ["end_turn"]

            (server,) = [p for p in psutil.Process(session["pid"]).children() if "serve" in p.cmdline()]
            assert _node_of(server.pid) == session["placement"]["node_id"]
            server.kill()
            frames = await client.events_until(sid, lambda f: _kind(f) == "init", timeout=120)
            (exit_event,) = [f["event"] for f in frames if _kind(f) == "exit"]
            assert (exit_event["reason"], exit_event["signal"]) == ("crashed", "SIGKILL")
            assert [f for f in frames if _kind(f) == "restarted"]
            assert wait_gone([session["pid"], server.pid]) == []
            again = (await client.ok("session.get", session_id=sid))["session"]
            assert again["placement"]["epoch"] == 2 and again["pid"] != session["pid"]

            await client.ok("session.prompt", session_id=sid, text="what did you make?")
            turn = [f["event"] for f in await client.events_until(sid, lambda f: _kind(f) == "result", timeout=120)]
            assert "".join(e["text"] for e in turn if e["type"] == "assistant") == "Made it."
            last = fake.model_requests()[-1].body["messages"]
            users = [m["content"] if isinstance(m["content"], str) else
                     "".join(p.get("text", "") for p in m["content"] if p.get("type") == "text")
                     for m in last if m["role"] == "user"]
            assert users == ["create made.txt", "what did you make?"]  # resumed, not a new conversation
            await client.ok("session.close", session_id=sid)
            assert wait_gone([again["pid"]]) == []
        nursery.cancel_scope.cancel()


def _gateways(daemon: DaemonProc) -> list[int]:
    return [p.pid for p in daemon.descendants()
            if "supervisor.placement.ray.gateway" in " ".join(p.cmdline())]


async def test_sigkill_of_the_gateway_restarts_it_and_its_sessions(ray_daemon: DaemonProc, tmp_path: Path) -> None:
    """The gateway is a permanent child of the daemon: killed, its sessions' children end as
    ``lost``, the daemon starts a new gateway, the sessions restart on it, the old children are
    gone and every agent of the old gateway is either the new one's or gone (none orphaned)."""
    async with raw_client(ray_daemon) as client:
        session = await _session(client, tmp_path)
        sid, child = session["id"], session["pid"]
        before = {n["node_id"]: n["agent_pid"] for n in (await client.ok("placement.status"))["nodes"]
                  if n["agent_pid"]}
        (gateway,) = _gateways(ray_daemon)
        os.kill(gateway, signal.SIGKILL)
        frames = await client.events_until(sid, lambda f: _kind(f) == "init", timeout=120)
        exit_event = next(f["event"] for f in frames if _kind(f) == "exit")
        assert (exit_event["reason"], exit_event["exit_code"], exit_event["signal"]) == ("lost", None, None)
        assert [f for f in frames if _kind(f) == "restarted"]
        assert wait_gone([child, gateway], timeout=5) == []
        assert len(_gateways(ray_daemon)) == 1 and _gateways(ray_daemon) != [gateway]
        again = (await client.ok("session.get", session_id=sid))["session"]
        assert again["placement"]["epoch"] == 2 and again["pid"] != child
        after = {n["node_id"]: n["agent_pid"] for n in (await client.ok("placement.status"))["nodes"]
                 if n["agent_pid"]}
        assert set(after) == set(before)
        orphans = [pid for node, pid in before.items() if after[node] != pid]
        assert wait_gone(orphans, timeout=3.0 + 2.0) == []  # the heartbeat timeout fences them
        await client.ok("session.prompt", session_id=sid, text="after the gateway")
        turn = await client.events_until(sid, lambda f: _kind(f) == "result", timeout=60)
        assert "".join(f["event"]["text"] for f in turn if _kind(f) == "assistant") == "echo: after the gateway"
        await client.ok("session.close", session_id=sid)
        assert wait_gone([again["pid"]]) == []
