"""A session's proxy: who gets one, what its allowlist holds, what a child request learns, and
what the session hears (a refusal; a proxy that keeps crashing)."""

from __future__ import annotations

from pathlib import Path

import pytest
import trio

from actors.harness import HarnessRequest
from actors.sandboxing.config import SandboxConfig
from actors.sandboxing.netproxy import SessionProxy, allowlist_for
from actors.sandboxing.settings import resolve
from protocol.errors import BadRequest
from protocol.events import Error, Event, SandboxEvent
from protocol.sandbox import SandboxInfo


def _request(tmp_path: Path, net: str = "model", effective: str = "bwrap", **kw: object) -> HarnessRequest:
    (tmp_path / "harness").mkdir(exist_ok=True)
    sandbox = SandboxInfo(mode="auto", effective=effective, net=net,  # type: ignore[arg-type]
                          allow_hosts=["pypi.org", "files.example:8443"])
    return HarnessRequest(session_id="s-1", cwd=str(tmp_path), work_dir=str(tmp_path / "harness"),
                          sandbox=sandbox, **kw)  # type: ignore[arg-type]


async def _nothing(event: Event) -> None:
    pass


def test_only_a_sandboxed_net_model_session_gets_a_proxy(tmp_path: Path) -> None:
    assert SessionProxy.for_session(_request(tmp_path, net="on"), "claude", None, _nothing) is None
    assert SessionProxy.for_session(_request(tmp_path, net="off"), "claude", None, _nothing) is None
    unconfined = HarnessRequest(session_id="s-1", cwd=str(tmp_path), work_dir=str(tmp_path / "h"))
    assert SessionProxy.for_session(unconfined, "claude", None, _nothing) is None
    proxy = SessionProxy.for_session(_request(tmp_path), "claude", None, _nothing)
    assert proxy is not None and proxy.server.socket_path == tmp_path / "proxy" / "proxy.sock"
    assert proxy.server.tcp_port is None  # bubblewrap: it serves the session's namespace instead
    landlock = SessionProxy.for_session(_request(tmp_path, effective="landlock"), "claude", None, _nothing)
    assert landlock is not None and landlock.server.tcp_port == 0  # bound when it starts


def test_the_allowlist_is_the_model_hosts_and_allow_hosts(tmp_path: Path) -> None:
    request = _request(tmp_path, env={"ANTHROPIC_BASE_URL": "http://127.0.0.1:9999"})
    allow = allowlist_for(request, "claude", None)
    assert str(allow) == "127.0.0.1:9999, pypi.org, files.example:8443"
    assert not allow.allows("api.anthropic.com", 443)


async def test_a_child_request_names_the_socket_and_under_landlock_the_port(tmp_path: Path) -> None:
    proxy = SessionProxy.for_session(_request(tmp_path, effective="landlock"), "fake", None, _nothing)
    assert proxy is not None
    async with trio.open_nursery() as nursery:
        await nursery.start(proxy.supervise)
        assert str(proxy.server.allowlist) == "pypi.org, files.example:8443"  # fake: no model hosts
        attached = proxy.attach(_request(tmp_path, effective="landlock"))
        assert attached.proxy_socket == str(tmp_path / "proxy" / "proxy.sock")
        assert attached.proxy_port == proxy.server.tcp_port and attached.proxy_port
        nursery.cancel_scope.cancel()


async def test_under_bubblewrap_a_child_request_joins_the_namespace_the_proxy_serves(tmp_path: Path) -> None:
    """The namespace is made before the harness and held while the proxy runs: each spawn's
    ``proxy_join`` enters it, where ``127.0.0.1:3128`` is the proxy's own listener."""
    from supervisor.sandbox import BRIDGE_PORT

    proxy = SessionProxy.for_session(_request(tmp_path), "fake", None, _nothing)
    assert proxy is not None
    async with trio.open_nursery() as nursery:
        await nursery.start(proxy.supervise)
        assert proxy.net is not None and proxy.server.inside is proxy.net.listener
        assert proxy.net.listener.getsockname() == ("127.0.0.1", BRIDGE_PORT)
        attached = proxy.attach(_request(tmp_path))
        assert attached.proxy_join == proxy.net.join() and attached.proxy_join[0].endswith("nsenter")
        nursery.cancel_scope.cancel()
    assert proxy.net is None  # closed with the proxy
    landlock = SessionProxy.for_session(_request(tmp_path, effective="landlock"), "fake", None, _nothing)
    assert landlock is not None and landlock.attach(_request(tmp_path, effective="landlock")).proxy_join == []


async def test_a_refusal_is_announced_as_a_sandbox_event(tmp_path: Path) -> None:
    heard: list[Event] = []

    async def announce(event: Event) -> None:
        heard.append(event)

    proxy = SessionProxy.for_session(_request(tmp_path), "fake", None, announce)
    assert proxy is not None
    async with trio.open_nursery() as nursery:
        await nursery.start(proxy.supervise)
        with trio.fail_after(10):
            for _ in range(3):  # retried: the repeats wait for the window's count (refusals)
                async with await trio.open_unix_socket(str(tmp_path / "proxy" / "proxy.sock")) as client:
                    await client.send_all(b"CONNECT evil.example:443 HTTP/1.1\r\n\r\n")
                    assert (await client.receive_some(100)).startswith(b"HTTP/1.1 403 ")
                    while await client.receive_some(100):
                        pass
            assert proxy.server.statistics().denied == 3
        nursery.cancel_scope.cancel()
    assert heard == [SandboxEvent(kind="network", host="evil.example", port=443, decision="denied", count=1)]


async def test_a_proxy_that_cannot_listen_is_an_error_event_not_a_failed_session(tmp_path: Path) -> None:
    heard: list[Event] = []

    async def announce(event: Event) -> None:
        heard.append(event)

    proxy = SessionProxy.for_session(_request(tmp_path), "fake", None, announce)
    assert proxy is not None
    (tmp_path / "proxy" / "proxy.sock" / "in-the-way").mkdir(parents=True)  # every bind fails
    async with trio.open_nursery() as nursery:
        assert await nursery.start(proxy.supervise) is None  # started (the session goes on), and ended
    (error,) = heard
    assert isinstance(error, Error) and (error.code, error.error_class) == ("sandbox.proxy_failed", "network")
    assert "cannot listen: Is a directory" in error.message


def test_allow_hosts_are_checked_at_create_by_the_proxys_own_parser() -> None:
    good = resolve({"sandbox": {"mode": "bwrap", "allow_hosts": ["[::1]:443", "PyPI.org"]}}, SandboxConfig())
    assert good is not None and good.allow_hosts == ["[::1]:443", "PyPI.org"]
    for bad in ("a b", "host:0", "[::1", "user@host", "a:b:c"):
        with pytest.raises(BadRequest, match="allow_hosts"):
            resolve({"sandbox": {"mode": "bwrap", "allow_hosts": [bad]}}, SandboxConfig())
    with pytest.raises(BadRequest, match="allow_hosts"):  # the config's too
        resolve({"sandbox": {"mode": "bwrap"}}, SandboxConfig(allow_hosts=["bad host"]))
