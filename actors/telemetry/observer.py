"""The one observer of every session's events: metrics always, spans when an exporter is on.

Theory of operation
-------------------
The session actor hands each event it appends to its log to ``Observer.observe`` (with the
session's id, harness and model, and the event's time), whatever the harness: the telemetry is
built from the event model, not from hooks in the drivers. ``observe`` never raises (a bug here
is logged, never a session's failure) and never blocks.

Metrics (``CorralMetrics``): ``status`` moves the session in the ``corral.sessions`` gauge; a
``result`` is a turn (its usage and cost counted by harness); a ``tool`` ``completed`` is a
tool call (``ok`` or ``error``) and a tool still open when its turn ends is one ``incomplete``;
``permission_decided`` counts its decision; ``restarted`` a restart; every event ``corral.events``.

Spans (through a ``SpanSink``, only when one is set): a turn opens at the ``user`` event that
delivers a prompt (``prompted`` or ``held``; a steered prompt joins the running turn), or at the
first event of a turn that began otherwise (an autonomous run), or when a driver asks for the
turn's trace context (``turn_context``: the native worker's model-call spans are its children).
``corral.turn`` ends at the ``result``; each ``tool`` call is a ``corral.tool`` child from its
first event to ``completed``, each permission wait a ``corral.permission`` child from
``permission`` to ``permission_decided``. A turn that a crash ends (a ``result`` with
``is_error``) is ended with an error status, and the ``exit`` that follows (if it does) adds its
reason, code and signal; whatever is still open when a session ends (``closed``/``failed``) is
ended then, as an error. Prompt text and tool input become attributes only with
``capture_content``; secrets never do (events carry none).
"""

from __future__ import annotations

import logging
from typing import Any, Protocol

import msgspec

from actors.telemetry.metricset import CorralMetrics
from protocol import events as ev

__all__ = ["Attributes", "Observer", "SpanSink"]

log = logging.getLogger("corral.telemetry")

Attributes = dict[str, str | bool | int | float]
_CONTENT_LIMIT = 4096
"""Characters of prompt text or tool input kept in an attribute (``capture_content``)."""
_TURN_EVENTS = (ev.Assistant, ev.Thought, ev.Tool, ev.Permission, ev.PermissionDecided, ev.Result,
                ev.Checkpoint)
_ENDED = frozenset({"closed", "failed"})
_COUNTED = frozenset({ev.Status, ev.Init, ev.Tool, ev.PermissionDecided, ev.Restarted, ev.Result})
"""The event types that move a metric beyond ``corral.events``."""


class SpanSink(Protocol):
    """Where spans go (``actors.telemetry.otel``; a list in tests). Times in ns since the epoch."""

    def start(self, name: str, at_ns: int, attributes: Attributes, parent: Any | None) -> Any:
        """Start a span (a root when ``parent`` is ``None``) and return its handle."""

    def end(self, span: Any, at_ns: int, attributes: Attributes, error: str | None) -> None:
        """Add ``attributes`` and end ``span``; ``error`` makes its status an error."""

    def traceparent(self, span: Any) -> str:
        """The W3C ``traceparent`` of ``span``, for a process that adds children to it."""


class _Turn:
    """One session's open turn span and its open children."""

    __slots__ = ("error_code", "extra", "pending_end", "permissions", "seen", "span", "tools")

    def __init__(self, span: Any) -> None:
        self.span = span
        self.seen = False
        """Whether an event of the turn came (a span opened by ``turn_context`` has had none)."""
        self.extra: Attributes = {}
        """Attributes set when the turn ends (the prompt, with ``capture_content``)."""
        self.tools: dict[str, Any] = {}
        self.permissions: dict[str, Any] = {}
        self.error_code: str | None = None
        self.pending_end: tuple[int, Attributes] | None = None
        """An errored turn waits for the next event (its ``exit``) to be ended: (time, attrs)."""


class _Session:
    __slots__ = ("harness", "id", "model", "state", "tools", "turn")

    def __init__(self, session_id: str, harness: str, model: str | None) -> None:
        self.id = session_id
        self.harness = harness
        self.model = model
        self.state: str | None = None
        self.tools: dict[str, str] = {}
        """Open tool calls: call id → kind (for ``incomplete`` when the turn ends)."""
        self.turn: _Turn | None = None


