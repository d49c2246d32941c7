"""The sans-IO ACP translator: JSON-RPC lines in, corral events, frames and ``Work`` out.

Theory of operation. One translator serves one agent child; the profile (``profiles``) says
what differs between agents. ``start`` sends ``initialize`` (protocol 1; ``fs``/``terminal``
client capabilities only when the session runs ``Work``); then ``authenticate`` if the profile
or ``options.auth_method`` names a method the agent offers; then the session opens:

* ``request.resume`` set: ``session/resume`` if the agent offers it (no replay), else
  ``session/load`` (the agent replays the conversation as updates, which are dropped: the
  session's log already has them; Gemini and Copilot send part of the replay after the load's
  answer, so conversation updates outside a turn are dropped too), else a new session with an
  ``error`` saying so. A failed
  resume or load is an ``error`` (``<harness>.protocol.resume_failed``) and a new session.
* otherwise ``session/new {cwd, mcpServers}`` (servers in ACP's shape, ``launch.mcp_servers``).

The session's result gives ``init`` (``vendor_session_id`` = ACP's ``sessionId``; the model the
agent reports) and then the setup requests: ``session/set_mode`` / ``session/set_config_option``
for the permission mode (per profile), ``session/set_model`` when ``model`` is not passed on
the command line. ``ready`` once every setup request is answered (failures are ``error``
events, not fatal).

========================  ==========================================================
state                     meaning
========================  ==========================================================
not ready                 handshake, auth, session or setup requests in flight
ready, idle               ``prompt`` sends ``session/prompt``
turn running              its ``session/prompt`` is unanswered; the answer is ``result``
========================  ==========================================================

``steer`` is ``None`` (ACP v1 cannot add to a running turn: the session holds the prompt).
``interrupt`` answers every open permission request ``cancelled`` (ACP requires it), refuses
writes still waiting for a decision, and sends ``session/cancel``; the agent answers the prompt
``cancelled``, which is ``result {stop_reason: "interrupted"}`` (an error answer after a cancel
is ``interrupted`` too; a ``cancelled`` corral did not ask for is the agent ending its own turn,
``end_turn``: codex-acp does so when a permission is refused). ``set_model`` uses ``session/set_model`` when the agent listed models,
else a ``model`` config option, else it is ``unsupported``; before the session opens it is kept
for the setup. Updates map as ``updates`` says, permissions as ``permissions`` says, and
``fs``/``terminal`` requests as ``client`` says. Agent requests corral does not serve get
"method not found" at once, so the agent never waits on us.

Usage comes from the prompt answer's ``usage`` (unstable ACP; per session with the
``usage_cumulative`` quirk, so the turn's share is the growth) or Gemini's ``_meta.quota``.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from typing import Any

import msgspec

from actors.harness import HarnessRequest, Output, WorkOutput
from actors.redaction import redact
from protocol import jsonrpc
from protocol.errors import ProtocolError, SessionBusy, Unsupported, UnknownPermission
from protocol.events import Decision, Error, Init, Result, Usage

from . import wire
from .client import METHODS as CLIENT_METHODS, ClientSide
from .errors import classify
from .launch import mcp_servers
from .permissions import CANCELLED, choose, permission_event
from .profiles import Profile
from .rpc import Rpc
from .updates import Updates, turn_usage

__all__ = ["AcpTranslator"]

_CONVERSATION = frozenset({"user_message_chunk", "agent_message_chunk", "agent_thought_chunk",
                           "tool_call", "tool_call_update", "plan"})
"""Updates that are part of a conversation: outside a turn they can only be a replay."""


class _Ask(msgspec.Struct):
    request_id: jsonrpc.RequestId
    options: list[wire.PermissionOption]
    tool_call_id: str


class AcpTranslator:
    """The ACP ``Translator``: see the module docstring."""

    def __init__(self, request: HarnessRequest, profile: Profile, *, client_name: str = "corral",
                 client_version: str = "0",
                 on_open: Callable[[str, list[str]], None] | None = None) -> None:
        self._request = request
        self._profile = profile
        self._client_info = {"name": client_name, "version": client_version}
        self._on_open = on_open
        self._rpc = Rpc()
        self._calls: dict[int, str] = {}
        self._epoch = secrets.token_hex(3)
        self._client = ClientSide(self._rpc, request.cwd, enabled=request.runs_work,
                                  missing_empty="missing_file_empty" in profile.quirks,
                                  epoch=self._epoch, state_dir=request.state_dir)
        self._updates = Updates(name_in_id="tool_name_in_id" in profile.quirks)
        self._caps = wire.InitializeResult(protocol_version=wire.PROTOCOL_VERSION)
        self._session_id: str | None = None
        self._models: wire.Models | None = None
        self._config: list[wire.ConfigOption] = []
        self._want_model = request.model if profile.model_arg is None else None
        self._setup = 0
        self._ready = False
        self._loading = False
        self._turn: int | None = None
        self._interrupted = False
        self._asks: dict[str, _Ask] = {}
        self._issued: dict[str, int] = {}
        self._seen_usage = wire.PromptUsage()

    @property
    def ready(self) -> bool:
        """True once the session is open and set up."""
        return self._ready

    @property
    def vendor_session_id(self) -> str | None:
        """ACP's ``sessionId``."""
        return self._session_id

    def start(self, now: float) -> list[Output]:
        """The ``initialize`` request."""
        return [self._call("initialize", {
            "protocolVersion": wire.PROTOCOL_VERSION, "clientInfo": self._client_info,
            "clientCapabilities": self._client.capabilities()})]

    def receive(self, frame: bytes, now: float) -> list[WorkOutput]:
        """Translate one line from the agent's stdout."""
        line = frame.strip()
        if not line:
            return []
        try:
            msg = self._rpc.receive(line)
        except ProtocolError as exc:
            raise ProtocolError(f"{self._profile.name}: {exc.message}") from None
        match msg:
            case jsonrpc.Response(method=method, result=result):
                return self._on_result(method or "", result)
            case jsonrpc.ErrorResponse(method=method, error=error):
                return self._on_error(method or "", error)
            case jsonrpc.Request(id=rid, method=method, params=params):
                return self._on_request(rid, method, params)
            case jsonrpc.Notification(method="session/update", params=params):
                update = jsonrpc.decode_as(params, wire.UpdateParams, "session/update")
                if update.session_id not in (None, self._session_id):
                    return []
                if (self._loading or self._turn is None) \
                        and update.update.session_update in _CONVERSATION:
                    return []  # a replay of the loaded conversation (Gemini sends some late)
                return list(self._updates.update(update.update))
        return []

    def prompt(self, text: str, now: float) -> list[Output]:
        """``session/prompt`` with ``text``."""
        if not self._ready or self._turn is not None:
            raise SessionBusy(f"{self._profile.name} cannot start a turn now")
        self._interrupted = False
        request_id, send = self._rpc.call("session/prompt", {
            "sessionId": self._session_id, "prompt": [{"type": "text", "text": text}]})
        self._calls[request_id] = "session/prompt"
        self._turn = request_id
        return [send]

    def steer(self, text: str, now: float) -> list[Output] | None:
        """ACP v1 has no way into a running turn: the session holds the prompt."""
        return None

    def interrupt(self, now: float) -> list[WorkOutput]:
        """Withdraw open requests and ``session/cancel`` the running turn."""
        out = self._withdraw()
        if self._turn is not None and self._session_id is not None:
            self._interrupted = True
            out.append(self._rpc.notify("session/cancel", {"sessionId": self._session_id}))
        return out

    def set_model(self, model: str, now: float) -> list[Output]:
        """``session/set_model`` (or the ``model`` config option); kept until the session opens."""
        if self._session_id is None:
            self._want_model = model
            return []
        send = self._model_call(model)
        if send is None:
            raise Unsupported(f"{self._profile.name} offers no way to change the model")
        return [send]

    def decide(self, permission_id: str, decision: Decision, now: float) -> list[WorkOutput]:
        """Answer the permission request ``permission_id``."""
        mine = self._client.decide(permission_id, decision)
        if mine is not None:
            return mine
        ask = self._asks.pop(permission_id, None)
        if ask is None:
            raise UnknownPermission(f"{self._profile.name} has no open request {permission_id!r}")
        if decision != "deny" and self._updates.kind(ask.tool_call_id) in ("edit", None):
            self._client.approve(self._updates.paths(ask.tool_call_id),
                                 always=decision == "allow_always")
        return [self._rpc.respond(ask.request_id, choose(ask.options, decision))]

    def goodbye(self, now: float) -> list[WorkOutput]:
        """Before stdin closes: withdraw open requests and cancel the running turn."""
        return self.interrupt(now)

    def finished(self, work_id: int, outcome: Any, now: float) -> list[WorkOutput]:
        """A ``Work`` job ended: answer the agent (and report a write)."""
        return self._client.finished(work_id, outcome)

    # --- our requests and their answers ------------------------------------------------------

    def _call(self, method: str, params: Any) -> Output:
        request_id, send = self._rpc.call(method, params)
        self._calls[request_id] = method
        return send

    def _on_result(self, method: str, raw: msgspec.Raw) -> list[WorkOutput]:
        match method:
            case "initialize":
                self._caps = jsonrpc.decode_as(raw, wire.InitializeResult, "initialize result")
                if self._caps.protocol_version != wire.PROTOCOL_VERSION:
                    return [Error(code=f"{self._profile.name}.protocol.version",
                                  error_class="protocol",
                                  message=f"the agent speaks ACP {self._caps.protocol_version}, "
                                          f"corral speaks {wire.PROTOCOL_VERSION}")]
                auth = self._auth_method()
                if auth is not None:
                    return [self._call("authenticate", {"methodId": auth})]
                return self._open()
            case "authenticate":
                return self._open()
            case "session/new" | "session/load" | "session/resume":
                self._loading = False
                return self._opened(jsonrpc.decode_as(raw, wire.SessionResult, method))
            case "session/set_model" | "session/set_mode" | "session/set_config_option":
                return self._setup_done()
            case "session/prompt":
                done = jsonrpc.decode_as(raw, wire.PromptResult, "session/prompt result")
                return self._turn_ended(self._stop_reason(done.stop_reason), self._usage(done))
        return []

    def _on_error(self, method: str, error: jsonrpc.RpcError) -> list[WorkOutput]:
        failure = classify(self._profile.name, method, error.code, error.message, error.data)
        match method:
            case "session/load" | "session/resume":
                self._loading = False
                lost = Error(code=f"{self._profile.name}.protocol.resume_failed",
                             error_class="protocol",
                             message=f"the agent could not resume its session: "
                                     f"{redact(failure.message)}")
                return [lost, self._call("session/new", self._session_params())]
            case "session/set_model" | "session/set_mode" | "session/set_config_option":
                return [failure, *self._setup_done()]
            case "session/prompt":
                if self._interrupted:
                    return self._turn_ended("interrupted", Usage())
                return [failure, *self._turn_ended("error", Usage(), is_error=True)]
            case "session/cancel":
                return []
        return [failure]

    def _auth_method(self) -> str | None:
        wanted = self._request.options.get("auth_method") or self._profile.auth_method
        offered = {method.id for method in self._caps.auth_methods}
        return wanted if isinstance(wanted, str) and wanted in offered else None

    def _session_params(self) -> dict[str, Any]:
        return {"cwd": self._request.cwd, "mcpServers": mcp_servers(self._request.mcp_servers)}

    def _open(self) -> list[WorkOutput]:
        resume = self._request.resume
        caps = self._caps.agent_capabilities
        if resume and caps.session_capabilities is not None \
                and caps.session_capabilities.resume is not None:
            return [self._call("session/resume", {"sessionId": resume, **self._session_params()})]
        if resume and caps.load_session:
            self._loading = True
            self._session_id = resume
            return [self._call("session/load", {"sessionId": resume, **self._session_params()})]
        new = self._call("session/new", self._session_params())
        if not resume:
            return [new]
        return [Error(code=f"{self._profile.name}.protocol.resume_failed", error_class="protocol",
                      message="the agent cannot resume a session: a new one starts"), new]

    def _opened(self, result: wire.SessionResult) -> list[WorkOutput]:
        self._session_id = result.session_id or self._session_id or self._request.resume
        if self._session_id is None:
            raise ProtocolError(f"{self._profile.name} opened a session without an id")
        self._models = result.models or self._models
        self._config = result.config_options or self._config
        model = (self._models.current_model_id if self._models else None) or next(
            (o.current_value for o in self._config
             if o.category == "model" and isinstance(o.current_value, str)),
            None) or self._request.model
        init = Init(vendor_session_id=self._session_id, model=model, cwd=self._request.cwd)
        self._updates.init = init
        self._updates.mode = result.modes.current_mode_id if result.modes else None
        if self._on_open is not None:
            self._on_open(self._session_id, self.models())
        out: list[WorkOutput] = [init, *self._setup_calls(result)]
        if self._setup == 0:
            self._ready = True
        return out

    def models(self) -> list[str]:
        """The model ids the agent offered when the session opened."""
        return wire.offered_models(self._models, self._config)

    def _setup_calls(self, result: wire.SessionResult) -> list[Output]:
        out: list[Output] = []
        mode = self._request.permissions.mode
        mode_id = self._profile.modes.get(mode)
        if mode_id is not None and result.modes is not None \
                and result.modes.current_mode_id != mode_id:
            out.append(self._call("session/set_mode",
                                  {"sessionId": self._session_id, "modeId": mode_id}))
        config = self._profile.config.get(mode)
        if config is not None and any(o.id == config[0] for o in self._config):
            out.append(self._call("session/set_config_option", {
                "sessionId": self._session_id, "configId": config[0], "value": config[1]}))
        if self._want_model:
            send = self._model_call(self._want_model)
            self._want_model = None
            if send is not None:
                out.append(send)
        self._setup = len(out)
        return out

    def _model_call(self, model: str) -> Output | None:
        if self._models is not None:
            return self._call("session/set_model",
                              {"sessionId": self._session_id, "modelId": model})
        option = next((o for o in self._config if o.category == "model"), None)
        if option is None:
            return None
        return self._call("session/set_config_option",
                          {"sessionId": self._session_id, "configId": option.id, "value": model})

    def _setup_done(self) -> list[WorkOutput]:
        if self._setup > 0:
            self._setup -= 1
            self._ready = self._setup == 0
        return []

    def _stop_reason(self, stop: str) -> str:
        """ACP's ``cancelled`` is ``interrupted`` when corral interrupted the turn; otherwise the
        agent ended its own turn (codex-acp after a refused permission) and it ended normally."""
        if stop == "cancelled":
            return "interrupted" if self._interrupted else "end_turn"
        return stop

    def _turn_ended(self, stop: str, usage: Usage, *, is_error: bool = False) -> list[WorkOutput]:
        self._turn = None
        self._interrupted = False
        self._client.turn_ended()
        return [*self._updates.turn_ended(),
                Result(stop_reason=stop, is_error=is_error, usage=usage)]

    def _usage(self, done: wire.PromptResult) -> Usage:
        usage, self._seen_usage = turn_usage(done, self._seen_usage,
                                             cumulative="usage_cumulative" in self._profile.quirks)
        return usage

    # --- the agent's requests ----------------------------------------------------------------

    def _on_request(self, request_id: jsonrpc.RequestId, method: str,
                    params: msgspec.Raw) -> list[WorkOutput]:
        if method == "session/request_permission":
            ask = jsonrpc.decode_as(params, wire.PermissionRequest, method)
            call = ask.tool_call
            out: list[WorkOutput] = list(self._updates.tool(call, announce_only=True))
            key = call.tool_call_id or f"{self._epoch}:{request_id}"
            count = self._issued[key] = self._issued.get(key, 0) + 1
            permission_id = key if count == 1 else f"{key}#{count}"
            self._asks[permission_id] = _Ask(request_id=request_id, options=ask.options,
                                             tool_call_id=call.tool_call_id)
            tool = self._updates.name_of(call.tool_call_id) or call.kind or "tool"
            kind = self._updates.kind(call.tool_call_id) or "other"
            tool_input = self._updates.input_of(call.tool_call_id)
            out.append(permission_event(permission_id, tool, kind, tool_input, ask.options))
            return out
        if method in CLIENT_METHODS:
            return self._client.request(method, request_id, params)
        return [self._rpc.error(request_id, jsonrpc.METHOD_NOT_FOUND,
                                f"corral does not serve {method}")]

    def _withdraw(self) -> list[WorkOutput]:
        out: list[WorkOutput] = [self._rpc.respond(ask.request_id, dict(CANCELLED))
                                 for ask in self._asks.values()]
        self._asks.clear()
        return [*out, *self._client.withdraw()]
