"""The sans-IO Codex app-server translator: JSON-RPC lines in, normalized events and frames out.

Theory of operation. One translator serves one ``codex app-server`` child. ``start`` sends
``initialize``; its result is answered with the ``initialized`` notification and ``thread/start``
(or ``thread/resume {threadId: request.resume}``), whose result makes the translator ``ready``
and emits ``init`` (``vendor_session_id`` is the thread id). Our requests carry ids 1, 2, … and
wait in ``_calls`` until Codex answers; Codex's own requests (approvals) use a separate id space.

========================  ==========================================================
state                     meaning
========================  ==========================================================
not ready                 handshake or thread request in flight
ready, idle               ``prompt`` sends ``turn/start``
turn pending              ``turn/start`` sent, its turn id not known yet
turn active               ``turn/started`` (or the ``turn/start`` result) gave the id
========================  ==========================================================

``steer`` needs the active turn id (``turn/steer {expectedTurnId}``) and returns ``None`` while
the turn is only pending. ``interrupt`` during a pending turn is sent as soon as the id is
known. ``set_model`` is stored and sent as ``model`` with the next ``turn/start`` (Codex keeps a
turn override for later turns; the stable API has no other model switch). ``turn/completed``
ends the turn with ``result``: stop reason ``end_turn``/``interrupted``/``error``, usage is the
growth of the thread's cumulative ``thread/tokenUsage/updated`` totals during the turn (OpenAI
counts cached input inside input, so ``input_tokens`` here excludes ``cache_read_tokens``),
``duration_ms`` from the turn, cost null.

Text streams as ``assistant``/``thought`` deltas, then the whole message (``delta: false``) when
its item completes. Approvals arrive as server→client requests (commands, file changes, extra
permissions, and MCP tool calls as elicitations; see ``approvals``); each becomes ``permission``
whose ``permission_id`` is Codex's own id for the approval (item or approval id, not the JSON-RPC
id, which restarts from 0 in every process; repeats get ``#2``, ``#3``, …), and ``decide``
answers it (allow → ``accept``, allow_always → ``acceptForSession``, deny → ``decline``). Server
requests we do not serve get a JSON-RPC error at once (other elicitations are declined), so
Codex never waits on us. ``interrupt`` and ``goodbye`` withdraw open approvals (answered
``cancel``: the session has reported them cancelled, so Codex's later ``serverRequest/resolved``
adds nothing) and interrupt the running turn. Errors in results of our requests become ``error``
events (a failed ``turn/start`` also ends the turn with an error ``result``; a failed resume
falls back to a new thread; a steer that lost the race with the end of its turn starts a new
turn instead).

The request params live in ``params`` (policy mapping), the turn accounting in ``accounting``,
the items of the thread (deltas, whole texts, tool phases) in ``stream``.
"""

from __future__ import annotations

import itertools
import secrets
from collections.abc import Callable
from typing import Any

import msgspec

from actors.harness import HarnessRequest, Output, Send
from actors.redaction import redact
from protocol.errors import ProtocolError, SessionBusy, UnknownPermission
from protocol.events import Decision, Error, Init, Limits, PermissionDecided, Result, UsageReport

from . import jsonrpc, messages as m
from .accounting import limit_window, turn_error, turn_usage
from .approvals import (
    DECLINE_ELICITATION, Approval, cancel_result, decision_result, permission_for,
)
from .errors import rpc_error
from .params import thread_policy, user_input
from .stream import DeltaKind, ItemStream


