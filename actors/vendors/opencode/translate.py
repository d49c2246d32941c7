"""The sans-IO OpenCode translator: the session's SSE events and HTTP answers in, events and
HTTP calls out (over the virtual wire of ``wire``).

Theory of operation. One translator serves one attachment of a session to a shared ``opencode
serve`` (a new one per restart). ``start`` creates the OpenCode session (``POST /session`` with
corral's permission ruleset) or, when resuming, reads it (``GET /session/{id}``; a session the
server no longer has is created anew, with an ``error``). Its answer makes the translator
``ready`` and emits ``init`` whose ``vendor_session_id`` is OpenCode's ``ses_…`` id. Every call
carries ``?directory=<cwd>``, so one server serves sessions in several directories.

=================  ======================================================================
state              meaning
=================  ======================================================================
not ready          the create/read call is in flight
idle               ``prompt`` posts ``prompt_async`` (answered 204 at once)
turn               until ``session.status idle`` (or ``session.idle``) for this session
=================  ======================================================================

A turn ends at the first idle after its first ``busy`` (an idle before it is the tail of the
last turn). It ends with ``result``: ``interrupted`` after an abort (OpenCode's ``MessageAbortedError``),
``error`` after a ``session.error`` or an assistant message with an error, else ``end_turn``;
usage and cost are the sums of the turn's ``step-finish`` parts. Text and reasoning stream as
``assistant``/``thought`` deltas (``message.part.delta``); a part that never streamed comes out
whole when it is complete. Tool parts become ``tool`` events (running → started, later running
updates with output → updated, completed/error → completed). Steering is not offered (OpenCode
1.x has no steer call): the session holds prompts sent during a turn.

Permissions: ``permission.asked`` becomes ``permission`` (id = OpenCode's ``per_…``; tool = the
permission name, input = its metadata or patterns); ``decide`` replies ``once`` / ``always`` /
``reject``. ``interrupt`` and ``goodbye`` reject open requests and abort the turn. A
``permission.replied`` for a request still open here (answered by another OpenCode client) is
reported decided by ``session``.
"""

from __future__ import annotations

import itertools
from typing import Any
from urllib.parse import quote

import msgspec

from actors.harness import HarnessRequest, Output, Send
from protocol.errors import ProtocolError, SessionBusy, UnknownPermission
from protocol.events import (
    Assistant, Decision, Error, Init, Permission, PermissionDecided, Result, Thought, Tool,
    ToolKind, Usage,
)

from . import wire
from .errors import classify
from .launch import permission_rules, split_model

__all__ = ["OpenCodeTranslator", "tool_kind"]

OPTIONS = ["allow", "deny", "allow_always"]
_REPLIES: dict[str, str] = {"allow": "once", "allow_always": "always", "deny": "reject"}
_DECIDED: dict[str, Any] = {"once": "allow", "always": "allow_always", "reject": "deny"}
_KINDS: dict[str, ToolKind] = {
    "bash": "exec", "edit": "edit", "write": "edit", "patch": "edit", "multiedit": "edit",
    "apply_patch": "edit", "read": "read", "grep": "search", "glob": "search", "list": "search",
    "codesearch": "search", "external_directory": "read",
}


def tool_kind(name: str) -> ToolKind:
    """The coarse kind of an OpenCode tool or permission (unknown ones are ``other``)."""
    return _KINDS.get(name, "other")


class _Turn:
    def __init__(self) -> None:
        self.usage = Usage()
        self.cost = 0.0
        self.error: wire.ErrorInfo | None = None
        self.error_reported = False
        self.interrupted = False
        self.busy = False  # an idle before the turn's first busy is a stale one of the last turn
        self.messages: set[str] = set()  # assistant messages first seen during this turn


