"""The sans-IO pi translator: RPC-mode lines in, normalized events and command lines out.

Theory of operation. One translator serves one ``pi --mode rpc`` child. ``start`` sends
``get_state``; its answer makes the translator ``ready`` and emits ``init`` whose
``vendor_session_id`` is pi's session *file* (``--session FILE`` resumes it in a new process;
pi creates the file at that path if it never got written). Our commands carry ids ``corral:1``,
``corral:2``, … and wait in ``_calls`` for their ``response``.

=====================  =================================================================
state                  meaning
=====================  =================================================================
not ready              ``get_state`` in flight
idle                   ``prompt`` sends pi's ``prompt`` command
running                a run goes (``prompt`` sent, or ``agent_start`` seen); ``steer`` sends
                       ``prompt`` with ``streamingBehavior: "steer"``: pi delivers it after the
                       current tool calls, or, if the run just ended, starts a new run with it
                       (its ``agent_start`` keeps the turn going)
ending                 ``agent_end`` seen; a ``get_state`` *barrier* is in flight
=====================  =================================================================

Why the barrier: ``agent_end`` is not always the end. After a retryable model error pi writes
``agent_end`` and then ``auto_retry_start`` and runs again; and pi accepts the next ``prompt``
only once it is idle. pi answers commands in order after the lines it already wrote, so the
answer to a ``get_state`` sent on ``agent_end`` comes after any ``auto_retry_start`` of that run:
(A steer pi reads after its run's last steering check, but before the run is over, stays in
pi's queue until the next prompt: the barrier's ``pendingMessageCount`` tells, and the turn ends
with an ``error`` ``pi.protocol.steer_late`` saying so; RPC mode offers no way to run it now.)
a retry or a new ``agent_start`` cancels the ending (the run goes on), an answer with ``isStreaming: false`` ends the turn
with ``result``; ``isStreaming: true`` sends another barrier (at most ``_MAX_BARRIERS``).

``result``: stop reason from the run's last assistant message (``stop`` → ``end_turn``,
``length`` → ``max_tokens``, ``aborted`` → ``interrupted``, ``error`` → ``error`` with an ``error``
event classified by ``errors``); usage and cost are the sums over the run's assistant messages;
duration is left to the session. A run pi starts on its own (a retry after an interrupted wait,
a compaction retry) is reported like a prompted one.

Text streams as ``assistant``/``thought`` deltas; a message whose text never streamed comes out
whole at ``message_end``. ``tool_execution_*`` become ``tool`` events (started / updated with
the accumulated output / completed).

Permissions come from corral's gate extension (``permission_gate.js``): an
``extension_ui_request`` ``confirm`` titled ``corral.permission`` whose message is JSON
``{tool, callId, input}`` becomes ``permission`` (id = the request's id); ``decide`` answers
``confirmed: true`` for allow/allow_always and ``false`` for deny. Any other dialog (another
extension's) is dismissed at once (``cancelled: true``) so pi never waits on us; notices are
ignored. ``interrupt`` and ``goodbye`` dismiss open questions and ``abort`` the run.
"""

from __future__ import annotations

import itertools
from typing import Any

import msgspec

from actors.harness import HarnessRequest, Output, Send
from protocol.errors import BadRequest, ProtocolError, SessionBusy, UnknownPermission
from protocol.events import (
    Assistant, Decision, Error, Init, Permission, Result, Thought, Tool, ToolKind, Usage,
    UsageReport,
)

from . import wire
from .errors import classify, command_failed
from .launch import build_launch

__all__ = ["PERMISSION_TITLE", "PiTranslator", "tool_kind"]

PERMISSION_TITLE = "corral.permission"
"""The ``title`` of the gate extension's confirm dialogs."""

OPTIONS = ["allow", "deny", "allow_always"]
"""The decisions a pi permission offers (allow_always is remembered by the session's policy)."""

_MAX_BARRIERS = 20
_DIALOGS = frozenset({"select", "confirm", "input", "editor"})
_STOPS = {"stop": "end_turn", "length": "max_tokens", "aborted": "interrupted", "error": "error",
          "toolUse": "tool_use"}
_KINDS: dict[str, ToolKind] = {"bash": "exec", "edit": "edit", "write": "edit", "read": "read",
                               "grep": "search", "find": "search", "ls": "search"}


