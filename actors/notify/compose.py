"""What a notification says, pure: session events in, ``Notice``s out, and each format's request.

``Watch`` follows one session's events and yields a ``Notice`` for a permission that waits for
a person (not one the policy answers), for each finished turn (a ``result``, with how long it
took) and for the session failing (its ``status`` turning ``failed``, with the last error's
message). ``wanted`` applies a target's ``events`` and ``min_turn_s``; ``render`` builds the
body and headers of a target's format:

* ``json``: ``{event, session: {id, name, harness}, text, url}`` (``url``: the daemon's page
  for the session; without the browser's cookie it answers "not authorised" and says how to log in);
* ``ntfy``: the text as a plain-text body, with ``Title`` and ``Tags`` headers;
* ``slack``: an incoming webhook's ``{"text": …}``.

Never a secret nor a whole tool output: texts are built from a tool's name and a one-line
summary of its input, the stop reason and figures of a turn, an error's message; each goes
through ``actors.redaction.redact`` and is cut to ``TEXT_LIMIT`` characters.
"""

from __future__ import annotations

from typing import Any

import msgspec
from msgspec import Struct

from actors.notify.config import NotifyEvent, NotifyTarget
from actors.redaction import redact
from protocol import events as ev

__all__ = ["TEXT_LIMIT", "Notice", "Watch", "render", "trial_notice", "wanted"]

TEXT_LIMIT = 200
"""Characters of a notification's text at most (a summary, never a transcript)."""

_TAGS = {"permission": "warning", "turn_done": "white_check_mark", "session_failed": "x"}
_encoder = msgspec.json.Encoder()


class Notice(Struct, frozen=True, kw_only=True):
    """One notification, whatever the format."""

    event: NotifyEvent | str  # "test" for ``corral notify test``
    session_id: str
    name: str | None
    harness: str
    text: str
    url: str
    turn_s: float | None = None  # turn_done: how long the turn took


class Watch:
    """One session's notices, from its events in order (sans-IO)."""

    def __init__(self, session_id: str, name: str | None, harness: str, url: str) -> None:
        self.session_id = session_id
        self.name = name
        self.harness = harness
        self.url = url
        self._last_error: str | None = None

    def offer(self, event: ev.Event) -> Notice | None:
        """The notice ``event`` makes, if any."""
        match event:
            case ev.Permission(policy=False, tool=tool, input=data):
                summary = _summary(data)
                return self._notice("permission", f"{self._who} asks to run {tool}" +
                                    (f": {summary}" if summary else ""))
            case ev.Result(stop_reason=reason, is_error=is_error, duration_ms=ms, cost_usd=cost):
                seconds = None if ms is None else ms / 1000
                figures = [f"{seconds:.0f} s" if seconds is not None else "",
                           f"${cost:.4f}" if cost is not None else ""]
                shown = ", ".join(f for f in figures if f)
                verb = "ended with an error" if is_error else "is done"
                text = f"{self._who}: turn {verb} ({reason or 'end'}{', ' + shown if shown else ''})"
                return self._notice("turn_done", text, turn_s=seconds)
            case ev.Error(message=message):
                self._last_error = message
            case ev.Status(state="failed"):
                why = f": {self._last_error}" if self._last_error else ""
                return self._notice("session_failed", f"{self._who} failed{why}")
        return None

    @property
    def _who(self) -> str:
        return self.name or self.session_id

    def _notice(self, event: NotifyEvent, text: str, *, turn_s: float | None = None) -> Notice:
        return Notice(event=event, session_id=self.session_id, name=self.name, harness=self.harness,
                      text=_clip(text), url=self.url, turn_s=turn_s)


def wanted(target: NotifyTarget, notice: Notice) -> bool:
    """True when ``target`` takes ``notice``: its event is listed (a test always is) and a
    finished turn took at least ``min_turn_s`` (a turn of unknown length counts as 0 s)."""
    if notice.event == "test":
        return True
    if notice.event not in target.events:
        return False
    return notice.event != "turn_done" or (notice.turn_s or 0.0) >= target.min_turn_s


def render(target: NotifyTarget, notice: Notice) -> tuple[list[tuple[str, str]], bytes]:
    """The headers (the target's own last, so they win) and the body of the POST."""
    if target.format == "ntfy":
        title = f"corral: {notice.event.replace('_', ' ')}"
        headers = [("content-type", "text/plain; charset=utf-8"), ("title", title),
                   ("tags", _TAGS.get(notice.event, "bell")), ("click", notice.url)]
        body = notice.text.encode()
    elif target.format == "slack":
        headers = [("content-type", "application/json")]
        body = _encoder.encode({"text": f"{notice.text} <{notice.url}|open>"})
    else:
        headers = [("content-type", "application/json")]
        body = _encoder.encode({"event": notice.event,
                                "session": {"id": notice.session_id, "name": notice.name,
                                            "harness": notice.harness},
                                "text": notice.text, "url": notice.url})
    return headers + [(k.lower(), v) for k, v in target.headers.items()], body


def trial_notice(url: str) -> Notice:
    """What ``corral notify test`` sends."""
    return Notice(event="test", session_id="s-test", name="notify test", harness="fake",
                  text="corral: a test notification", url=url)


def _summary(data: Any) -> str:
    """One line about a tool's input: its command, path or URL if it names one, else nothing."""
    if isinstance(data, dict):
        for key in ("command", "file_path", "path", "url", "pattern", "query"):
            value = data.get(key)
            if isinstance(value, str) and value:
                return " ".join(value.split())
    elif isinstance(data, str):
        return " ".join(data.split())
    return ""


def _clip(text: str) -> str:
    text = redact(text)
    return text if len(text) <= TEXT_LIMIT else text[: TEXT_LIMIT - 1] + "…"
