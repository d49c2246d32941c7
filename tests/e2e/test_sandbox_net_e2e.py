"""The sandbox's network with real vendor CLIs under real bubblewrap, offline.

Claude Code and Codex run sandboxed with ``net = "model"`` (bubblewrap: the session's network
namespace, joined by each spawn, where the session's proxy listens on ``127.0.0.1:3128``; Claude under
Landlock too: the proxy's own loopback port, the one its TCP rules allow) against the fake
model servers of this test process on 127.0.0.1. Each completes a tool turn, so every model
request went through the proxy (nothing else leads out of the namespace); the tool command then
tries another local port, through the proxy (refused: ``403``, logged as a ``sandbox`` event)
and directly (refused by the empty namespace, and the port saw no connection at all).

The native agent's worker keeps its own network (it calls its model), under bubblewrap as under
Landlock; its ``bash`` commands get the session's proxy through Landlock's TCP rules: an
``allow_hosts`` server answers through it, another port is refused (``403``, logged) and a direct
connection meets ``EACCES``.

Skipped when a CLI is not installed, unless ``CI`` is set (then it fails), and without a
bubblewrap that can make a sandbox here.
"""

from __future__ import annotations

import os
import textwrap
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import trio

from supervisor.sandbox import landlock
from supervisor.sandbox.available import bwrap_problem
from tests.fakes.anthropic_server import FakeAnthropic, bash, text
from tests.fakes.claude_offline import INSTALL_HINT as CLAUDE_HINT
from tests.fakes.claude_offline import OFFLINE_ENV, claude_binary
from tests.fakes.codex_offline import INSTALL_HINT as CODEX_HINT
from tests.fakes.codex_offline import KEY_ENV, codex_binary, offline_args, offline_env
from tests.fakes.model_script import call, say
from tests.fakes.model_server import FakeModels
from tests.fakes.openai_server import Exec, FakeOpenAI, Text

from .test_native_e2e import create_params as native_params
from .vendor_rig import Frame, daemon_session, is_kind, of

pytestmark = [pytest.mark.vendor, pytest.mark.skipif(
    bwrap_problem() is not None and not os.environ.get("CI"), reason=f"no bubblewrap: {bwrap_problem()}")]

TIMEOUT = 90
SANDBOX = {"mode": "bwrap", "net": "model"}


class Other:
    """A TCP server on 127.0.0.1 that counts connections (and answers ``answer``, if any)."""

    def __init__(self, answer: bytes = b"") -> None:
        self.port = 0
        self.connections = 0
        self.answer = answer

    async def serve(self, *, task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED) -> None:
        listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
        self.port = listeners[0].socket.getsockname()[1]
        task_status.started(self.port)
        await trio.serve_listeners(self._one, listeners)

    async def _one(self, stream: trio.SocketStream) -> None:
        self.connections += 1
        async with stream:
            if self.answer:
                await stream.receive_some(65536)
                await stream.send_all(self.answer)


def probe(port: int) -> str:
    """A shell command that tries ``port`` through the proxy variables (urllib honours them) and
    directly, and prints what each attempt met."""
    script = textwrap.dedent(f"""
        import socket, urllib.request
        try:
            urllib.request.urlopen("http://127.0.0.1:{port}/", timeout=10)
            print("proxied: reached")
        except Exception as exc:
            print("proxied:", getattr(exc, "code", exc))
        try:
            socket.create_connection(("127.0.0.1", {port}), timeout=5).close()
            print("direct: reached")
        except OSError as exc:
            print("direct:", exc.errno)
    """).strip()
    return f"python3 -c '{script}'"


def _said_by_tool(events: list[Frame]) -> str:
    (done,) = [t for t in of(events, "tool") if t["phase"] == "completed"]
    return str(done["output"])


@asynccontextmanager
async def _servers(model: Any) -> AsyncIterator[tuple[int, Other]]:
    other = Other()
    async with trio.open_nursery() as nursery:
        port = await nursery.start(model.serve)
        await nursery.start(other.serve)
        yield port, other
        nursery.cancel_scope.cancel()


_DIRECT = {"bwrap": "direct: 111", "landlock": "direct: 13"}
"""What a direct connection meets: nothing listens in bubblewrap's empty namespace
(``ECONNREFUSED``); Landlock's TCP rules refuse any port but the proxy's (``EACCES``)."""


def _check_refusal(events: list[Frame], output: str, other: Other, info: Frame, mode: str = "bwrap",
                   direct: str | None = None) -> None:
    assert "proxied: 403" in output and (direct or _DIRECT[mode]) in output, output
    assert of(events, "sandbox") == [
        {"type": "sandbox", "kind": "network", "host": "127.0.0.1", "port": other.port, "decision": "denied",
         "count": 1}]
    assert other.connections == 0
    assert info["sandbox"]["effective"] == mode and info["sandbox"]["net"] == "model"
    (result,) = of(events, "result")
    assert (result["stop_reason"], result["is_error"]) == ("end_turn", False)