def tool_kind(name: str) -> ToolKind:
    """The coarse kind of one of pi's tools (unknown tools are ``other``)."""
    return _KINDS.get(name, "other")


class _Run:
    """What one agent run has accumulated toward its ``result``."""

    def __init__(self) -> None:
        self.usage = Usage()
        self.cost = 0.0
        self.priced = False
        self.last: wire.AgentMessage | None = None
        self.barrier: str | None = None  # id of the get_state sent on agent_end
        self.barriers = 0
        self.retrying = False
        self.interrupted = False
        self.streamed: set[int] = set()  # content indexes of the current message that streamed


class PiTranslator:
    """The pi ``Translator``: see the module docstring for the states and the mapping."""

    def __init__(self, request: HarnessRequest) -> None:
        build_launch(request)  # refuses bad options at session.create
        self._request = request
        self._ids = itertools.count(1)
        self._calls: dict[str, str] = {}
        self._asks: dict[str, str] = {}  # permission id → tool name
        self._run: _Run | None = None
        self._ready = False
        self._session_file: str | None = None
        self._provider: str | None = None

    @property
    def ready(self) -> bool:
        """True once ``get_state`` answered."""
        return self._ready

    @property
    def vendor_session_id(self) -> str | None:
        """pi's session file (what ``--session`` resumes)."""
        return self._session_file

    @property
    def running(self) -> bool:
        """True while a run goes (prompt sent or ``agent_start`` seen, until the ``result``)."""
        return self._run is not None

    def start(self, now: float) -> list[Output]:
        """``get_state``: the session file and model, for ``init``."""
        return [self._call("get_state")]

    def receive(self, frame: bytes, now: float) -> list[Output]:
        """Translate one line from pi's stdout."""
        line = frame.rstrip(b"\r\n")
        if not line.strip():
            return []
        match wire.decode(line):
            case wire.Response() as response:
                return self._on_response(response)
            case wire.AgentStart():
                if self._run is None:
                    self._run = _Run()  # a run pi started on its own
                self._run.barrier = None  # a steer that came after the end: the turn goes on
                return []
            case wire.MessageStart(message=message) if message.role == "assistant":
                if self._run is not None:
                    self._run.streamed.clear()
                return []
            case wire.MessageUpdate(assistant_message_event=delta):
                return self._on_delta(delta)
            case wire.MessageEnd(message=message) if message.role == "assistant":
                return self._on_assistant(message)
            case wire.ToolExecutionStart(tool_call_id=cid, tool_name=name, args=args):
                return [Tool(call_id=cid, name=name, kind=tool_kind(name), phase="started",
                             input=args)]
            case wire.ToolExecutionUpdate(tool_call_id=cid, tool_name=name, partial_result=part):
                return [Tool(call_id=cid, name=name, kind=tool_kind(name), phase="updated",
                             output=_text(part))]
            case wire.ToolExecutionEnd(tool_call_id=cid, tool_name=name, result=res, is_error=bad):
                return [Tool(call_id=cid, name=name, kind=tool_kind(name), phase="completed",
                             output=_text(res), is_error=bad)]
            case wire.AgentEnd(messages=messages):
                return self._on_agent_end(messages)
            case wire.AutoRetryStart():
                if self._run is not None:
                    self._run.barrier = None  # the run goes on
                    self._run.retrying = True
                return []
            case wire.AutoRetryEnd(success=False) if self._run is not None and self._run.retrying:
                # The retry was cancelled (an interrupt during its wait): no agent_end follows.
                return self._end(self._run, "interrupted" if self._run.interrupted else "error")
            case wire.ExtensionUiRequest() as ask:
                return self._on_ui_request(ask)
            case wire.ExtensionError(extension_path=path, event=event, error=error):
                return [Error(error_class="protocol", code="pi.protocol.extension_error",
                              message=f"extension {path} failed in {event}: {error}")]
        return []

    def prompt(self, text: str, now: float) -> list[Output]:
        """pi's ``prompt`` with ``text``; only when ready and no run goes."""
        if not self._ready or self._run is not None:
            raise SessionBusy("pi cannot start a turn now (not ready, or a run goes)")
        self._run = _Run()
        return [self._call("prompt", message=text)]

    def steer(self, text: str, now: float) -> list[Output] | None:
        """``prompt`` with ``streamingBehavior: "steer"`` into the running run; ``None`` once it
        is ending (the session holds it)."""
        if self._run is None or self._run.barrier is not None:
            return None
        return [self._call("prompt", label="steer", message=text, streamingBehavior="steer")]

    def interrupt(self, now: float) -> list[Output]:
        """Dismiss open questions (the session reports them cancelled) and ``abort`` the run."""
        out = self._dismiss_all()
        if self._run is not None:
            self._run.interrupted = True
            out.append(self._call("abort"))
        return out

    def set_model(self, model: str, now: float) -> list[Output]:
        """pi's ``set_model``: ``provider/id``, or a bare id of the current provider."""
        provider, slash, model_id = model.partition("/")
        if not slash:
            provider, model_id = self._provider or "", model
        if not provider or not model_id:
            raise BadRequest(f"pi needs a model as provider/id, not {model!r}")
        return [self._call("set_model", provider=provider, modelId=model_id)]

    def decide(self, permission_id: str, decision: Decision, now: float) -> list[Output]:
        """Answer the gate's question ``permission_id``."""
        if self._asks.pop(permission_id, None) is None:
            raise UnknownPermission(f"pi has no open question {permission_id!r}")
        return [Send(data=wire.command("extension_ui_response", id=permission_id,
                                       confirmed=decision in ("allow", "allow_always")))]

    def goodbye(self, now: float) -> list[Output]:
        """Before stdin closes (pi exits on EOF): as ``interrupt``."""
        return self.interrupt(now)

    # --- internals ---------------------------------------------------------------------

    def _call(self, kind: str, *, label: str | None = None, **fields: Any) -> Send:
        """Command ``kind``; its response is handled as ``label`` (default: ``kind``)."""
        call_id = f"corral:{next(self._ids)}"
        self._calls[call_id] = label or kind
        return Send(data=wire.command(kind, id=call_id, **fields))

    def _on_response(self, response: wire.Response) -> list[Output]:
        kind = self._calls.pop(response.id, None) if response.id is not None else None
        if kind is None:
            if response.command == "parse":
                raise ProtocolError(f"pi could not parse a command of ours: {response.error}")
            return []  # an answer to nothing we sent (another client of the same stdin)
        if not response.success:
            return self._on_refused(kind, response)
        if kind == "get_state":
            state: wire.State = wire.decode_data(response.data, wire.State, "get_state")
            return self._on_state(response.id, state)
        if kind == "set_model":
            info: wire.ModelInfo = wire.decode_data(response.data, wire.ModelInfo, "set_model")
            self._provider = info.provider
        return []

    def _on_refused(self, kind: str, response: wire.Response) -> list[Output]:
        if kind == "get_state" and not self._ready:
            raise ProtocolError(f"pi refused get_state: {response.error}")
        out: list[Output] = [command_failed(kind, response.error).event()]
        run = self._run
        if run is not None and kind == "prompt" and run.last is None:
            self._run = None
            out.append(Result(stop_reason="error", is_error=True))
        elif run is not None and kind == "get_state" and run.barrier == response.id:
            out += self._end(run, "error")
        return out

    def _on_state(self, call_id: str | None, state: wire.State) -> list[Output]:
        if state.model is not None:
            self._provider = state.model.provider
        if not self._ready:
            self._ready = True
            self._session_file = state.session_file
            model = f"{state.model.provider}/{state.model.id}" if state.model else None
            return [Init(vendor_session_id=state.session_file, model=model, cwd=self._request.cwd,
                         tools=[])]
        run = self._run
        if run is None or run.barrier != call_id:
            return []  # a barrier of an ending a retry cancelled
        if state.is_streaming and run.barriers < _MAX_BARRIERS:
            run.barrier = self._next_barrier(run)
            return [self._barrier_send(run.barrier)]
        last = run.last
        stop = _STOPS.get(last.stop_reason or "", last.stop_reason) if last else "end_turn"
        out = self._end(run, stop or "end_turn")
        if state.pending_message_count:
            out.insert(-1, Error(error_class="protocol", code="pi.protocol.steer_late",
                                 message=f"{state.pending_message_count} steered message(s) "
                                         "reached pi after its run's last check; pi delivers "
                                         "them with the next prompt"))
        return out

    def _on_agent_end(self, messages: list[wire.AgentMessage]) -> list[Output]:
        run = self._run
        if run is None:
            return []
        last = next((m for m in reversed(messages) if m.role == "assistant"), None)
        if last is not None:
            run.last = last
        run.retrying = False
        run.barrier = self._next_barrier(run)
        return [self._barrier_send(run.barrier)]

    def _next_barrier(self, run: _Run) -> str:
        run.barriers += 1
        call_id = f"corral:{next(self._ids)}"
        self._calls[call_id] = "get_state"
        return call_id

    @staticmethod
    def _barrier_send(call_id: str) -> Send:
        return Send(data=wire.command("get_state", id=call_id))

    def _end(self, run: _Run, stop: str) -> list[Output]:
        self._run = None
        out: list[Output] = []
        last = run.last
        if stop == "error" and last is not None and last.error_message:
            out.append(classify(last.error_message).event())
        out.extend(self._dismiss_all())
        out.append(Result(stop_reason=stop, is_error=stop == "error", usage=run.usage,
                          cost_usd=run.cost if run.priced else None))
        return out

    def _on_delta(self, delta: wire.AssistantEvent) -> list[Output]:
        if not delta.delta:
            return []
        if delta.type == "text_delta":
            self._mark_streamed(delta.content_index)
            return [Assistant(text=delta.delta, delta=True)]
        if delta.type == "thinking_delta":
            self._mark_streamed(delta.content_index)
            return [Thought(text=delta.delta, delta=True)]
        return []

    def _mark_streamed(self, index: int) -> None:
        if self._run is not None:
            self._run.streamed.add(index)

    def _on_assistant(self, message: wire.AgentMessage) -> list[Output]:
        run = self._run
        streamed = run.streamed if run is not None else set()
        out: list[Output] = []
        blocks = message.content if isinstance(message.content, list) else []
        for index, block in enumerate(blocks):
            if index in streamed:
                continue
            if block.type == "text" and block.text:
                out.append(Assistant(text=block.text, delta=False))
            elif block.type == "thinking" and block.thinking:
                out.append(Thought(text=block.thinking, delta=False))
        if run is not None:
            run.streamed.clear()
            run.last = message
            used = message.usage
            if used is not None and (used.input or used.output or used.cache_read):
                run.usage = Usage(input_tokens=run.usage.input_tokens + used.input,
                                  output_tokens=run.usage.output_tokens + used.output,
                                  cache_read_tokens=run.usage.cache_read_tokens + used.cache_read,
                                  cache_write_tokens=run.usage.cache_write_tokens + used.cache_write)
                run.cost += used.cost.total
                run.priced = run.priced or used.cost.total > 0
                out.append(UsageReport(**msgspec.structs.asdict(run.usage)))
        return out

    def _on_ui_request(self, ask: wire.ExtensionUiRequest) -> list[Output]:
        if ask.method not in _DIALOGS:
            return []  # notify, setStatus, setWidget, …: nothing to show
        if ask.method != "confirm" or ask.title != PERMISSION_TITLE:
            return [Send(data=wire.command("extension_ui_response", id=ask.id, cancelled=True))]
        question = _question(ask.message)
        tool = str(question.get("tool") or "unknown")
        self._asks[ask.id] = tool
        return [Permission(permission_id=ask.id, tool=tool, kind=tool_kind(tool),
                           input=question.get("input"), options=list(OPTIONS))]

    def _dismiss_all(self) -> list[Output]:
        out: list[Output] = [Send(data=wire.command("extension_ui_response", id=pid, cancelled=True))
                             for pid in self._asks]
        self._asks.clear()
        return out


def _text(result: wire.ToolResult | None) -> str:
    """A tool result's text blocks, joined."""
    if result is None:
        return ""
    return "".join(block.text or "" for block in result.content if block.type == "text")


def _question(message: str | None) -> dict[str, Any]:
    try:
        found = msgspec.json.decode(message or "{}")
    except msgspec.DecodeError:
        raise ProtocolError("the permission gate sent a question that is not JSON") from None
    if not isinstance(found, dict):
        raise ProtocolError("the permission gate sent a question that is not an object")
    return found