class CodexTranslator:
    """The Codex ``Translator``: see the module docstring for the states and the mapping."""

    def __init__(self, request: HarnessRequest, *, client_name: str = "corral",
                 client_version: str = "0") -> None:
        self._request = request
        self._client = {"name": client_name, "title": None, "version": client_version}
        self._policy = thread_policy(request)
        self._ids = itertools.count(1)
        self._calls: dict[int, tuple[str, str | None]] = {}
        self._approvals: dict[str, Approval] = {}
        self._issued: dict[str, int] = {}
        self._epoch = secrets.token_hex(4)
        self._stream = ItemStream()
        self._thread_id: str | None = None
        self._ready = False
        self._turn_pending = False
        self._turn_id: str | None = None
        self._last_turn: str | None = None
        self._interrupt_wanted = False
        self._turn_error_reported = False
        self._next_model: str | None = None
        self._total = m.Tokens()
        self._base = m.Tokens()

    @property
    def ready(self) -> bool:
        """True once the thread exists."""
        return self._ready

    @property
    def vendor_session_id(self) -> str | None:
        """The Codex thread id."""
        return self._thread_id

    @property
    def turn_id(self) -> str | None:
        """The id of the running turn, once Codex has told it."""
        return self._turn_id

    def start(self, now: float) -> list[Output]:
        """The ``initialize`` request."""
        return [self._call("initialize", {"clientInfo": self._client, "capabilities": None})]

    def receive(self, frame: bytes, now: float) -> list[Output]:
        """Translate one line from Codex's stdout."""
        line = frame.rstrip(b"\r\n")
        if not line.strip():
            return []
        msg = jsonrpc.decode_frame(line)
        if msg.is_response:
            return self._on_response(msg)
        if msg.is_request:
            return self._on_server_request(msg)
        return self._on_notification(msg)

    def prompt(self, text: str, now: float) -> list[Output]:
        """``turn/start`` with ``text`` (and the model stored by ``set_model``)."""
        if not self._ready or self._turn_pending or self._turn_id is not None:
            raise SessionBusy("codex cannot start a turn now (not ready or a turn runs)")
        return [self._start_turn(text)]

    def steer(self, text: str, now: float) -> list[Output] | None:
        """``turn/steer`` into the running turn, or ``None`` while its id is unknown."""
        if self._turn_id is None or self._thread_id is None:
            return None
        return [self._call("turn/steer", {"threadId": self._thread_id, "input": user_input(text),
                                          "expectedTurnId": self._turn_id}, text)]

    def interrupt(self, now: float) -> list[Output]:
        """Withdraw open approvals (the session reports them cancelled) and ``turn/interrupt``
        the running turn (deferred while its id is unknown)."""
        out: list[Output] = [Send(data=jsonrpc.response(a.request_id, cancel_result(a)))
                             for a in self._approvals.values()]
        self._approvals.clear()
        if self._turn_id is not None:
            out.append(self._interrupt_turn())
        else:
            self._interrupt_wanted = self._turn_pending
        return out

    def set_model(self, model: str, now: float) -> list[Output]:
        """Use ``model`` from the next turn on."""
        self._next_model = model
        return []

    def decide(self, permission_id: str, decision: Decision, now: float) -> list[Output]:
        """Answer the approval request ``permission_id``."""
        approval = self._approvals.pop(permission_id, None)
        if approval is None:
            raise UnknownPermission(f"codex has no open approval {permission_id!r}")
        result = decision_result(approval, decision)
        return [Send(data=jsonrpc.response(approval.request_id, result))]

    def goodbye(self, now: float) -> list[Output]:
        """Before stdin closes: withdraw open approvals and interrupt, as ``interrupt`` does."""
        return self.interrupt(now)

    def _call(self, method: str, params: Any, text: str | None = None) -> Send:
        request_id = next(self._ids)
        self._calls[request_id] = (method, text)
        return Send(data=jsonrpc.request(method, request_id, params))

    def _open_thread(self, *, resume: bool) -> Send:
        params: dict[str, Any] = {"cwd": self._request.cwd, **self._policy}
        model = self._next_model or self._request.model
        if model:
            params["model"] = model
        if self._request.instructions:
            params["developerInstructions"] = self._request.instructions
        if resume:
            return self._call("thread/resume", {"threadId": self._request.resume,
                                                "excludeTurns": True, **params})
        return self._call("thread/start", params)

    def _start_turn(self, text: str) -> Send:
        params: dict[str, Any] = {"threadId": self._thread_id, "input": user_input(text)}
        if self._next_model:
            params["model"] = self._next_model
            self._next_model = None
        self._turn_pending = True
        self._turn_error_reported = False
        return self._call("turn/start", params)

    def _interrupt_turn(self) -> Send:
        self._interrupt_wanted = False
        return self._call("turn/interrupt", {"threadId": self._thread_id, "turnId": self._turn_id})

    def _ours(self, thread_id: str | None) -> bool:
        return thread_id is None or thread_id == self._thread_id

    def _on_response(self, msg: jsonrpc.Frame) -> list[Output]:
        call = self._calls.pop(msg.id, None) if isinstance(msg.id, int) else None
        if call is None:
            raise ProtocolError(f"codex answered a request we never sent (id {msg.id!r})")
        method, text = call
        if not isinstance(msg.error, msgspec.UnsetType):
            return self._on_call_failed(method, text, msg.error)
        if method == "initialize":
            return [Send(data=jsonrpc.notification("initialized")),
                    self._open_thread(resume=bool(self._request.resume))]
        if method in ("thread/start", "thread/resume"):
            thread = jsonrpc.decode_as(msg.result, m.ThreadResponse, f"{method} result")
            self._thread_id = thread.thread.id
            self._ready = True
            return [Init(vendor_session_id=thread.thread.id,
                         model=thread.model or thread.thread.model,
                         cwd=thread.cwd or thread.thread.cwd, tools=[])]
        if method == "turn/start":
            turn = jsonrpc.decode_as(msg.result, m.TurnResponse, "turn/start result").turn
            return self._turn_known(turn.id)
        return []

    def _on_call_failed(self, method: str, text: str | None,
                        error: jsonrpc.RpcError) -> list[Output]:
        failure = rpc_error(method, error.code, error.message).event()
        if method == "turn/interrupt":
            return []  # the turn ended first: nothing left to interrupt
        if method == "thread/resume":
            lost = Error(code="codex.protocol.resume_failed", error_class="protocol",
                         message=f"codex could not resume the thread: {redact(error.message)}")
            return [lost, self._open_thread(resume=False)]
        if method == "turn/start":
            self._turn_pending = False
            self._interrupt_wanted = False
            return [failure, Result(stop_reason="error", is_error=True)]
        if method == "turn/steer" and text is not None and self._ready and not (
                self._turn_pending or self._turn_id is not None):
            return [self._start_turn(text)]
        return [failure]

    def _turn_known(self, turn_id: str) -> list[Output]:
        if turn_id == self._last_turn or not (self._turn_pending or self._turn_id is not None):
            return []
        if self._turn_id is None:
            self._turn_id = turn_id
            self._turn_pending = False
        if self._interrupt_wanted:
            return [self._interrupt_turn()]
        return []

    def _on_server_request(self, msg: jsonrpc.Frame) -> list[Output]:
        method = msg.method if isinstance(msg.method, str) else ""
        request_id = msg.id
        if not isinstance(request_id, (int, str)):
            raise ProtocolError("codex sent a request with a null id")
        found = permission_for(method, request_id, msg.params, self._stream.running,
                               epoch=self._epoch)
        if found is None and method == "mcpServer/elicitation/request":
            return [Send(data=jsonrpc.response(request_id, DECLINE_ELICITATION))]
        if found is None:
            return [Send(data=jsonrpc.error_response(
                request_id, jsonrpc.METHOD_NOT_FOUND, f"corral does not serve {method}"))]
        approval, event = found
        count = self._issued[event.permission_id] = self._issued.get(event.permission_id, 0) + 1
        if count > 1:
            event = msgspec.structs.replace(event, permission_id=f"{event.permission_id}#{count}")
        self._approvals[event.permission_id] = approval
        return [event]

    def _on_notification(self, msg: jsonrpc.Frame) -> list[Output]:
        method = msg.method if isinstance(msg.method, str) else ""
        handler = _NOTIFICATIONS.get(method)
        return handler(self, msg.params) if handler is not None else []

    def _on_turn_started(self, raw: msgspec.Raw) -> list[Output]:
        params = jsonrpc.decode_as(raw, m.TurnParams, "turn/started")
        if not self._ours(params.thread_id):
            return []
        if not self._turn_pending and self._turn_id is None:
            self._turn_pending = True  # a turn Codex started on its own
        return self._turn_known(params.turn.id)

    def _on_turn_completed(self, raw: msgspec.Raw) -> list[Output]:
        params = jsonrpc.decode_as(raw, m.TurnParams, "turn/completed")
        if not self._ours(params.thread_id):
            return []
        turn = params.turn
        self._last_turn = turn.id
        self._turn_id = None
        self._turn_pending = False
        self._interrupt_wanted = False
        out: list[Output] = []
        if turn.status == "failed" and turn.error is not None and not self._turn_error_reported:
            out.append(turn_error(turn.error).event())
        stop = {"completed": "end_turn", "interrupted": "interrupted"}.get(turn.status, "error")
        out.append(Result(stop_reason=stop, is_error=turn.status == "failed",
                          usage=turn_usage(self._total, self._base), cost_usd=None,
                          duration_ms=turn.duration_ms))
        self._base = self._total
        return out

    def _on_item(self, raw: msgspec.Raw, completed: bool) -> list[Output]:
        params = jsonrpc.decode_as(raw, m.ItemParams, "item notification")
        return self._stream.item(params.item, completed) if self._ours(params.thread_id) else []

    def _on_delta(self, raw: msgspec.Raw, kind: DeltaKind) -> list[Output]:
        params = jsonrpc.decode_as(raw, m.DeltaParams, "delta")
        if not self._ours(params.thread_id) or not params.delta:
            return []
        return self._stream.delta(params.item_id, params.delta, kind)

    def _on_mcp_progress(self, raw: msgspec.Raw) -> list[Output]:
        params = jsonrpc.decode_as(raw, m.ProgressParams, "item/mcpToolCall/progress")
        if not self._ours(params.thread_id):
            return []
        return [self._stream.tool_update(params.item_id, params.message)]

    def _on_error(self, raw: msgspec.Raw) -> list[Output]:
        params = jsonrpc.decode_as(raw, m.ErrorParams, "error")
        if params.will_retry or not self._ours(params.thread_id):
            return []
        self._turn_error_reported = True
        return [turn_error(params.error).event()]

    def _on_token_usage(self, raw: msgspec.Raw) -> list[Output]:
        params = jsonrpc.decode_as(raw, m.TokenUsageParams, "thread/tokenUsage/updated")
        if not self._ours(params.thread_id):
            return []
        if self._turn_id is not None and params.turn_id not in (None, self._turn_id):
            return []  # a figure of some other turn while ours runs: not ours to count
        self._total = params.token_usage.total
        if self._turn_id is None:
            # No turn runs yet: the restored totals of a resumed thread (they may arrive after
            # turn/start was sent, before the turn exists). They are the base of the next turn.
            self._base = self._total
            return []
        usage = turn_usage(self._total, self._base)
        return [UsageReport(input_tokens=usage.input_tokens, output_tokens=usage.output_tokens,
                            cache_read_tokens=usage.cache_read_tokens,
                            cache_write_tokens=usage.cache_write_tokens)]

    def _on_rate_limits(self, raw: msgspec.Raw) -> list[Output]:
        params = jsonrpc.decode_as(raw, m.RateLimitsParams, "account/rateLimits/updated")
        snapshot = params.rate_limits
        windows = [limit_window(window, name) for window, name in
                   ((snapshot.primary, "primary"), (snapshot.secondary, "secondary"))
                   if window is not None]
        return [Limits(windows=windows)] if windows else []

    def _on_resolved(self, raw: msgspec.Raw) -> list[Output]:
        params = jsonrpc.decode_as(raw, m.ResolvedParams, "serverRequest/resolved")
        permission_id = next((pid for pid, approval in self._approvals.items()
                              if approval.request_id == params.request_id), None)
        if permission_id is None:
            return []
        del self._approvals[permission_id]
        return [PermissionDecided(permission_id=permission_id, decision="cancelled", by="session")]


