"""Replay a recording (``record.py``) through a fresh translator, synchronously.

Each ``call`` line invokes the translator method, each ``recv`` line feeds the agent's line to
``receive``, each ``work`` line hands the recorded outcome to ``finished``, and a ``restart``
line starts a new translator (the next ``meta`` line names its request). The frames the
translator produces are collected beside the frames the recording says were sent, so a test can
assert they are the same, byte for byte as JSON, and check the events.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec

from actors.harness import HarnessRequest, Send, Work
from actors.vendors.acp import PROFILES, AcpTranslator
from actors.vendors.acp.jobs import Done, Failed
from protocol.events import Event

__all__ = ["Replayed", "replay"]

HERE = Path(__file__).parent / "recordings"


class Replayed(msgspec.Struct):
    """What a replay produced: per child, its events, sent frames and handed-out work."""

    events: list[list[Event]]
    sent: list[dict[str, Any]]
    recorded: list[dict[str, Any]]
    work: list[Work]
    translators: list[AcpTranslator]

    @property
    def all_events(self) -> list[Event]:
        return [event for child in self.events for event in child]


def replay(name: str) -> Replayed:
    """Replay ``recordings/<name>.jsonl``."""
    out = Replayed(events=[], sent=[], recorded=[], work=[], translators=[])
    translator: AcpTranslator | None = None
    for raw in (HERE / f"{name}.jsonl").read_text().splitlines():
        line = json.loads(raw)
        match line["dir"]:
            case "meta":
                request = msgspec.convert(line["request"], HarnessRequest)
                translator = AcpTranslator(request, PROFILES[line["agent"]],
                                           client_version="0.1.0")
                out.translators.append(translator)
                out.events.append([])
            case "call":
                assert translator is not None
                outputs = getattr(translator, line["call"])(*line["args"], 0.0)
                _collect(out, outputs or [])
            case "recv" if "frame" in line:
                assert translator is not None
                _collect(out, translator.receive(json.dumps(line["frame"]).encode(), 0.0))
            case "work":
                assert translator is not None
                kind = Done if line["kind"] == "Done" else Failed
                outcome = msgspec.convert(line["outcome"], kind)
                _collect(out, translator.finished(line["id"], outcome, 0.0))
            case "send":
                out.recorded.append(line["frame"])
    return out


def _collect(out: Replayed, outputs: list[Any]) -> None:
    for item in outputs:
        if isinstance(item, Send):
            out.sent.append(json.loads(item.data))
        elif isinstance(item, Work):
            out.work.append(item)
        else:
            out.events[-1].append(item)