class OpenCodeTranslator:
    """The OpenCode ``Translator``: see the module docstring."""

    def __init__(self, request: HarnessRequest) -> None:
        self._request = request
        self._query = "?directory=" + quote(request.cwd, safe="")
        self._model = split_model(request.model) if request.model else None
        self._ids = itertools.count(1)
        self._calls: dict[int, str] = {}
        self._session: str | None = None
        self._turn: _Turn | None = None
        self._assistant: set[str] = set()  # assistant message ids of this attachment
        self._streamed: set[str] = set()  # part ids whose text streamed as deltas
        self._kinds: dict[str, str] = {}  # part id → part type (text / reasoning)
        self._tools: dict[str, str] = {}  # call id → last status reported
        self._asks: dict[str, str] = {}  # permission id → permission name

    @property
    def ready(self) -> bool:
        """True once the OpenCode session exists."""
        return self._session is not None

    @property
    def vendor_session_id(self) -> str | None:
        """OpenCode's session id (``ses_…``)."""
        return self._session

    def start(self, now: float) -> list[Output]:
        """Read the session to resume, or create one."""
        if self._request.resume:
            return [self._call("read", "GET", f"/session/{quote(self._request.resume, safe='')}")]
        return [self._create()]

    def receive(self, frame: bytes, now: float) -> list[Output]:
        """Translate one inbound line (an event of this session or an answer to a call)."""
        if not frame.strip():
            return []
        envelope = wire.decode(frame)
        if envelope.type == wire.ANSWER:
            return self._on_answer(envelope)
        handler = _EVENTS.get(envelope.type)
        return handler(self, envelope.properties) if handler is not None else []

    def prompt(self, text: str, now: float) -> list[Output]:
        """``prompt_async`` with ``text`` (and the model ``set_model`` chose)."""
        if self._session is None or self._turn is not None:
            raise SessionBusy("opencode cannot start a turn now (not ready, or a turn runs)")
        self._turn = _Turn()
        body: dict[str, Any] = {"parts": [{"type": "text", "text": text}]}
        if self._model is not None:
            body["model"] = {"providerID": self._model[0], "modelID": self._model[1]}
        return [self._call("prompt", "POST", f"/session/{self._session}/prompt_async", body)]

    def steer(self, text: str, now: float) -> list[Output] | None:
        """OpenCode 1.x cannot steer a running turn: the session holds the prompt."""
        return None

    def interrupt(self, now: float) -> list[Output]:
        """Reject open permission requests and abort the running turn."""
        out = self._reject_all()
        if self._turn is not None and self._session is not None:
            self._turn.interrupted = True
            out.append(self._call("abort", "POST", f"/session/{self._session}/abort"))
        return out

    def set_model(self, model: str, now: float) -> list[Output]:
        """Use ``model`` (``provider/model``) from the next prompt on."""
        self._model = split_model(model)
        return []

    def decide(self, permission_id: str, decision: Decision, now: float) -> list[Output]:
        """Reply to the permission request ``permission_id``."""
        if self._asks.pop(permission_id, None) is None:
            raise UnknownPermission(f"opencode has no open permission request {permission_id!r}")
        return [self._reply(permission_id, _REPLIES[decision])]

    def goodbye(self, now: float) -> list[Output]:
        """Before the session detaches: as ``interrupt``."""
        return self.interrupt(now)

    # --- calls ------------------------------------------------------------------------

    def _call(self, label: str, method: str, path: str, body: Any = None) -> Send:
        call_id = next(self._ids)
        self._calls[call_id] = label
        call = wire.Call(id=call_id, method=method, path=path + self._query, body=body)
        return Send(data=wire.encode_call(call))

    def _create(self) -> Send:
        body: dict[str, Any] = {}
        rules = permission_rules(self._request.permissions.mode)
        if rules:
            body["permission"] = rules
        return self._call("create", "POST", "/session", body)

    def _reply(self, permission_id: str, reply: str) -> Send:
        return self._call("reply", "POST", f"/permission/{quote(permission_id, safe='')}/reply",
                          {"reply": reply})

    def _reject_all(self) -> list[Output]:
        out: list[Output] = [self._reply(pid, "reject") for pid in self._asks]
        self._asks.clear()
        return out

    def _on_answer(self, answer: wire.Envelope) -> list[Output]:
        label = self._calls.pop(answer.id, None) if isinstance(answer.id, int) else None
        if label is None:
            raise ProtocolError(f"an answer to a call never made ({answer.id!r})")
        ok = 200 <= answer.status < 300
        if label in ("create", "read") and ok:
            session = wire.decode_as(answer.body, dict[str, Any], "session")
            if not isinstance(session.get("id"), str):
                raise ProtocolError("opencode answered a session without an id")
            self._session = session["id"]
            model = "/".join(self._model) if self._model else None
            return [Init(vendor_session_id=self._session, model=model, cwd=self._request.cwd,
                         tools=[])]
        if label == "read":
            return [Error(error_class="protocol", code="opencode.protocol.resume_failed",
                          message=f"opencode no longer has session {self._request.resume} "
                                  f"({answer.error or answer.status}); starting a new one"),
                    self._create()]
        if ok or label == "abort":
            return []
        failure = classify(answer.error or f"{label} answered HTTP {answer.status}: "
                           f"{bytes(answer.body)[:300].decode('utf-8', 'replace')}",
                           status=answer.status or None)
        if label == "create":
            raise ProtocolError(f"opencode could not create a session: {failure.message}")
        out: list[Output] = [failure.event()]
        if label == "prompt" and self._turn is not None:
            self._turn = None
            out.append(Result(stop_reason="error", is_error=True))
        return out

    # --- events -----------------------------------------------------------------------

    def _on_status(self, raw: msgspec.Raw) -> list[Output]:
        props = wire.decode_as(raw, dict[str, Any], "session.status")
        status = props.get("status")
        kind = status.get("type") if isinstance(status, dict) else None
        if kind == "busy" and self._turn is not None:
            self._turn.busy = True
        if kind == "idle":
            return self._end_turn()
        return []

    def _on_idle(self, raw: msgspec.Raw) -> list[Output]:
        return self._end_turn()

    def _end_turn(self) -> list[Output]:
        turn = self._turn
        if turn is None or not turn.busy:
            return []
        self._turn = None
        out: list[Output] = self._reject_all()
        error = turn.error
        if turn.interrupted or (error is not None and error.name == "MessageAbortedError"):
            stop, is_error = "interrupted", False
        elif error is not None:
            stop, is_error = "error", True
            if not turn.error_reported:
                out.append(classify(error.message, name=error.name).event())
        else:
            stop, is_error = "end_turn", False
        out.append(Result(stop_reason=stop, is_error=is_error, usage=turn.usage,
                          cost_usd=turn.cost if turn.cost else None))
        return out

    def _on_session_error(self, raw: msgspec.Raw) -> list[Output]:
        props = wire.decode_as(raw, dict[str, Any], "session.error")
        error = msgspec.convert(props.get("error") or {}, wire.ErrorInfo)
        if self._turn is not None:
            self._turn.error = error
        if error.name == "MessageAbortedError":
            return []
        if self._turn is not None:
            self._turn.error_reported = True
        return [classify(error.message, name=error.name).event()]

    def _on_message(self, raw: msgspec.Raw) -> list[Output]:
        info: wire.MessageInfo = wire.decode_as(raw, _MessageUpdated, "message.updated").info
        if info.role != "assistant":
            return []
        turn = self._turn
        if info.id not in self._assistant and turn is not None:
            turn.messages.add(info.id)  # first seen in this turn: its error is this turn's
        self._assistant.add(info.id)
        if info.error is not None and turn is not None and info.id in turn.messages:
            turn.error = info.error
        return []

    def _on_delta(self, raw: msgspec.Raw) -> list[Output]:
        props = wire.decode_as(raw, dict[str, Any], "message.part.delta")
        part_id, delta = props.get("partID"), props.get("delta")
        if props.get("messageID") not in self._assistant or not isinstance(delta, str) or not delta:
            return []
        if props.get("field", "text") != "text" or not isinstance(part_id, str):
            return []
        self._streamed.add(part_id)
        if self._kinds.get(part_id) == "reasoning":
            return [Thought(text=delta, delta=True)]
        return [Assistant(text=delta, delta=True)]

    def _on_part(self, raw: msgspec.Raw) -> list[Output]:
        part: wire.Part = wire.decode_as(raw, _PartUpdated, "message.part.updated").part
        if part.message_id not in self._assistant:
            return []  # the user's own prompt, or a message of an earlier attachment
        self._kinds[part.id] = part.type
        if part.type in ("text", "reasoning"):
            if "end" not in part.time or part.id in self._streamed or not part.text:
                return []
            self._streamed.add(part.id)
            whole = Thought if part.type == "reasoning" else Assistant
            return [whole(text=part.text, delta=False)]
        if part.type == "step-finish" and self._turn is not None and part.tokens is not None:
            t, used = part.tokens, self._turn.usage
            self._turn.usage = Usage(
                input_tokens=used.input_tokens + t.input,
                output_tokens=used.output_tokens + t.output + t.reasoning,
                cache_read_tokens=used.cache_read_tokens + t.cache.get("read", 0),
                cache_write_tokens=used.cache_write_tokens + t.cache.get("write", 0))
            self._turn.cost += part.cost
            return []
        if part.type == "tool" and part.state is not None and part.call_id:
            return self._on_tool(part.call_id, part.tool or "unknown", part.state)
        return []

    def _on_tool(self, call_id: str, name: str, state: wire.ToolState) -> list[Output]:
        seen = self._tools.get(call_id)
        kind = tool_kind(name)
        if state.status == "pending":
            return []
        if state.status == "running":
            self._tools[call_id] = "running"
            if seen is None:
                return [Tool(call_id=call_id, name=name, kind=kind, phase="started",
                             input=state.input)]
            output = state.metadata.get("output")
            return [Tool(call_id=call_id, name=name, kind=kind, phase="updated",
                         output=output)] if output else []
        if seen == "done":
            return []
        self._tools[call_id] = "done"
        out: list[Output] = []
        if seen is None:
            out.append(Tool(call_id=call_id, name=name, kind=kind, phase="started",
                            input=state.input))
        failed = state.status == "error"
        out.append(Tool(call_id=call_id, name=name, kind=kind, phase="completed",
                        input=state.input, output=state.error if failed else state.output,
                        is_error=failed))
        return out

    def _on_permission(self, raw: msgspec.Raw) -> list[Output]:
        asked: wire.PermissionAsked = wire.decode_as(raw, wire.PermissionAsked, "permission.asked")
        if asked.id in self._asks:
            return []
        self._asks[asked.id] = asked.permission
        details = asked.metadata or {"patterns": asked.patterns}
        return [Permission(permission_id=asked.id, tool=asked.permission,
                           kind=tool_kind(asked.permission), input=details,
                           options=list(OPTIONS))]

    def _on_replied(self, raw: msgspec.Raw) -> list[Output]:
        props = wire.decode_as(raw, dict[str, Any], "permission.replied")
        pid = props.get("requestID") or props.get("permissionID")
        if not isinstance(pid, str) or self._asks.pop(pid, None) is None:
            return []
        decision = _DECIDED.get(str(props.get("reply") or props.get("response")), "deny")
        return [PermissionDecided(permission_id=pid, decision=decision, by="session")]


class _MessageUpdated(msgspec.Struct, frozen=True):
    info: wire.MessageInfo


class _PartUpdated(msgspec.Struct, frozen=True):
    part: wire.Part


_EVENTS = {
    "session.status": OpenCodeTranslator._on_status,
    "session.idle": OpenCodeTranslator._on_idle,
    "session.error": OpenCodeTranslator._on_session_error,
    "message.updated": OpenCodeTranslator._on_message,
    "message.part.delta": OpenCodeTranslator._on_delta,
    "message.part.updated": OpenCodeTranslator._on_part,
    "permission.asked": OpenCodeTranslator._on_permission,
    "permission.replied": OpenCodeTranslator._on_replied,
}
"""Event type → handler; every other event is ignored."""