_Handler = Callable[[CodexTranslator, msgspec.Raw], list[Output]]

_NOTIFICATIONS: dict[str, _Handler] = {
    "turn/started": CodexTranslator._on_turn_started,
    "turn/completed": CodexTranslator._on_turn_completed,
    "item/started": lambda self, raw: self._on_item(raw, False),
    "item/completed": lambda self, raw: self._on_item(raw, True),
    "item/agentMessage/delta": lambda self, raw: self._on_delta(raw, "assistant"),
    "item/reasoning/summaryTextDelta": lambda self, raw: self._on_delta(raw, "thought"),
    "item/reasoning/textDelta": lambda self, raw: self._on_delta(raw, "thought"),
    "item/commandExecution/outputDelta": lambda self, raw: self._on_delta(raw, "tool"),
    "item/fileChange/outputDelta": lambda self, raw: self._on_delta(raw, "tool"),
    "item/mcpToolCall/progress": CodexTranslator._on_mcp_progress,
    "error": CodexTranslator._on_error,
    "thread/tokenUsage/updated": CodexTranslator._on_token_usage,
    "account/rateLimits/updated": CodexTranslator._on_rate_limits,
    "serverRequest/resolved": CodexTranslator._on_resolved,
}
"""Notification method → handler; every other notification is ignored."""
