"""Round trips a daemon answers in the middle of a turn, read from a session's frame log.

A turn's edges (``tests.bench.turns``) leave out what the daemon does while the child works:
the requests the child makes of its client and waits on (Claude's ``control_request``, an ACP
agent's ``fs/*``/``terminal/*``/``session/request_permission``, Codex approvals). With
``--frames`` each daemon path's session writes its frame log (``options.log_path``, a user
feature: every frame to and from the child, timestamped by the daemon), and ``answers`` times
each such request from the line read to the answer written. The log's timestamps have
millisecond resolution: one answer is ±1 ms, the mean over many is not.
"""

from __future__ import annotations

import datetime
from typing import Any

import msgspec

__all__ = ["answers"]


def answers(lines: list[bytes]) -> dict[str, list[float]]:
    """Per method the child called (``control_request``: its subtype), the ms from each request
    to the daemon's answer."""
    asked: dict[Any, tuple[str, float]] = {}
    waits: dict[str, list[float]] = {}
    for line in lines:
        if not line.strip():
            continue
        entry = msgspec.json.decode(line)
        frame = entry.get("frame")
        if not isinstance(frame, dict):
            continue
        when = datetime.datetime.fromisoformat(entry["ts"]).timestamp() * 1000
        if entry["dir"] == "in":
            key = _request_key(frame)
            if key is not None:
                asked[key] = (_method(frame), when)
        else:
            key = _answer_key(frame)
            if key is not None and key in asked:
                method, since = asked.pop(key)
                waits.setdefault(method, []).append(when - since)
    return waits


def _method(frame: dict[str, Any]) -> str:
    if frame.get("type") == "control_request":
        request = frame.get("request")
        return str(request.get("subtype")) if isinstance(request, dict) else "control_request"
    return str(frame["method"])


def _request_key(frame: dict[str, Any]) -> tuple[str, Any] | None:
    """The key of a request the child makes of us: a JSON-RPC request or Claude's ``control_request``."""
    if frame.get("type") == "control_request":
        return ("control", frame.get("request_id"))
    if "method" in frame and "id" in frame:
        return ("rpc", frame["id"])
    return None


def _answer_key(frame: dict[str, Any]) -> tuple[str, Any] | None:
    """The key of the request an answer we wrote replies to."""
    if frame.get("type") == "control_response":
        response = frame.get("response")
        return ("control", response.get("request_id")) if isinstance(response, dict) else None
    if "method" not in frame and "id" in frame and ("result" in frame or "error" in frame):
        return ("rpc", frame["id"])
    return None