class Observer:
    """Folds session events into ``metrics`` and, with a sink, spans (see the module docstring)."""

    def __init__(self, metrics: CorralMetrics, *, capture_content: bool = False) -> None:
        self.metrics = metrics
        self.capture_content = capture_content
        self.spans: SpanSink | None = None
        """Set once an exporter is running; spans start with the next turn."""
        self._sessions: dict[str, _Session] = {}
        self._failed = False

    def seed(self, session_id: str, harness: str, state: str) -> None:
        """Count a session the daemon found at boot (an ended one) in the sessions gauge."""
        self._move(self._session(session_id, harness, None), state)

    def observe(self, session_id: str, harness: str, model: str | None, event: ev.Event,
                now: float) -> None:
        """Fold one event of a session in, at ``now`` (seconds since the epoch). Never raises."""
        try:
            self.metrics.events.inc()
            kind = type(event)
            if kind not in _COUNTED and self.spans is None:
                return  # the common case (a streamed delta with telemetry off): one count
            session = self._session(session_id, harness, model)
            if kind in _COUNTED:
                self._count(session, event)
            if self.spans is not None:
                self._trace(self.spans, session, event, round(now * 1e9))
        except Exception:
            if not self._failed:  # once: a broken observer must not flood the log
                self._failed = True
                log.exception("telemetry: could not observe an event of session %s", session_id)

    def turn_context(self, session_id: str, harness: str, model: str | None, now: float) -> str | None:
        """The ``traceparent`` of the session's turn that starts (or runs) now, opening its span
        if none is open; ``None`` when no exporter is on."""
        if self.spans is None:
            return None
        session = self._session(session_id, harness, model)
        if session.turn is not None and session.turn.pending_end is not None:
            self._end_pending(self.spans, session, session.turn.pending_end, None)
        turn = session.turn if session.turn is not None else self._open(session, round(now * 1e9))
        return self.spans.traceparent(turn.span)

    # --- internals ------------------------------------------------------------------------

    def _session(self, session_id: str, harness: str, model: str | None) -> _Session:
        session = self._sessions.get(session_id)
        if session is None:
            session = self._sessions[session_id] = _Session(session_id, harness, model)
        elif model is not None:
            session.model = model
        return session

    def _count(self, session: _Session, event: ev.Event) -> None:
        m = self.metrics
        harness = session.harness
        match event:
            case ev.Status(state=state):
                self._move(session, state)
            case ev.Init(model=model) if model:
                session.model = model
            case ev.Tool(call_id=call_id, phase="completed", kind=kind, is_error=is_error):
                session.tools.pop(call_id, None)
                m.tool_calls.inc((kind, "error" if is_error else "ok"))
            case ev.Tool(call_id=call_id, kind=kind):
                session.tools[call_id] = kind
            case ev.PermissionDecided(decision=decision):
                m.permissions.inc((decision,))
            case ev.Restarted():
                m.restarts.inc((harness,))
            case ev.Result(is_error=is_error, usage=usage, cost_usd=cost):
                m.turns.inc((harness, "true" if is_error else "false"))
                for token_type, count in (("input", usage.input_tokens), ("output", usage.output_tokens),
                                          ("cache_read", usage.cache_read_tokens),
                                          ("cache_write", usage.cache_write_tokens)):
                    if count:
                        m.tokens.inc((harness, token_type), count)
                if cost:
                    m.cost.inc((harness,), cost)
                for open_kind in session.tools.values():
                    m.tool_calls.inc((open_kind, "incomplete"))
                session.tools.clear()
            case _:
                pass

    def _move(self, session: _Session, state: str) -> None:
        gauge = self.metrics.sessions
        if session.state is not None:
            gauge.add((session.state, session.harness), -1)
        gauge.add((state, session.harness), 1)
        session.state = state

    def _open(self, session: _Session, at: int) -> _Turn:
        attributes: Attributes = {"corral.session.id": session.id, "corral.harness": session.harness}
        if session.model:
            attributes["gen_ai.request.model"] = session.model
        spans = self.spans
        if spans is None:
            raise RuntimeError("a turn span without a span sink")
        turn = session.turn = _Turn(spans.start("corral.turn", at, attributes, None))
        return turn

    def _trace(self, spans: SpanSink, session: _Session, event: ev.Event, at: int) -> None:
        turn = session.turn
        if turn is not None and turn.pending_end is not None:
            if isinstance(event, ev.Status) and event.state not in _ENDED:
                return  # the state the result moved the session to; its exit may follow
            self._end_pending(spans, session, turn.pending_end, event)
            turn = None
        match event:
            case ev.User(delivery="steered"):
                return
            case ev.User(text=text):
                if turn is not None and turn.seen:  # a turn that never had its result
                    self._end_turn(spans, turn, at, {"corral.stop_reason": "superseded"}, "no result")
                    turn = None
                if turn is None:  # else opened for this prompt already (``turn_context``)
                    turn = self._open(session, at)
                turn.seen = True
                if self.capture_content:
                    turn.extra["corral.prompt"] = text[:_CONTENT_LIMIT]
                return
            case ev.Status(state=state) if state in _ENDED:
                if turn is not None:
                    self._end_turn(spans, turn, at, {"corral.session.state": state},
                                   f"the session ended ({state})")
                    session.turn = None
                return
            case ev.Exit(reason=reason):
                if turn is not None:
                    self._end_turn(spans, turn, at, {"corral.exit.reason": reason},
                                   f"the harness child ended ({reason})")
                    session.turn = None
                return
            case ev.Error(code=code) if turn is not None:
                turn.error_code = code
                return
            case _ if not isinstance(event, _TURN_EVENTS):
                return
            case _:
                pass
        if turn is None:
            if isinstance(event, ev.PermissionDecided):  # decided outside a turn: no span
                return
            turn = self._open(session, at)
        turn.seen = True
        match event:
            case ev.Tool(call_id=call_id, phase=phase, name=name, kind=kind, is_error=is_error):
                span = turn.tools.get(call_id)
                if span is None:
                    attributes: Attributes = {"corral.tool.name": name, "corral.tool.kind": kind,
                                              "corral.tool.call_id": call_id}
                    if self.capture_content and event.input is not None:
                        attributes["corral.tool.input"] = _text(event.input)
                    span = turn.tools[call_id] = spans.start("corral.tool", at, attributes, turn.span)
                if phase == "completed":
                    del turn.tools[call_id]
                    spans.end(span, at, {"corral.tool.outcome": "error" if is_error else "ok"},
                              "the tool call failed" if is_error else None)
            case ev.Permission(permission_id=pid, tool=tool, kind=kind, policy=policy):
                turn.permissions[pid] = spans.start(
                    "corral.permission", at, {"corral.permission.id": pid, "corral.permission.tool": tool,
                                              "corral.tool.kind": kind, "corral.permission.policy": policy},
                    turn.span)
            case ev.PermissionDecided(permission_id=pid, decision=decision, by=by, by_name=by_name):
                span = turn.permissions.pop(pid, None)
                if span is not None:
                    attributes = {"corral.permission.decision": decision, "corral.permission.by": by}
                    if by_name:
                        attributes["corral.permission.by_name"] = by_name
                    spans.end(span, at, attributes, None)
            case ev.Result():
                attributes = {**turn.extra, **_result_attributes(event)}
                if session.model:  # a harness may tell its model only once the turn began
                    attributes["gen_ai.request.model"] = session.model
                if turn.error_code is not None:
                    attributes["corral.error.code"] = turn.error_code
                if event.is_error:
                    self._end_children(spans, turn, at)
                    turn.pending_end = (at, attributes)
                else:
                    self._end_turn(spans, turn, at, attributes, None)
                    session.turn = None
            case _:
                pass

    @staticmethod
    def _end_pending(spans: SpanSink, session: _Session, pending: tuple[int, Attributes],
                     event: ev.Event | None) -> None:
        """End the session's errored turn at its result's time, with ``event``'s exit details
        when ``event`` is the ``exit`` that followed."""
        if session.turn is None:
            return
        end_at, ending = pending
        if isinstance(event, ev.Exit):
            ending["corral.exit.reason"] = event.reason
            if event.exit_code is not None:
                ending["corral.exit.code"] = event.exit_code
            if event.signal is not None:
                ending["corral.exit.signal"] = event.signal
        spans.end(session.turn.span, end_at, ending, "the turn ended in an error")
        session.turn = None

    def _end_turn(self, spans: SpanSink, turn: _Turn, at: int, attributes: Attributes,
                  error: str | None) -> None:
        self._end_children(spans, turn, at)
        spans.end(turn.span, at, attributes, error)

    @staticmethod
    def _end_children(spans: SpanSink, turn: _Turn, at: int) -> None:
        for span in turn.tools.values():
            spans.end(span, at, {"corral.tool.outcome": "incomplete"}, "the turn ended first")
        for span in turn.permissions.values():
            spans.end(span, at, {"corral.permission.decision": "cancelled"}, "the turn ended first")
        turn.tools.clear()
        turn.permissions.clear()


def _result_attributes(result: ev.Result) -> Attributes:
    usage = result.usage
    attributes: Attributes = {
        "corral.is_error": result.is_error,
        "gen_ai.usage.input_tokens": usage.input_tokens,
        "gen_ai.usage.output_tokens": usage.output_tokens,
        "gen_ai.usage.cache_read.input_tokens": usage.cache_read_tokens,
        "gen_ai.usage.cache_creation.input_tokens": usage.cache_write_tokens,
    }
    if result.stop_reason is not None:
        attributes["corral.stop_reason"] = result.stop_reason
    if result.cost_usd is not None:
        attributes["corral.cost_usd"] = result.cost_usd
    if result.duration_ms is not None:
        attributes["corral.duration_ms"] = result.duration_ms
    return attributes


def _text(value: Any) -> str:
    text = value if isinstance(value, str) else msgspec.json.encode(value).decode()
    return text[:_CONTENT_LIMIT]