@pytest.mark.parametrize("mode", ["bwrap", "landlock"])
async def test_claude_code_reaches_only_its_model(tmp_path: Path, mode: str) -> None:
    """Under Landlock (no namespace) the proxy listens on a loopback port of its own, the one
    port the rules let Claude connect to; the proxy variables point straight at it."""
    binary = claude_binary()
    if binary is None:
        pytest.skip(f"Claude Code is not installed ({CLAUDE_HINT})") if not os.environ.get("CI") else \
            pytest.fail(f"CI is set but Claude Code is not installed ({CLAUDE_HINT})")
    for name in ("work", "home/.claude"):  # Claude's home exists (Landlock grants only what is there)
        (tmp_path / name).mkdir(parents=True)
    server = FakeAnthropic([])
    with trio.fail_after(TIMEOUT):
        async with _servers(server) as (port, other):
            server.add(bash(probe(other.port)), text("Probed."))
            params = {
                "harness": "claude", "cwd": str(tmp_path / "work"),
                "options": {"binary": binary, "home": str(tmp_path / "home" / ".claude"),
                            "sandbox": {**SANDBOX, "mode": mode}},
                "env": {**OFFLINE_ENV, "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{port}",
                        "ANTHROPIC_API_KEY": "test-key", "HOME": str(tmp_path / "home")},
                "permissions": {"mode": "ask", "allow_tools": ["Bash"]}}
            async with daemon_session(tmp_path / "state", params, timeout=TIMEOUT,
                                      ready=is_kind("status", state="idle")) as rig:
                events = await rig.turn("probe the other port")
                _check_refusal(events, _said_by_tool(events), other, await rig.info(), mode)


async def test_codex_reaches_only_its_model(tmp_path: Path) -> None:
    binary = codex_binary()
    if binary is None:
        pytest.skip(f"codex is not installed ({CODEX_HINT})") if not os.environ.get("CI") else \
            pytest.fail(f"CI is set but codex is not installed ({CODEX_HINT})")
    for name in ("work", "home", "codex_home"):
        (tmp_path / name).mkdir()
    server = FakeOpenAI([])
    with trio.fail_after(TIMEOUT):
        async with _servers(server) as (port, other):
            server.add(Exec(cmd=probe(other.port), call_id="call_probe"), Text(text="Probed."))
            params = {
                "harness": "codex", "cwd": str(tmp_path / "work"), "model": "gpt-5.5",
                "options": {"binary": binary, "home": str(tmp_path / "codex_home"),
                            "extra_args": offline_args(port), "sandbox": SANDBOX},
                "env": {KEY_ENV: "test-key", "HOME": str(tmp_path / "home"),
                        **offline_env(tmp_path / "codex_home")},
                "permissions": {"mode": "auto"}}
            async with daemon_session(tmp_path / "state", params, timeout=TIMEOUT,
                                      ready=is_kind("init")) as rig:
                events = await rig.turn("probe the other port")
                _check_refusal(events, _said_by_tool(events), other, await rig.info())


@pytest.mark.parametrize("mode", ["bwrap", "landlock"])
async def test_native_bash_reaches_only_allow_hosts_through_the_proxy(tmp_path: Path, mode: str) -> None:
    """The worker (under bubblewrap: exec'd inside it, sharing the host's network) calls its model
    itself; its bash commands reach the proxy's loopback port alone (Landlock's TCP rules)."""
    if landlock.abi() < 4:
        pytest.skip("needs Landlock with TCP rules (ABI 4)")
    allowed = Other(answer=b"HTTP/1.0 200 OK\r\nContent-Length: 7\r\n\r\nREACHED")
    models = FakeModels([])
    with trio.fail_after(TIMEOUT):
        async with _servers(models) as (port, other), trio.open_nursery() as nursery:
            await nursery.start(allowed.serve)
            fetch = (f"python3 -c \"import urllib.request as u; "
                     f"print(u.urlopen('http://127.0.0.1:{allowed.port}/', timeout=10).read().decode())\"")
            models.add(call("bash", command=fetch), say("fetched"), call("bash", command=probe(other.port)),
                       say("probed"))
            params = native_params(tmp_path, "openai", port)
            params["options"] = {**params["options"], "sandbox": {
                "mode": mode, "net": "model", "allow_hosts": [f"127.0.0.1:{allowed.port}"]}}
            async with daemon_session(tmp_path / "state", params, timeout=TIMEOUT, ready=is_kind("init")) as rig:
                fetched = await rig.turn("fetch")
                assert _said_by_tool(fetched).startswith("REACHED\n") and allowed.connections == 1
                assert of(fetched, "sandbox") == []
                events = await rig.turn("probe the other port")
                _check_refusal(events, _said_by_tool(events), other, await rig.info(), mode,
                               direct=_DIRECT["landlock"])
            nursery.cancel_scope.cancel()
