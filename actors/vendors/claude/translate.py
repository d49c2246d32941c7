"""The sans-IO Claude Code translator: stream-json frames in, corral events and stdin frames out.

Theory of operation (facts checked against Claude Code 2.1.197):

* **Handshake.** The CLI prints nothing until it reads stdin. ``start`` sends the SDK's
  ``initialize`` control request; its ``control_response`` (success or error) comes back at once,
  without a model request, and sets ``ready``. The CLI would take a prompt without it; the
  answer proves the child is alive and speaks stream-json.
* **Turns.** ``prompt`` writes a user line; ``system/init`` opens each turn (``Init`` is emitted
  when session id, model, cwd or tools change) and ``result`` ends it.
* **Text.** With partial messages, text and thinking stream as ``stream_event`` deltas
  (``Assistant``/``Thought`` with ``delta=True``); the CLI then repeats each finished block as an
  ``assistant`` frame (one frame per block, before the block's ``content_block_stop``). A
  repeat of a streamed block is dropped, only an unstreamed tail is emitted; a block that was
  never streamed is emitted whole (``delta=False``). Subagent text is not shown.
* **Tools.** ``Tool(started)`` from the ``tool_use`` block of the ``assistant`` frame (whole
  input), ``Tool(completed)`` from the ``tool_result`` in the next ``user`` frame.
* **Permissions.** ``can_use_tool`` control requests become ``Permission`` events whose id is
  the request id; ``decide`` answers with a ``control_response``. A ``control_cancel_request``
  (the CLI withdrew it, e.g. on interrupt) drops it silently: the session cancels open
  permissions itself when the turn ends. Any other CLI control request gets an error answer.
* **Steering.** A user line sent during a turn is queued by the CLI. If the turn makes another
  model request (after a tool), the CLI injects it there; otherwise it runs it as a follow-up
  turn right after the ``result``. Its replay (``isReplay`` with our uuid) marks the moment it
  was taken up. So a ``result`` that arrives while a steer is still unreplayed is held and
  merged into the next one: the session sees one turn that ends when every steer was handled.
  A steer is waited for across one result at most, so a CLI that never replays cannot wedge
  the session.
* **A resume target Claude does not have.** ``--resume=ID`` of a conversation whose transcript
  was never written (Claude writes it some 50 ms after the fact, so a child killed early in its
  first turn leaves none) makes the CLI print an error ``result`` and exit before any turn. That
  becomes a classified ``Error`` (``claude.unknown.session_not_found``) and no ``Result``, and
  ``on_missing(ID)`` tells the driver, whose next launch for the session starts afresh.
* **Results.** Usage is per turn; ``total_cost_usd`` is cumulative per process, so the cost of a
  turn is the difference. An interrupt we asked for ends with ``stop_reason="interrupted"`` and
  no error; an error-shaped result (API errors arrive as ``subtype:"success"`` with
  ``is_error``) also yields a classified ``Error``.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import msgspec

from actors.harness import HarnessRequest, Output, Send
from actors.redaction import redact
from actors.vendors.claude import frames as f
from actors.vendors.claude.results import CostMeter, build_result, merge
from actors.vendors.claude.tools import always_rules, tool_kind, tool_output
from protocol.base import format_ts
from protocol.errors import ProtocolError, SessionBusy, UnknownPermission
from protocol.events import (
    Assistant,
    Decision,
    Error,
    Init,
    LimitWindow,
    Limits,
    Permission,
    Result,
    Thought,
    Tool,
)

__all__ = ["ClaudeTranslator", "DENY_MESSAGE", "PERMISSION_OPTIONS"]

PERMISSION_OPTIONS = ["allow", "deny", "allow_always"]
_NOT_FOUND = "claude.unknown.session_not_found"
DENY_MESSAGE = "The user denied this tool call."
"""What the model reads as the tool's error when a permission is denied."""


class _Streamed(msgspec.Struct):
    kind: str
    text: str = ""
    confirmed: bool = False


class _Call(msgspec.Struct, frozen=True):
    name: str
    input: Any


class _Pending(msgspec.Struct, frozen=True):
    tool: str
    input: Any
    suggestions: list[Any]


