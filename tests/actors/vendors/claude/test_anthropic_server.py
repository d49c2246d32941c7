"""The fake Anthropic server, checked with a plain h11 client over loopback (no CLI needed)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import h11
import msgspec
import pytest
import trio

from tests.fakes.anthropic_server import (
    ErrorReply,
    FakeAnthropic,
    Reply,
    Text,
    Thinking,
    ToolUse,
    load_script,
    running,
    text,
)


async def call(port: int, method: str, target: str, body: Any = None,
               headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
    """One request on a fresh connection; returns status, headers and the whole body."""
    payload = json.dumps(body).encode() if body is not None else b""
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    conn = h11.Connection(h11.CLIENT)
    hdrs = [("host", "127.0.0.1"), ("content-length", str(len(payload))), ("x-api-key", "sk-secret"),
            *(headers or {}).items()]
    await stream.send_all(conn.send(h11.Request(method=method, target=target, headers=hdrs)))
    await stream.send_all(conn.send(h11.Data(data=payload)) + conn.send(h11.EndOfMessage()))
    status, got, data = 0, {}, bytearray()
    while True:
        event = conn.next_event()
        if event is h11.NEED_DATA:
            conn.receive_data(await stream.receive_some(65536))
        elif isinstance(event, h11.Response):
            status, got = event.status_code, {k.decode(): v.decode() for k, v in event.headers}
        elif isinstance(event, h11.Data):
            data += event.data
        elif isinstance(event, h11.EndOfMessage | h11.ConnectionClosed):
            break
    await stream.aclose()
    return status, got, bytes(data)


def sse(data: bytes) -> list[tuple[str, dict[str, Any]]]:
    """Parse a server-sent-event body into (event name, data)."""
    events = []
    for chunk in data.decode().split("\n\n"):
        if chunk.strip():
            name_line, data_line = chunk.split("\n")
            events.append((name_line.removeprefix("event: "), json.loads(data_line.removeprefix("data: "))))
    return events


def _text(body: bytes) -> str:
    return "".join(d["delta"].get("text", "") for n, d in sse(body) if n == "content_block_delta")


MESSAGES = {"model": "claude-x", "stream": True, "messages": [{"role": "user", "content": "hi"}]}


async def test_head_probe_token_count_and_unknown_routes() -> None:
    async with running() as server:
        with trio.fail_after(10):
            assert (await call(server.port, "HEAD", "/"))[0] == 200
            status, _, body = await call(server.port, "POST", "/v1/messages/count_tokens", MESSAGES)
            assert status == 200 and json.loads(body)["input_tokens"] > 0
            status, _, body = await call(server.port, "GET", "/v1/models")
    assert status == 404 and json.loads(body)["error"]["type"] == "not_found_error"


async def test_a_streamed_reply_follows_the_api_event_order() -> None:
    reply = Reply(blocks=[Thinking(text="ponder", chunk=4), Text(text="Hello!", chunk=4),
                          ToolUse(name="Bash", input={"command": "ls"}, id="toolu_1", chunk=5)],
                  input_tokens=11, output_tokens=22, cache_read_tokens=3, cache_write_tokens=4)
    async with running(reply) as server:
        with trio.fail_after(10):
            status, headers, body = await call(server.port, "POST", "/v1/messages?beta=true", MESSAGES)
    assert status == 200 and headers["content-type"] == "text/event-stream"
    events = sse(body)
    names = [name for name, _ in events]
    assert names[:2] == ["message_start", "ping"] and names[-2:] == ["message_delta", "message_stop"]
    assert all(name == data["type"] for name, data in events)
    start = events[0][1]["message"]
    assert (start["role"], start["model"], start["content"], start["usage"]["input_tokens"]) == (
        "assistant", "claude-x", [], 11)
    blocks = [d["content_block"]["type"] for n, d in events if n == "content_block_start"]
    assert blocks == ["thinking", "text", "tool_use"]
    deltas = [d["delta"] for n, d in events if n == "content_block_delta"]
    assert "".join(d.get("thinking", "") for d in deltas) == "ponder"
    assert {"type": "signature_delta", "signature": "c2lnbmF0dXJl"} in deltas
    assert "".join(d.get("text", "") for d in deltas) == "Hello!"
    assert json.loads("".join(d.get("partial_json", "") for d in deltas)) == {"command": "ls"}
    final = events[-2][1]
    assert final["delta"]["stop_reason"] == "tool_use"
    assert (final["usage"]["output_tokens"], final["usage"]["cache_read_input_tokens"],
            final["usage"]["cache_creation_input_tokens"]) == (22, 3, 4)


async def test_replies_are_served_in_order_then_the_default() -> None:
    async with running(ErrorReply(status=429), text("second"), default=text("fallback")) as server:
        with trio.fail_after(10):
            status, headers, body = await call(server.port, "POST", "/v1/messages", MESSAGES)
            assert status == 429 and headers["x-should-retry"] == "false"
            assert json.loads(body) == {"type": "error", "request_id": "req_fake_error",
                                        "error": {"type": "rate_limit_error", "message": "fake rate_limit_error"}}
            texts = []
            for _ in range(2):
                _, _, body = await call(server.port, "POST", "/v1/messages", MESSAGES)
                texts.append(_text(body))
    assert texts == ["second", "fallback"]


async def test_a_request_without_stream_gets_one_json_message() -> None:
    async with running(text("plain", stop_reason="max_tokens")) as server:
        with trio.fail_after(10):
            _, _, body = await call(server.port, "POST", "/v1/messages", {**MESSAGES, "stream": False})
    message = json.loads(body)
    assert message["content"] == [{"type": "text", "text": "plain"}] and message["stop_reason"] == "max_tokens"


async def test_requests_are_recorded_without_credentials_and_can_be_awaited() -> None:
    async with running() as server:
        with trio.fail_after(10):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(call, server.port, "POST", "/v1/messages?beta=true", MESSAGES,
                                   {"authorization": "Bearer sk-secret"})
                recorded = await server.wait_for_requests(1)
    assert recorded[0].body == MESSAGES and recorded[0].target == "/v1/messages?beta=true"
    assert "x-api-key" not in recorded[0].headers and "authorization" not in recorded[0].headers


async def test_a_hanging_reply_holds_the_stream_until_the_client_leaves() -> None:
    server = FakeAnthropic([Reply(blocks=[Text(text="never ends")], hang=True)])
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            port = await nursery.start(server.serve)
            stream = await trio.open_tcp_stream("127.0.0.1", port)
            conn = h11.Connection(h11.CLIENT)
            payload = json.dumps(MESSAGES).encode()
            await stream.send_all(conn.send(h11.Request(method="POST", target="/v1/messages", headers=[
                ("host", "x"), ("content-length", str(len(payload)))])) + conn.send(h11.Data(data=payload)))
            await stream.send_all(conn.send(h11.EndOfMessage()))
            seen = b""
            while b"content_block_delta" not in seen:
                seen += await stream.receive_some(65536)
            with trio.move_on_after(0.2) as waited:
                await stream.receive_some(65536)  # nothing more arrives while the client stays
            assert waited.cancelled_caught and b"message_stop" not in seen
            await stream.aclose()
            nursery.cancel_scope.cancel()


def test_scripts_load_from_json(tmp_path: Path) -> None:
    raw = b'[{"type": "reply", "blocks": [{"type": "text", "text": "hi"}]}, {"type": "error", "status": 529}]'
    assert load_script(raw) == [Reply(blocks=[Text(text="hi")]), ErrorReply(status=529)]
    with pytest.raises(msgspec.ValidationError):
        load_script(b'[{"type": "bogus"}]')


async def test_standalone_mode_prints_its_port_and_serves(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text('[{"type": "reply", "blocks": [{"type": "text", "text": "from file"}]}]')
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            proc: trio.Process = await nursery.start(lambda task_status: trio.run_process(
                [sys.executable, "-m", "tests.fakes.anthropic_server", "--script", str(script)],
                stdout=-1, stderr=-1, check=False, task_status=task_status))
            assert proc.stdout is not None
            line = b""
            while not line.endswith(b"\n"):
                line += await proc.stdout.receive_some(100)
            port = int(line.decode().split()[1])
            _, _, body = await call(port, "POST", "/v1/messages", MESSAGES)
            assert _text(body) == "from file"
            proc.kill()
