"""Hostile frames against a live daemon: each gets its typed answer, and the daemon serves on.

Hypothesis generates batches of frames from request templates (every method but
``daemon.shutdown``, and ``hello``), each with one field replaced: nesting thousands of levels
deep, a value of the wrong type, a number out of every range, NUL characters, or an unknown
field carrying any of those; frames are also sent as binary frames, as random bytes, and as
text frames that are not UTF-8. Each batch runs on one connection after ``hello``; each
fuzzed ``hello`` on its own. After every batch a fresh client must get ``welcome`` and
``daemon.status`` on the URL that ``daemon.json`` names, from the same daemon process.

Hypothesis runs in a worker thread and calls back into the trio loop that owns the daemon
(``trio.from_thread.run``), so the examples share one daemon and the whole test stays bounded.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

import trio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from trio_websocket import ConnectionClosed, WebSocketConnection, wrap_client_stream

from .daemonproc import DaemonProc

EXAMPLES = 100
HANDSHAKE_CODES = {"bad_handshake", "unauthorized", "unsupported_protocol"}

# Requests that cannot start anything: no real harness, no existing session.
TEMPLATES: dict[str, dict[str, Any]] = {
    "daemon.status": {},
    "harness.list": {},
    "session.list": {},
    "session.create": {"harness": "no-such-harness", "cwd": "/nonexistent", "name": "n", "model": "m",
                       "prompt": "p", "permissions": {"mode": "ask", "allow_tools": ["x*"]},
                       "env": {"K": "V"}, "mcp_servers": [], "options": {"script": "true"}},
    "session.get": {"session_id": "s-nope"},
    "session.subscribe": {"session_id": "s-nope", "from_seq": 0},
    "session.unsubscribe": {"session_id": "s-nope"},
    "session.prompt": {"session_id": "s-nope", "text": "hi"},
    "session.interrupt": {"session_id": "s-nope"},
    "session.permission": {"session_id": "s-nope", "permission_id": "p1", "decision": "allow"},
    "session.set_model": {"session_id": "s-nope", "model": "m"},
    "session.set_permissions": {"session_id": "s-nope", "mode": "auto"},
    "session.close": {"session_id": "s-nope"},
}
HELLO: dict[str, Any] = {"type": "hello", "protocol": 1, "token": "not-the-token",
                         "client": {"name": "fuzz", "version": "0"}}
_HOLE = "\x01HOLE\x01"


@dataclass(frozen=True)
class Frame:
    """One websocket frame: JSON-ish text, a binary frame, or a text frame of arbitrary bytes."""

    kind: Literal["text", "binary", "raw_text"]
    payload: bytes


# --- strategies ---------------------------------------------------------------------------------


@st.composite
def _deep(draw: st.DrawFn) -> str:
    depth = draw(st.sampled_from([200, 999, 1000, 1001, 5000, 60_000]))
    if draw(st.booleans()):
        return "[" * depth + "]" * depth
    return '{"a":' * depth + "1" + "}" * depth


_HUGE = st.sampled_from([
    "1e400", "-1e400", "1" + "0" * 30, "-" + "9" * 40, "9223372036854775808", "-9223372036854775809",
    "18446744073709551616", "1" + "0" * 5000, "0.1e-99999", "123456789.123456789e308",
])
_WRONG = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
    max_leaves=6,
)
_NUL_TEXT = st.text(max_size=6).map(lambda t: f"{t}\x00{t}")


def _paths(template: dict[str, Any]) -> list[tuple[str, ...]]:
    """Every field of a request (nested ones too), and an unknown one."""
    paths: list[tuple[str, ...]] = [("extra",)]
    for key, value in template.items():
        paths.append((key,))
        if isinstance(value, dict):
            paths.extend((key, inner) for inner in [*value, "extra"])
    return paths


def _replace(obj: dict[str, Any], path: tuple[str, ...], value: Any) -> dict[str, Any]:
    out = dict(obj)
    if len(path) == 1:
        out[path[0]] = value
    else:
        out[path[0]] = _replace(dict(out.get(path[0]) or {}), path[1:], value)
    return out


@st.composite
def _mutated(draw: st.DrawFn, template: dict[str, Any]) -> bytes:
    """``template`` as JSON with one field replaced by something hostile."""
    path = draw(st.sampled_from(_paths(template)))
    how = draw(st.sampled_from(["deep", "huge", "wrong", "nul", "raw_nul"]))
    if how == "wrong":
        return json.dumps(_replace(template, path, draw(_WRONG))).encode()
    if how == "nul":
        return json.dumps(_replace(template, path, draw(_NUL_TEXT))).encode()
    text = json.dumps(_replace(template, path, _HOLE))
    if how == "raw_nul":  # a NUL byte inside the JSON text itself
        return text.replace(json.dumps(_HOLE), '"a\x00b"').encode()
    literal = draw(_deep()) if how == "deep" else draw(_HUGE)
    return text.replace(json.dumps(_HOLE), literal).encode()


@st.composite
def _request(draw: st.DrawFn) -> dict[str, Any]:
    method = draw(st.sampled_from(sorted(TEMPLATES)))
    return {"type": method, "id": draw(st.integers(1, 10**6)), **TEMPLATES[method]}


@st.composite
def _framed(draw: st.DrawFn, payloads: st.SearchStrategy[bytes]) -> Frame:
    """Mostly text frames; some binary, some random bytes, some text frames that are not UTF-8."""
    how = draw(st.sampled_from(["text", "text", "text", "text", "binary", "bytes", "not_utf8"]))
    if how == "bytes":
        return Frame("binary", draw(st.binary(max_size=64)))
    if how == "not_utf8":
        return Frame("raw_text", draw(payloads) + b"\xff" + draw(st.binary(max_size=8)))
    return Frame("text" if how == "text" else "binary", draw(payloads))


REQUEST_FRAMES = _framed(_request().flatmap(_mutated))
HELLO_FRAMES = _framed(_mutated(HELLO))


# --- the wire -----------------------------------------------------------------------------------


class _Client:
    """A websocket client on a stream the test owns, so it can also write raw frames."""

    def __init__(self, ws: WebSocketConnection, stream: trio.SocketStream) -> None:
        self.ws = ws
        self.stream = stream

    async def send(self, frame: Frame) -> None:
        if frame.kind == "raw_text":
            await self.stream.send_all(masked_frame(0x1, frame.payload))
        elif frame.kind == "binary":
            await self.ws.send_message(frame.payload)
        else:
            await self.ws.send_message(frame.payload.decode())

    async def receive(self) -> dict[str, Any]:
        return dict(json.loads(await self.ws.get_message()))


def masked_frame(opcode: int, payload: bytes) -> bytes:
    """One final client frame (RFC 6455 §5.2), masked, of any payload, valid UTF-8 or not."""
    mask = b"\x1f\x2e\x3d\x4c"
    size = len(payload)
    if size < 126:
        length = bytes([0x80 | size])
    elif size < 2**16:
        length = bytes([0x80 | 126]) + size.to_bytes(2, "big")
    else:
        length = bytes([0x80 | 127]) + size.to_bytes(8, "big")
    return bytes([0x80 | opcode]) + length + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))


async def _session(daemon: DaemonProc, nursery: trio.Nursery) -> _Client:
    url = json.loads((daemon.state_dir / "daemon.json").read_text())["url"]
    port = int(url.rsplit(":", 1)[1].split("/")[0])
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    ws = await wrap_client_stream(nursery, stream, "127.0.0.1", "/v1",
                                  message_queue_size=64, max_message_size=64 * 2**20)
    return _Client(ws, stream)


async def _greeted(daemon: DaemonProc, nursery: trio.Nursery) -> _Client:
    client = await _session(daemon, nursery)
    await client.ws.send_message(json.dumps({"type": "hello", "protocol": 1, "token": daemon.token}))
    assert (await client.receive())["type"] == "welcome"
    return client


async def _check_batch(daemon: DaemonProc, batch: list[Frame], hellos: list[Frame]) -> None:
    with trio.fail_after(20):
        async with trio.open_nursery() as nursery:
            await _requests_on_one_connection(daemon, batch, nursery)
            for frame in [*hellos, *(f for f in batch if f.kind == "raw_text")]:
                await _refused_or_closed(daemon, frame, nursery, hello=frame in hellos)
            fresh = await _greeted(daemon, nursery)
            await fresh.ws.send_message(json.dumps({"type": "daemon.status", "id": 1}))
            status = await fresh.receive()
            assert status["type"] == "ok" and status["result"]["pid"] == daemon.info["pid"], status
            nursery.cancel_scope.cancel()


async def _requests_on_one_connection(daemon: DaemonProc, batch: list[Frame], nursery: trio.Nursery) -> None:
    """Every frame gets exactly one ``ok`` or ``error``, and the connection stays open."""
    client = await _greeted(daemon, nursery)
    sent = [f for f in batch if f.kind != "raw_text"]  # those end the connection: see below
    for frame in sent:
        await client.send(frame)
    await client.ws.send_message(json.dumps({"type": "daemon.status", "id": -1}))
    answers = [await client.receive() for _ in range(len(sent) + 1)]
    for answer in answers:
        assert answer["type"] in ("ok", "error"), answer
        if answer["type"] == "error":
            assert answer["code"] not in ("internal", *HANDSHAKE_CODES), (answer, batch)
    assert any(a["type"] == "ok" and a["id"] == -1 for a in answers), answers
    await client.ws.aclose()


async def _refused_or_closed(daemon: DaemonProc, frame: Frame, nursery: trio.Nursery, *, hello: bool) -> None:
    """A fuzzed hello gets one handshake error and a close; a non-UTF-8 text frame, a close."""
    client = await _greeted(daemon, nursery) if not hello else await _session(daemon, nursery)
    await client.send(frame)
    frames = []
    try:
        while True:
            frames.append(await client.receive())
    except ConnectionClosed as closed:
        reason = closed.reason
    if frame.kind == "raw_text":
        assert frames == [] and reason.code == 1007, (frames, reason)  # invalid UTF-8: RFC 6455
    else:
        assert [(f["type"], f["id"]) for f in frames] == [("error", None)], frames
        assert frames[0]["code"] in HANDSHAKE_CODES, frames


# --- the test -----------------------------------------------------------------------------------


async def test_fuzzed_frames_get_typed_answers_and_the_daemon_serves_on(daemon: DaemonProc) -> None:
    @settings(max_examples=EXAMPLES, deadline=None, database=None, derandomize=True,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                     HealthCheck.large_base_example])
    @given(batch=st.lists(REQUEST_FRAMES, min_size=1, max_size=8),
           hellos=st.lists(HELLO_FRAMES, max_size=2))
    def example(batch: list[Frame], hellos: list[Frame]) -> None:
        trio.from_thread.run(_check_batch, daemon, batch, hellos)

    with trio.fail_after(120):
        await trio.to_thread.run_sync(example)
