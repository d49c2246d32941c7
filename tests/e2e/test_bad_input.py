"""Bad input gets a typed error; the connection survives where it can, the daemon always does."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import trio
from trio_websocket import ConnectionClosed, ConnectionRejected, open_websocket, open_websocket_url

from .daemonproc import DaemonProc, raw_client


@pytest.mark.parametrize(
    ("frame", "code", "request_id"),
    [
        ("not json", "bad_request", None),
        ('{"id": 3}', "bad_request", 3),
        ('{"type": "session.get", "session_id": "x"}', "bad_request", None),
        ('{"type": "session.get", "id": 4, "session_id": 12}', "bad_request", 4),
        ('{"type": "no.such.method", "id": 5}', "unknown_method", 5),
        ('{"type": "session.get", "id": 6, "session_id": "s-nope"}', "unknown_session", 6),
        ('{"type": "session.prompt", "id": 7, "session_id": "s-nope", "text": "x"}', "unknown_session", 7),
        ('{"type": "session.unsubscribe", "id": 9, "session_id": "s-nope"}', "unknown_session", 9),
        ('{"type": "session.subscribe", "id": 10, "session_id": "s-nope"}', "unknown_session", 10),
        ('{"type": "session.create", "id": 8, "harness": "nope", "cwd": "/"}', "harness_unavailable", 8),
    ],
)
async def test_malformed_requests_get_typed_errors_and_the_connection_stays(
        daemon: DaemonProc, frame: str, code: str, request_id: int | None) -> None:
    async with raw_client(daemon) as client:
        await client.send_raw(frame)
        error = await client.next_pushed()
        assert error == {"type": "error", "id": request_id, "code": code,
                         "message": error["message"], **({"data": error["data"]} if "data" in error else {})}
        assert error["message"]
        status = await client.ok("daemon.status")
        assert status["clients"] >= 1


async def test_permission_errors(daemon: DaemonProc, tmp_path: Path) -> None:
    async with raw_client(daemon) as a, raw_client(daemon) as b:
        sid = (await a.ok("session.create", harness="fake", cwd=str(tmp_path)))["session"]["id"]
        await a.ok("session.subscribe", session_id=sid)
        unknown = await a.call("session.permission", session_id=sid, permission_id="p9", decision="allow")
        assert unknown["code"] == "unknown_permission"
        await a.ok("session.prompt", session_id=sid, text="/ask echo hi")
        await a.events_until(sid, lambda f: f["event"]["type"] == "permission")
        await b.ok("session.permission", session_id=sid, permission_id="p1", decision="deny")
        late = await a.call("session.permission", session_id=sid, permission_id="p1", decision="allow")
        assert late["code"] == "already_decided"
        frames = await a.events_until(sid, lambda f: f["event"]["type"] == "result")
        decided = [f["event"] for f in frames if f["event"]["type"] == "permission_decided"]
        assert decided == [{"type": "permission_decided", "permission_id": "p1", "decision": "deny",
                            "by": decided[0]["by"], "by_name": "e2e"}]
        assert decided[0]["by"].startswith("c-")


async def test_wrong_token_and_bad_first_frames_are_refused(daemon: DaemonProc) -> None:
    for first, code in ((json.dumps({"type": "hello", "protocol": 1, "token": "wrong"}), "unauthorized"),
                        (json.dumps({"type": "hello", "protocol": 1}), "unauthorized"),
                        (json.dumps({"type": "hello", "protocol": 1, "token": None}), "unauthorized"),
                        (json.dumps({"type": "hello", "protocol": 1, "token": 7}), "unauthorized"),
                        (json.dumps({"type": "hello", "protocol": 1, "token": ["x"]}), "unauthorized"),
                        (json.dumps({"type": "hello", "token": daemon.token, "protocol": "1"}), "bad_handshake"),
                        (json.dumps({"type": "welcome", "protocol": 1}), "bad_handshake"),
                        (json.dumps({"type": "daemon.status", "id": 1}), "bad_handshake"),
                        (json.dumps({"type": "hello", "protocol": 99, "token": daemon.token}),
                         "unsupported_protocol")):
        async with open_websocket_url(daemon.url) as ws:
            await ws.send_message(first)
            reply = json.loads(await ws.get_message())
            assert reply == {"type": "error", "id": None, "code": code, "message": reply["message"]}
            with pytest.raises(ConnectionClosed):
                with trio.fail_after(10):
                    await ws.get_message()


@pytest.mark.parametrize(
    "headers",
    [
        [(b"Origin", b"http://evil.example")],
        [(b"Origin", b"http://127.0.0.1:1")],
    ],
)
async def test_foreign_origins_are_refused_before_the_upgrade(daemon: DaemonProc, headers: list[tuple[bytes, bytes]]) -> None:
    with pytest.raises(ConnectionRejected) as info:
        async with open_websocket("127.0.0.1", daemon.port, "/v1", use_ssl=False, extra_headers=headers):
            pass
    assert info.value.status_code == 403


async def test_the_daemons_own_origin_is_allowed(daemon: DaemonProc) -> None:
    headers = [(b"Origin", f"http://localhost:{daemon.port}".encode())]
    async with open_websocket("127.0.0.1", daemon.port, "/v1", use_ssl=False, extra_headers=headers) as ws:
        await ws.send_message(json.dumps({"type": "hello", "protocol": 1, "token": daemon.token}))
        assert json.loads(await ws.get_message())["type"] == "welcome"


async def test_a_non_loopback_host_is_refused(daemon: DaemonProc) -> None:
    stream = await trio.open_tcp_stream("127.0.0.1", daemon.port)
    async with stream:
        await stream.send_all(
            b"GET /v1 HTTP/1.1\r\nHost: attacker.example:80\r\nUpgrade: websocket\r\n"
            b"Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
            b"Sec-WebSocket-Version: 13\r\n\r\n")
        with trio.fail_after(10):
            reply = await stream.receive_some(4096)
    assert reply.startswith(b"HTTP/1.1 403")


async def test_an_oversized_frame_closes_with_1009_and_others_carry_on(tmp_path: Path) -> None:
    from .daemonproc import start_daemon, stop_daemon

    config = tmp_path / "c.toml"
    config.write_text("[daemon]\nframe_limit = 4096\n")
    daemon = await start_daemon(tmp_path / "state", config=str(config))
    try:
        async with raw_client(daemon) as bystander:
            async with raw_client(daemon) as client:
                await client.send_raw(json.dumps({"type": "session.list", "id": 1, "pad": "x" * 10_000}))
                error = await client.next_pushed()
                assert error["type"] == "error" and error["code"] == "frame_too_large"
                with pytest.raises(trio.EndOfChannel):
                    await client.next_pushed(timeout=10)
                assert client.ws.closed is not None
                assert client.ws.closed.code == 1009
                assert client.ws.closed.reason == "frame_too_large"
            assert (await bystander.ok("daemon.status"))["pid"] == daemon.info["pid"]
    finally:
        assert await stop_daemon(daemon) == 0


async def test_twenty_clients_hammering_prompts_lose_nothing(daemon: DaemonProc, tmp_path: Path) -> None:
    async with raw_client(daemon) as watcher:
        sid = (await watcher.ok("session.create", harness="fake", cwd=str(tmp_path),
                                options={"steer": False}))["session"]["id"]
        await watcher.ok("session.subscribe", session_id=sid)
        sent: list[str] = []

        async def hammer(n: int) -> None:
            async with raw_client(daemon, unix=n % 2 == 0) as client:
                for k in range(5):
                    text = f"c{n}-{k}"
                    reply = await client.ok("session.prompt", session_id=sid, text=text)
                    assert reply["delivery"] in ("prompted", "held")
                    sent.append(text)

        async with trio.open_nursery() as nursery:
            for n in range(20):
                nursery.start_soon(hammer, n)
        users: list[str] = []
        results = 0
        with trio.fail_after(120):
            while results < 100:
                frame = await watcher.next_pushed()
                if frame.get("session_id") != sid:
                    continue
                if frame["event"]["type"] == "user":
                    users.append(frame["event"]["text"])
                elif frame["event"]["type"] == "result":
                    results += 1
        assert sorted(users) == sorted(sent)
        assert len(users) == 100
        for n in range(20):
            mine = [u for u in users if u.startswith(f"c{n}-")]
            assert mine == [f"c{n}-{k}" for k in range(5)]


_DEEP = "[" * 1000 + "]" * 1000


@pytest.mark.parametrize(
    ("frame", "request_id"),
    [
        ('{"type": "session.get", "id": 11, "session_id": %s}' % _DEEP, 11),
        ('{"type": "session.create", "id": 12, "harness": "fake", "cwd": "/", "options": {"a": %s}}'
         % _DEEP, 12),
        ('{"type": "daemon.status", "id": 13, "extra": %s}' % _DEEP, None),
        ('{"type": %s, "id": 14}' % _DEEP, None),
        ('{"id": %s}' % _DEEP, None),
        (_DEEP, None),
    ],
    ids=["field", "options", "unknown-field", "type", "id", "bare"],
)
async def test_a_deeply_nested_request_is_bad_request_and_the_connection_stays(
        daemon: DaemonProc, frame: str, request_id: int | None) -> None:
    async with raw_client(daemon) as client:
        await client.send_raw(frame)
        error = await client.next_pushed()
        assert (error["type"], error["code"]) == ("error", "bad_request"), error
        assert error["id"] in (request_id, None)
        assert (await client.ok("daemon.status"))["pid"] == daemon.info["pid"]


async def test_a_deeply_nested_hello_is_refused_and_others_carry_on(daemon: DaemonProc) -> None:
    async with raw_client(daemon) as bystander:
        for hello in ('{"type": "hello", "protocol": 1, "token": "wrong", "extra": %s}' % _DEEP,
                      '{"type": "hello", "protocol": 1, "token": "wrong", "client": {"name": %s}}' % _DEEP,
                      '{"type": "hello", "protocol": 1, "token": %s}' % _DEEP):
            async with open_websocket_url(daemon.url) as ws:
                await ws.send_message(hello)
                reply = json.loads(await ws.get_message())
                assert reply["type"] == "error" and reply["id"] is None
                assert reply["code"] in ("bad_handshake", "unauthorized")
                with pytest.raises(ConnectionClosed):
                    with trio.fail_after(10):
                        await ws.get_message()
        assert (await bystander.ok("daemon.status"))["pid"] == daemon.info["pid"]
    async with raw_client(daemon) as fresh:
        assert (await fresh.ok("daemon.status"))["clients"] >= 1


@pytest.mark.parametrize(
    "frame",
    [b'{"type": "daemon.status", "id": 21}', b"\xff\xfe\x00garbage", b"\x00"],
    ids=["json", "invalid-utf8", "nul"],
)
async def test_a_binary_frame_is_bad_request_and_the_connection_stays(daemon: DaemonProc, frame: bytes) -> None:
    async with raw_client(daemon) as client:
        await client.send_raw(frame)
        error = await client.next_pushed()
        assert (error["type"], error["code"]) == ("error", "bad_request"), error
        assert (await client.ok("daemon.status"))["pid"] == daemon.info["pid"]


async def test_a_text_frame_that_is_not_utf8_fails_that_connection_with_1007(daemon: DaemonProc) -> None:
    from trio_websocket import wrap_client_stream

    from .test_fuzz_frames import masked_frame

    async with raw_client(daemon) as bystander:
        async with trio.open_nursery() as nursery:
            stream = await trio.open_tcp_stream("127.0.0.1", daemon.port)
            ws = await wrap_client_stream(nursery, stream, "127.0.0.1", "/v1")
            await ws.send_message(json.dumps({"type": "hello", "protocol": 1, "token": daemon.token}))
            assert json.loads(await ws.get_message())["type"] == "welcome"
            await stream.send_all(masked_frame(0x1, b'{"type": "daemon.status", "id": 1, "x": "\xff"}'))
            with pytest.raises(ConnectionClosed) as closed:
                with trio.fail_after(10):
                    await ws.get_message()
            assert closed.value.reason.code == 1007  # RFC 6455 §8.1: fail the connection, say why
            nursery.cancel_scope.cancel()
        assert (await bystander.ok("daemon.status"))["pid"] == daemon.info["pid"]
