"""Joining queued text deltas (``wire.coalesce``, ``ServerChild.frames``).

OpenCode sends one ``message.part.delta`` per streamed chunk; when several are queued before the
session reads them, they come out as one frame (one ``assistant`` event, one log line, one client
message), and nothing else changes: the text, the order, every other frame's bytes.
"""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import msgspec
import pytest
import trio

from actors.harness import HarnessRequest
from actors.vendors.opencode import OpenCodeTranslator, ServerChild, wire
from protocol.events import Assistant, Result

from .test_translate import RECORDINGS


def delta(text: Any, part: str = "prt_1", field: str = "text", message: str = "msg_1") -> bytes:
    return json.dumps({"id": f"evt_{text}", "type": "message.part.delta", "properties": {
        "sessionID": "ses_1", "messageID": message, "partID": part, "field": field,
        "delta": text}}).encode()


STATUS = b'{"type":"session.status","properties":{"sessionID":"ses_1","status":{"type":"idle"}}}'


def texts(frames: list[bytes]) -> list[Any]:
    return [json.loads(f)["properties"].get("delta") if b"part.delta" in f else "-" for f in frames]


def test_a_run_of_deltas_of_one_part_becomes_one_frame() -> None:
    frames = [delta("ab"), delta("cd"), STATUS, delta("ef"), delta("gh", part="prt_2"),
              delta("ij", part="prt_2"), delta("kl", part="prt_2", field="other")]
    out = wire.coalesce(frames)
    assert texts(out) == ["abcd", "-", "ef", "ghij", "kl"]
    assert out[1] == STATUS and out[2] == frames[3] and out[4] == frames[6]
    joined = json.loads(out[0])
    assert joined == {"id": "evt_ab", "type": "message.part.delta", "properties": {
        "sessionID": "ses_1", "messageID": "msg_1", "partID": "prt_1", "field": "text",
        "delta": "abcd"}}


def test_other_messages_and_undecodable_deltas_break_a_run() -> None:
    odd = b'{"type":"message.part.delta","properties":{"delta":3}}'
    frames = [delta("a"), delta("b", message="msg_2"), delta("c", message="msg_2"), odd,
              delta("d", message="msg_2"), b"not json message.part.delta"]
    out = wire.coalesce(frames)
    assert texts(out[:3]) == ["a", "bc", 3] and out[2] == odd
    assert out[3:] == frames[4:]


def test_a_long_run_is_cut_at_the_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(wire, "COALESCE_LIMIT", 5)
    assert texts(wire.coalesce([delta("ab"), delta("cd"), delta("ef"), delta("g")])) == ["abcd", "efg"]


def test_the_recorded_text_turn_says_the_same_with_fewer_events() -> None:
    """The recording's received frames, each run between two calls coalesced, through a fresh
    translator: the same text and result, in fewer ``assistant`` events."""
    lines = [json.loads(raw) for raw in (RECORDINGS / "text_turn.ndjson").read_text().splitlines()]
    request = msgspec.convert(lines[0]["request"], HarnessRequest)

    def replay(join: bool) -> list[Any]:
        translator = OpenCodeTranslator(request)
        events: list[Any] = []
        pending: list[bytes] = []

        def flush() -> None:
            for frame in wire.coalesce(pending) if join else pending:
                events.extend(translator.receive(frame, 0.0))
            pending.clear()

        for line in lines[1:]:
            if line["dir"] == "recv":
                pending.append(json.dumps(line["frame"]).encode())
            elif line["dir"] == "call":
                flush()
                events.extend(getattr(translator, line["call"])(*line["args"], 0.0) or [])
        flush()
        return events

    plain, joined = replay(False), replay(True)
    said = ["".join(e.text for e in events if isinstance(e, Assistant)) for events in (plain, joined)]
    assert said[0] == said[1] != ""
    assert len([e for e in joined if isinstance(e, Assistant)]) < len([e for e in plain if isinstance(e, Assistant)])
    assert [e for e in joined if isinstance(e, Result)] == [e for e in plain if isinstance(e, Result)] != []


async def test_the_child_joins_the_deltas_queued_when_it_reads() -> None:
    send, receive = trio.open_memory_channel[bytes](100)
    child = ServerChild(SimpleNamespace(events=receive, pid=1))  # type: ignore[arg-type]
    for text in ("a", "b", "c", "d"):
        send.send_nowait(delta(text))
    send.send_nowait(STATUS)
    frames = child.frames()
    seen = [await frames.__anext__(), await frames.__anext__()]
    assert texts(seen) == ["abcd", "-"]
    send.send_nowait(delta("e"))
    assert await frames.__anext__() == delta("e")
    send.close()
    assert [frame async for frame in frames] == []