class ClaudeTranslator:
    """One Claude Code child's protocol state. ``new_uuid`` makes user-line uuids (tests pin it);
    ``on_missing`` hears the id of a resumed conversation the CLI says it does not have."""

    def __init__(self, request: HarnessRequest, *, new_uuid: Callable[[], str] | None = None,
                 on_missing: Callable[[str], None] | None = None) -> None:
        self._new_uuid = new_uuid or (lambda: str(uuid.uuid4()))
        self._on_missing = on_missing or (lambda session_id: None)
        self._resume = request.resume
        self._ready = False
        self._session_id: str | None = request.resume
        self._init: Init | None = None
        self._next_request = 0
        self._controls: dict[str, str] = {}
        self._turn = False
        self._interrupting = False
        self._steers: dict[str, bool] = {}
        self._held: Result | None = None
        self._error_tag: str | None = None
        self._stream_id: str | None = None
        self._streamed: list[_Streamed] = []
        self._tools: dict[str, _Call] = {}
        self._permissions: dict[str, _Pending] = {}
        self._withdrawn: set[str] = set()
        self._cost = CostMeter()

    @property
    def ready(self) -> bool:
        """True once the CLI answered ``initialize`` (with success or an error)."""
        return self._ready

    @property
    def vendor_session_id(self) -> str | None:
        """Claude's session id: the resumed one at first, then the one ``system/init`` reports."""
        return self._session_id

    # --- commands -------------------------------------------------------------------------

    def start(self, now: float) -> list[Output]:
        """The ``initialize`` handshake; its answer sets ``ready`` (no model request is made)."""
        return [self._control(f.Initialize())]

    def prompt(self, text: str, now: float) -> list[Output]:
        """A user line that starts a turn; ``SessionBusy`` if one runs (held results included)."""
        if self._turn:
            raise SessionBusy("a Claude turn is already running; steer instead")
        self._turn = True
        self._interrupting = False
        return [self._user_line(text, steer=False)]

    def steer(self, text: str, now: float) -> list[Output] | None:
        """A user line into the running turn (see the module notes); ``None`` when no turn runs."""
        if not self._turn:
            return None
        return [self._user_line(text, steer=True)]

    def interrupt(self, now: float) -> list[Output]:
        """The ``interrupt`` control request; the turn then ends with ``stop_reason="interrupted"``."""
        if not self._turn:
            return []
        self._interrupting = True
        return [self._control(f.Interrupt())]

    def set_model(self, model: str, now: float) -> list[Output]:
        """The ``set_model`` control request; Claude uses ``model`` from its next model request on."""
        return [self._control(f.SetModel(model=model))]

    def decide(self, permission_id: str, decision: Decision, now: float) -> list[Output]:
        """The ``control_response`` to a ``can_use_tool``; nothing if the CLI withdrew it.

        ``allow`` echoes the input, ``deny`` sends ``DENY_MESSAGE`` (the model sees it as the
        tool's error; the turn goes on), ``allow_always`` adds session-scoped rules
        (``tools.always_rules``). An id Claude never sent raises ``UnknownPermission``.
        """
        pending = self._permissions.pop(permission_id, None)
        if pending is None:
            if permission_id in self._withdrawn:
                return []
            raise UnknownPermission(f"Claude never asked for permission {permission_id!r}")
        answer: f.Allow | f.Deny
        if decision == "deny":
            answer = f.Deny(message=DENY_MESSAGE)
        elif decision == "allow_always":
            answer = f.Allow(updatedInput=pending.input,
                             updatedPermissions=always_rules(pending.tool, pending.suggestions))
        else:
            answer = f.Allow(updatedInput=pending.input)
        body = f.Success(request_id=permission_id, response=answer)
        return [Send(data=f.encode_line(f.ControlResponse(response=body)))]

    def goodbye(self, now: float) -> list[Output]:
        """An interrupt if a turn runs, so the close that follows finds the CLI idle."""
        # Closing stdin mid-turn does not stop Claude (it fails open permissions and carries on),
        # so a running turn is interrupted first; the CLI then withdraws its own prompts.
        return self.interrupt(now)

    # --- frames from the CLI --------------------------------------------------------------

    def receive(self, frame: bytes, now: float) -> list[Output]:
        """Translate one stdout line; a line that starts with ``{`` but is not a frame raises ``ProtocolError``."""
        line = frame.strip()
        if not line.startswith(b"{"):
            return []  # blank lines and debug noise some builds print on stdout
        try:
            kind = f.ENVELOPE.decode(line).type
            if kind not in f.KNOWN_TYPES:
                return []
            decoded = f.FRAME.decode(line)
        except msgspec.DecodeError as exc:
            raise ProtocolError(f"Claude wrote a frame that is not valid stream-json: {exc}") from None
        match decoded:
            case f.SystemFrame():
                return self._on_system(decoded)
            case f.StreamEventFrame():
                return self._on_stream(decoded)
            case f.AssistantFrame():
                return self._on_assistant(decoded)
            case f.UserFrame():
                return self._on_user(decoded)
            case f.ResultFrame():
                return self._on_result(decoded)
            case f.ControlRequestFrame():
                return self._on_control_request(decoded)
            case f.ControlResponseFrame():
                return self._on_control_response(decoded)
            case f.ControlCancelFrame():
                if self._permissions.pop(decoded.request_id, None) is not None:
                    self._withdrawn.add(decoded.request_id)
                return []
            case f.RateLimitFrame():
                return self._on_rate_limit(decoded.rate_limit_info)

    def _on_system(self, frame: f.SystemFrame) -> list[Output]:
        if frame.subtype != "init":
            return []
        if frame.session_id:
            self._session_id = frame.session_id
        init = Init(vendor_session_id=frame.session_id, model=frame.model, cwd=frame.cwd, tools=frame.tools)
        if init == self._init:
            return []
        self._init = init
        return [init]

    def _on_stream(self, frame: f.StreamEventFrame) -> list[Output]:
        if frame.parent_tool_use_id is not None:
            return []
        event = frame.event
        if event.type == "message_start":
            self._stream_id = event.message.id if event.message else None
            self._streamed = []
        elif event.type == "content_block_start" and event.content_block is not None:
            if event.content_block.type in ("text", "thinking"):
                self._streamed.append(_Streamed(event.content_block.type))
        elif event.type == "content_block_delta" and event.delta is not None:
            delta = event.delta
            if delta.type == "text_delta" and delta.text:
                self._extend("text", delta.text)
                return [Assistant(text=delta.text, delta=True)]
            if delta.type == "thinking_delta" and delta.thinking:
                self._extend("thinking", delta.thinking)
                return [Thought(text=delta.thinking, delta=True)]
        return []

    def _extend(self, kind: str, text: str) -> None:
        if not self._streamed or self._streamed[-1].kind != kind or self._streamed[-1].confirmed:
            self._streamed.append(_Streamed(kind))
        self._streamed[-1].text += text

    def _on_assistant(self, frame: f.AssistantFrame) -> list[Output]:
        if frame.error is not None:
            self._error_tag = frame.error  # a synthetic message carrying an API error's prose
            return []
        content = frame.message.content
        blocks = content if isinstance(content, list) else [f.Block(type="text", text=content)]
        subagent = frame.parent_tool_use_id is not None
        out: list[Output] = []
        for block in blocks:
            if block.type == "tool_use" and block.id:
                name = block.name or "unknown"
                self._tools[block.id] = _Call(name=name, input=block.input)
                out.append(Tool(call_id=block.id, name=name, kind=tool_kind(name), phase="started",
                                input=block.input))
            elif block.type in ("text", "thinking") and not subagent:
                whole = (block.text if block.type == "text" else block.thinking) or ""
                rest, delta = self._unstreamed(frame.message.id, block.type, whole)
                if rest:
                    out.append(Assistant(text=rest, delta=delta) if block.type == "text"
                               else Thought(text=rest, delta=delta))
        return out

    def _unstreamed(self, message_id: str | None, kind: str, whole: str) -> tuple[str, bool]:
        """The part of a finished block not yet streamed, and whether it is a delta."""
        if message_id is None or message_id != self._stream_id:
            return whole, False
        for streamed in self._streamed:
            if streamed.kind == kind and not streamed.confirmed:
                streamed.confirmed = True
                if whole.startswith(streamed.text):
                    return whole[len(streamed.text):], True
                return whole, False
        return whole, False

    def _on_user(self, frame: f.UserFrame) -> list[Output]:
        if frame.isReplay:
            if frame.uuid is not None:
                self._steers.pop(frame.uuid, None)
            return []
        content = frame.message.content
        out: list[Output] = []
        for block in content if isinstance(content, list) else []:
            if block.type != "tool_result" or not block.tool_use_id:
                continue
            call = self._tools.pop(block.tool_use_id, None)
            name = call.name if call else "unknown"
            out.append(Tool(call_id=block.tool_use_id, name=name, kind=tool_kind(name), phase="completed",
                            input=call.input if call else None, output=tool_output(block.content),
                            is_error=bool(block.is_error)))
        return out

    def _on_result(self, frame: f.ResultFrame) -> list[Output]:
        if frame.session_id:
            self._session_id = frame.session_id
        result, error = build_result(frame, interrupting=self._interrupting, error_tag=self._error_tag,
                                     cost=self._cost.turn_cost(frame.total_cost_usd))
        out: list[Output] = [error] if error is not None else []
        if error is not None and error.code == _NOT_FOUND and self._resume and not self._turn:
            self._on_missing(self._resume)  # the CLI exits now; no turn ran, so no Result
            self._session_id = None
            return out
        if self._held is not None:
            result = merge(self._held, result)
            self._held = None
        # A steer the CLI has not taken up yet will run as a follow-up turn: keep the turn open.
        waiting = [key for key, carried in self._steers.items() if not carried]
        self._steers = {key: True for key in waiting}
        if waiting and error is None:
            self._held = result
            self._interrupting = False
            return out
        self._steers.clear()
        self._turn = self._interrupting = False
        self._error_tag = None
        self._tools.clear()
        return [*out, result]

    def _on_control_request(self, frame: f.ControlRequestFrame) -> list[Output]:
        try:
            subtype = f.SUBTYPE.decode(frame.request).subtype
            if subtype == "can_use_tool":
                ask = f.CAN_USE_TOOL.decode(frame.request)
                self._permissions[frame.request_id] = _Pending(
                    tool=ask.tool_name, input=ask.input, suggestions=ask.permission_suggestions)
                return [Permission(permission_id=frame.request_id, tool=ask.tool_name,
                                   kind=tool_kind(ask.tool_name), input=ask.input,
                                   options=list(PERMISSION_OPTIONS))]
        except msgspec.DecodeError as exc:
            subtype = f"malformed ({exc})"
        reason = f"corral does not serve control request {subtype!r}"
        body = f.Failure(request_id=frame.request_id, error=reason)
        return [Send(data=f.encode_line(f.ControlResponse(response=body)))]

    def _on_control_response(self, frame: f.ControlResponseFrame) -> list[Output]:
        body = frame.response
        subtype = self._controls.pop(body.request_id or "", None)
        if subtype is None:
            return []  # an echo of our own answer to a permission (replay mode)
        if subtype == "initialize":
            self._ready = True
            return []
        if body.subtype == "error":
            return [Error(error_class="protocol", code="claude.protocol.control_error",
                          message=f"Claude refused {subtype}: {redact(body.error or 'no reason given')}")]
        return []

    def _on_rate_limit(self, info: f.RateLimitInfo) -> list[Output]:
        used = info.utilization * 100 if info.utilization is not None else None
        resets = format_ts(info.resetsAt) if info.resetsAt else None
        window = LimitWindow(name=info.rateLimitType or "unknown", used_percent=used, resets_at=resets)
        return [Limits(windows=[window])]

    # --- frames to the CLI ----------------------------------------------------------------

    def _user_line(self, text: str, *, steer: bool) -> Send:
        key = self._new_uuid()
        if steer:
            self._steers[key] = False
        line = f.UserLine(message=f.UserContent(content=text), uuid=key)
        return Send(data=f.encode_line(line))

    def _control(self, request: f.Initialize | f.Interrupt | f.SetModel) -> Send:
        self._next_request += 1
        request_id = f"corral_{self._next_request}"
        self._controls[request_id] = request.subtype
        return Send(data=f.encode_line(f.ControlRequest(request_id=request_id, request=request)))

