"""Helpers for synthetic Codex frames: a ready translator, frames in, sends and events out."""

from __future__ import annotations

import json
from typing import Any

from actors.harness import HarnessRequest, Output, Send
from actors.vendors.codex import CodexTranslator


def request(**fields: Any) -> HarnessRequest:
    """A request in ``/w``."""
    return HarnessRequest(session_id="s", cwd="/w", work_dir="/r", **fields)


def frame(obj: Any) -> bytes:
    """One JSON line as Codex writes it (without the newline, as the framer hands it over)."""
    return json.dumps(obj).encode()


def ready(translator: CodexTranslator | None = None) -> CodexTranslator:
    """A translator past the handshake, on thread ``th``."""
    t = translator or CodexTranslator(request())
    t.start(0.0)
    t.receive(frame({"id": 1, "result": {"userAgent": "x"}}), 0.0)
    t.receive(frame({"id": 2, "result": {"thread": {"id": "th"}, "model": "m", "cwd": "/w"}}), 0.0)
    assert t.ready
    return t


def sends(outputs: list[Output] | None) -> list[Any]:
    """The frames among ``outputs``, decoded."""
    return [json.loads(o.data) for o in outputs or [] if isinstance(o, Send)]


def events(outputs: list[Output]) -> list[Any]:
    """The events among ``outputs``."""
    return [o for o in outputs if not isinstance(o, Send)]


def turn(t: CodexTranslator, turn_id: str = "t1") -> None:
    """Start a turn and let Codex answer it with ``turn_id``."""
    (start,) = sends(t.prompt("hi", 0.0))
    t.receive(frame({"id": start["id"], "result": {"turn": {"id": turn_id}}}), 0.0)
