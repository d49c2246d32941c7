"""The fake OpenAI Responses API: SSE shapes, scripted replies, errors, stalls, recording."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import h11
import trio

from tests.fakes.openai_server import (
    CustomCall, Exec, FakeOpenAI, Failed, HttpError, Stall, Text, load_script,
)


class _Client:
    """A tiny HTTP/1.1 client on one keep-alive connection."""

    def __init__(self, stream: trio.SocketStream) -> None:
        self.stream = stream
        self.conn = h11.Connection(h11.CLIENT)

    async def send(self, method: str, target: str, body: Any = None) -> None:
        data = json.dumps(body).encode() if body is not None else b""
        headers = [("host", "127.0.0.1"), ("content-length", str(len(data))),
                   ("authorization", "Bearer sk-test")]
        await self.stream.send_all(self.conn.send(h11.Request(method=method, target=target,
                                                              headers=headers)))
        await self.stream.send_all(self.conn.send(h11.Data(data=data)))
        await self.stream.send_all(self.conn.send(h11.EndOfMessage()))

    async def next(self) -> Any:
        while True:
            event = self.conn.next_event()
            if event is h11.NEED_DATA:
                self.conn.receive_data(await self.stream.receive_some(65536))
                continue
            return event

    async def response(self) -> tuple[h11.Response, bytes]:
        head = await self.next()
        assert isinstance(head, h11.Response)
        body = b""
        while not isinstance(event := await self.next(), h11.EndOfMessage):
            body += event.data
        self.conn.start_next_cycle()
        return head, body


def _events(body: bytes) -> list[dict[str, Any]]:
    out = []
    for block in body.decode().split("\n\n"):
        if block.strip():
            kind, data = block.split("\n")
            payload = json.loads(data.removeprefix("data: "))
            assert kind == f"event: {payload['type']}"
            out.append(payload)
    return out


@asynccontextmanager
async def _serve(server: FakeOpenAI) -> AsyncIterator[_Client]:
    with trio.fail_after(20):
        async with trio.open_nursery() as nursery:
            port = await nursery.start(server.serve)
            stream = await trio.open_tcp_stream("127.0.0.1", port)
            yield _Client(stream)
            await stream.aclose()
            nursery.cancel_scope.cancel()


async def test_text_reply_streams_like_the_responses_api() -> None:
    server = FakeOpenAI([Text(text="Hello world", reasoning="hmm", chunk=5, input_tokens=7,
                              output_tokens=3, cached_tokens=2)])
    async with _serve(server) as client:
        await client.send("POST", "/v1/responses", {"model": "m1", "input": [], "stream": True})
        head, body = await client.response()
    assert head.status_code == 200 and (b"content-type", b"text/event-stream") in head.headers
    events = _events(body)
    kinds = [e["type"] for e in events]
    assert kinds[:2] == ["response.created", "response.in_progress"] and kinds[-1] == "response.completed"
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    assert "response.reasoning_summary_text.delta" in kinds
    assert [e["delta"] for e in events if e["type"] == "response.output_text.delta"] == [
        "Hello", " worl", "d"]
    completed = events[-1]["response"]
    assert completed["model"] == "m1" and completed["status"] == "completed"
    assert [item["type"] for item in completed["output"]] == ["reasoning", "message"]
    assert completed["usage"] == {"input_tokens": 7, "input_tokens_details": {"cached_tokens": 2},
                                  "output_tokens": 3, "output_tokens_details": {"reasoning_tokens": 0},
                                  "total_tokens": 10}
    (recorded,) = server.responses()
    assert recorded.body["model"] == "m1" and recorded.headers["authorization"] == "Bearer sk-test"


async def test_tool_calls_and_keep_alive() -> None:
    server = FakeOpenAI([Exec(cmd="ls -la", workdir="/w", call_id="c1"),
                         CustomCall(name="apply_patch", input="*** Begin Patch\n")])
    async with _serve(server) as client:
        await client.send("POST", "/v1/responses", {"input": []})
        exec_events = _events((await client.response())[1])
        await client.send("POST", "/v1/responses", {"input": [{"type": "function_call_output",
                                                               "call_id": "c1", "output": "ok"}]})
        patch_events = _events((await client.response())[1])
    done = [e["item"] for e in exec_events if e["type"] == "response.output_item.done"]
    assert done[0]["type"] == "function_call" and done[0]["name"] == "exec_command"
    assert done[0]["call_id"] == "c1"
    assert json.loads(done[0]["arguments"]) == {"cmd": "ls -la", "workdir": "/w"}
    custom = [e["item"] for e in patch_events if e["type"] == "response.output_item.done"]
    assert custom[0]["type"] == "custom_tool_call" and custom[0]["input"] == "*** Begin Patch\n"
    assert server.responses()[1].body["input"][0]["call_id"] == "c1"


async def test_errors_default_reply_models_and_unknown_paths() -> None:
    server = FakeOpenAI([HttpError(status=429, retry_after=1.5), Failed(code="rate_limit_exceeded")],
                        default=Text(text="fallback"))
    async with _serve(server) as client:
        await client.send("POST", "/v1/responses", {})
        head, body = await client.response()
        assert head.status_code == 429 and (b"retry-after", b"1.5") in head.headers
        assert json.loads(body)["error"]["code"] == "rate_limit_exceeded"
        await client.send("POST", "/v1/responses", {})
        failed = _events((await client.response())[1])[-1]
        assert failed["type"] == "response.failed"
        assert failed["response"]["error"]["code"] == "rate_limit_exceeded"
        await client.send("POST", "/v1/responses", {})
        text = _events((await client.response())[1])
        assert text[-1]["response"]["output"][0]["content"][0]["text"] == "fallback"
        await client.send("GET", "/v1/models")
        head, body = await client.response()
        assert head.status_code == 200 and json.loads(body)["data"][0]["id"] == "gpt-fake"
        await client.send("GET", "/nope")
        head, body = await client.response()
        assert head.status_code == 404 and "error" in json.loads(body)
    assert [r.path for r in server.requests] == ["/v1/responses"] * 3 + ["/v1/models", "/nope"]


async def test_stall_holds_until_release_or_disconnect() -> None:
    server = FakeOpenAI([Stall(text="wait"), Stall()])
    async with _serve(server) as client:
        await client.send("POST", "/v1/responses", {})
        await server.wait_for(lambda: server.stalled == 1)
        server.release_stalls()
        events = _events((await client.response())[1])
        assert events[-1]["type"] == "response.completed"
        assert events[-1]["response"]["output"][0]["content"][0]["text"] == "wait"
        await client.send("POST", "/v1/responses", {})
        await server.wait_for(lambda: server.stalled == 1)
        await client.stream.aclose()
        await server.wait_for(lambda: server.stalled == 0)
    assert len(await server.wait_responses(2)) == 2


def test_script_files_decode_every_reply_kind(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps([
        {"kind": "text", "text": "hi"}, {"kind": "exec", "cmd": "ls"},
        {"kind": "function_call", "name": "f", "arguments": {"a": 1}},
        {"kind": "custom_call", "name": "apply_patch", "input": "p"}, {"kind": "stall"},
        {"kind": "failed"}, {"kind": "error", "status": 401}]))
    assert [type(r).__name__ for r in load_script(str(script))] == [
        "Text", "Exec", "FunctionCall", "CustomCall", "Stall", "Failed", "HttpError"]
