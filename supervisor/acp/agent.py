"""``corral acp``: corral as an ACP v1 agent on stdio, a client of the daemon.

Theory of operation
-------------------
The editor starts this process and speaks newline-delimited JSON-RPC on its stdin/stdout
(``supervisor.acp.editor``: ``EditorLink``). One reader task classifies what arrives: each
request runs in a task of its own (``session/prompt`` lasts a whole turn), a response settles the
``session/request_permission`` that waits on its id. Every write to stdout goes through one lock,
one whole line at a time; nothing else ever writes there.

``initialize`` connects to the daemon (starting it first, as ``corral start`` does, when none
answers) with the ``hello`` client name ``acp:<clientInfo.name>``, so other clients see the
editor's prompts and decisions as that client's. Each ACP session *is* a corral session (same
id). Attaching one (``session/new``, ``load``, ``resume``) starts its follower
(``supervisor.acp.follow``): a subscription from seq 1 whose events go through ``SessionTurns``
(``supervisor.acp.turns``), which says what to send the editor, when a prompt is answered and
which permission to ask the editor. ``load`` answers once the replay is sent;
``resume`` replays quietly (to learn what is still undecided) and sends only what is new.

Nothing here outlives the process but what the daemon holds: a facade that crashed is started
again by the editor, and ``session/load`` rebuilds everything from the session's log. The daemon
connection dropping ends the facade (exit 1, one line on stderr) for the same reason.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from contextlib import aclosing
from pathlib import Path
from typing import Any, NamedTuple

import msgspec
import trio

from protocol.errors import CorralError, ProtocolError, UnknownSession
from protocol.jsonrpc import INTERNAL_ERROR, INVALID_PARAMS, METHOD_NOT_FOUND, Request, decode_as
from protocol.models import Detection, PermissionMode, Permissions, SessionInfo

from supervisor import __version__
from supervisor.client import Client, open_client

from . import schema as s
from .convert import (
    UnsupportedContent, mcp_servers, modes, prompt_text, session_result, worktree,
)
from .editor import EditorLink
from .follow import Attached, Waiter, follow
from .turns import Answered, SessionTurns

__all__ = ["AcpOptions", "RpcFailure", "serve"]

log = logging.getLogger("corral.acp")


class AcpOptions(NamedTuple):
    """What ``corral acp`` was started with."""

    state_dir: Path
    ensure_daemon: Callable[[], Awaitable[None]]
    """Starts the daemon if none answers (``daemonctl.start``)."""
    harness: str | None = None
    model: str | None = None
    permission_mode: PermissionMode = "ask"


class RpcFailure(Exception):
    """A request of the editor fails with this JSON-RPC error."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code, self.message, self.data = code, message, data


async def serve(options: AcpOptions, stdin: trio.abc.ReceiveStream,
                stdout: trio.abc.SendStream) -> None:
    """Serve the editor until it closes stdin (or the daemon connection drops: ``ConnectionLost``)."""
    async with trio.open_nursery() as nursery:
        agent = _Agent(options, stdout, nursery)
        await agent.editor.read(stdin)
        nursery.cancel_scope.cancel()


class _Agent:
    def __init__(self, options: AcpOptions, stdout: trio.abc.SendStream, nursery: trio.Nursery) -> None:
        self.options = options
        self._nursery = nursery
        self.editor = EditorLink(stdout, nursery, arrived=self._arrived, cancel=self._cancel)
        self._client: Client | None = None
        self._connected: trio.Event | None = None
        """Made when ``initialize`` arrives, set once it connected (or failed to): requests
        that come meanwhile wait for it."""
        self._connecting = False
        self._harnesses: list[Detection] | None = None
        self.sessions: dict[str, Attached] = {}
        self._handlers: dict[str, tuple[Any, Callable[[Any], Awaitable[msgspec.Struct | None]]]] = {
            "initialize": (s.InitializeParams, self.initialize),
            "authenticate": (dict[str, Any] | None, self.authenticate),
            "session/new": (s.NewParams, self.new),
            "session/load": (s.LoadParams, self.load),
            "session/resume": (s.LoadParams, self.resume),
            "session/list": (s.ListParams, self.list_sessions),
            "session/close": (s.SessionParams, self.close),
            "session/prompt": (s.PromptParams, self.prompt),
            "session/set_mode": (s.SetModeParams, self.set_mode),
            "session/set_model": (s.SetModelParams, self.set_model),
            "session/set_config_option": (s.SetConfigParams, self.set_config_option),
        }

    # --- the editor's requests ------------------------------------------------------------

    def _arrived(self, message: Request) -> None:
        if message.method == "initialize" and self._connected is None:
            self._connected = trio.Event()  # before any later request's task looks
        self._nursery.start_soon(self._serve, message)

    async def _serve(self, request: Request) -> None:
        handler = self._handlers.get(request.method)
        try:
            if handler is None:
                raise RpcFailure(METHOD_NOT_FOUND, f"method {request.method} is not served")
            params_type, handle = handler
            if request.method != "initialize":
                await self._wait_connected()
            try:
                params = decode_as(request.params, params_type, f"{request.method} params")
            except ProtocolError as exc:
                raise RpcFailure(INVALID_PARAMS, exc.message) from None
            result = await handle(params)
        except RpcFailure as exc:
            await self.editor.respond_error(request.id, exc.code, exc.message, exc.data)
        except CorralError as exc:
            code = -32002 if isinstance(exc, UnknownSession) else INTERNAL_ERROR
            await self.editor.respond_error(request.id, code, exc.message, {"code": str(exc.code)})
        else:
            await self.editor.respond(request.id, result if result is not None else {})

    # --- the daemon -------------------------------------------------------------------------

    async def _wait_connected(self) -> None:
        if self._connected is None:
            raise RpcFailure(INVALID_PARAMS, "initialize first")
        await self._connected.wait()

    @property
    def client(self) -> Client:
        if self._client is None:
            raise RpcFailure(INVALID_PARAMS, "initialize first")
        return self._client

    async def _hold_client(self, name: str, *, task_status: trio.TaskStatus[None]) -> None:
        await self.options.ensure_daemon()
        async with open_client(self.options.state_dir, name=name) as client:
            self._client = client
            task_status.started()
            await trio.sleep_forever()

    async def _harness_list(self) -> list[Detection]:
        if self._harnesses is None:
            self._harnesses = await self.client.harnesses()
        return self._harnesses

    async def _default_harness(self) -> str:
        if self.options.harness:
            return self.options.harness
        found = {d.harness: d for d in await self._harness_list()}
        claude = found.get("claude")
        return "claude" if claude is not None and claude.available else "native"

    async def _result(self, info: SessionInfo, *, with_id: bool) -> s.SessionResult:
        detection = next((d for d in await self._harness_list() if d.harness == info.harness), None)
        models = detection.features.models if detection is not None else []
        return session_result(info, models, with_id=with_id)

    # --- requests ---------------------------------------------------------------------------

    async def initialize(self, params: s.InitializeParams) -> s.InitializeResult:
        connected = self._connected
        if connected is None:  # not through _dispatch (which makes it): a bug of ours
            raise RpcFailure(INTERNAL_ERROR, "initialize arrived unannounced")
        if not self._connecting:
            self._connecting = True
            name = params.client_info.name if params.client_info is not None else "editor"
            try:
                await self._nursery.start(lambda task_status: self._hold_client(
                    f"acp:{name}", task_status=task_status))
            except BaseException:
                self._connected, self._connecting = None, False  # a later initialize tries again
                raise
            finally:
                connected.set()  # what waited sees the client, or "initialize first"
        await connected.wait()
        return s.InitializeResult(
            protocol_version=s.PROTOCOL_VERSION,
            agent_capabilities=s.AgentCapabilities(
                load_session=True,
                prompt_capabilities=s.PromptCapabilities(embedded_context=True),
                mcp_capabilities=s.McpCapabilities(http=True),
                session_capabilities=s.SessionCapabilities(list={}, resume={}, close={})),
            agent_info=s.AgentInfo(name="corral", title="corral", version=__version__))

    async def authenticate(self, params: dict[str, Any] | None) -> None:
        """Nothing to do: the daemon's token is read from the state directory."""
        del params

    async def new(self, params: s.NewParams) -> s.SessionResult:
        meta = (params.meta or {}).get("corral") or {}
        if not isinstance(meta, dict):
            raise RpcFailure(INVALID_PARAMS, "_meta.corral must be an object")
        harness = meta.get("harness") or await self._default_harness()
        info = await self.client.create(
            harness, params.cwd, name=meta.get("name"), model=meta.get("model") or self.options.model,
            permissions=Permissions(mode=self.options.permission_mode),
            mcp_servers=mcp_servers(params.mcp_servers) or None, options=meta.get("options"),
            workspace=worktree(meta.get("worktree")))
        await self._attach(info, show_replay=False)
        return await self._result(info, with_id=True)

    async def load(self, params: s.LoadParams) -> s.SessionResult:
        info = await self._reopen(params.session_id)
        await self._attach(info, show_replay=True)
        return await self._result(info, with_id=False)

    async def resume(self, params: s.LoadParams) -> s.SessionResult:
        info = await self._reopen(params.session_id)
        await self._attach(info, show_replay=False)
        return await self._result(info, with_id=False)

    async def list_sessions(self, params: s.ListParams) -> s.ListResult:
        listed = []
        for info in await self.client.sessions():
            if params.cwd is not None and info.cwd != params.cwd:
                continue
            listed.append(s.ListedSession(
                session_id=info.id, cwd=info.cwd, title=info.name,
                updated_at=await self._last_activity(info),
                meta={"corral": {"harness": info.harness, "state": info.state, "model": info.model}}))
        listed.sort(key=lambda item: item.updated_at or "", reverse=True)
        return s.ListResult(sessions=listed)

    async def close(self, params: s.SessionParams) -> None:
        await self.client.close(params.session_id)
        attached = self.sessions.pop(params.session_id, None)
        if attached is not None:
            attached.scope.cancel()

    async def prompt(self, params: s.PromptParams) -> s.PromptResult:
        attached = self._attached(params.session_id)
        try:
            text = prompt_text(params.prompt)
        except UnsupportedContent as exc:
            raise RpcFailure(INVALID_PARAMS, str(exc)) from None
        if not text:
            raise RpcFailure(INVALID_PARAMS, "the prompt has no text")
        token = attached.turns.prompt_sent(text)
        waiter = attached.prompts[token] = Waiter()
        try:
            await self.client.prompt(params.session_id, text)
            await waiter.done.wait()
        finally:
            attached.prompts.pop(token, None)
            if not waiter.done.is_set():
                attached.turns.prompt_failed(token)
        answer: Answered = waiter.answer
        if answer.error is not None:
            code, message = answer.error
            raise RpcFailure(INTERNAL_ERROR, message, {"code": code})
        return s.PromptResult(stop_reason=answer.stop_reason)

    async def set_mode(self, params: s.SetModeParams) -> None:
        await self.client.set_permissions(params.session_id, _mode(params.mode_id))

    async def set_model(self, params: s.SetModelParams) -> None:
        await self.client.set_model(params.session_id, params.model_id)

    async def set_config_option(self, params: s.SetConfigParams) -> s.SetConfigResult:
        if not isinstance(params.value, str):
            raise RpcFailure(INVALID_PARAMS, f"{params.config_id} takes a string value")
        if params.config_id == "mode":
            await self.client.set_permissions(params.session_id, _mode(params.value))
        elif params.config_id == "model":
            await self.client.set_model(params.session_id, params.value)
        else:
            raise RpcFailure(INVALID_PARAMS, f"no config option {params.config_id!r}")
        result = await self._result(await self.client.get(params.session_id), with_id=False)
        return s.SetConfigResult(config_options=result.config_options or [])

    async def _cancel(self, session_id: str) -> None:
        try:
            await self.client.interrupt(session_id)
        except (CorralError, RpcFailure) as exc:
            log.info("session/cancel of %s: %s", session_id, exc)

    # --- sessions ---------------------------------------------------------------------------

    def _attached(self, session_id: str) -> Attached:
        attached = self.sessions.get(session_id)
        if attached is None:
            raise RpcFailure(-32002, f"session {session_id} is not loaded: session/load it first")
        return attached

    async def _reopen(self, session_id: str) -> SessionInfo:
        """The session's info; an ended session whose harness can resume is reopened."""
        info = await self.client.get(session_id)
        if info.state in ("closed", "failed"):
            try:
                info = await self.client.resume(session_id)
            except CorralError as exc:
                log.info("session %s stays %s: %s", session_id, info.state, exc.message)
        return info

    async def _last_activity(self, info: SessionInfo) -> str:
        """The time of the session's newest event (its creation when it has none)."""
        if info.last_seq < 1:
            return info.created_at
        attached = self.sessions.get(info.id)
        if attached is not None and attached.last_ts is not None:  # its follower holds the subscription
            return attached.last_ts
        async with aclosing(self.client.events(info.id, info.last_seq, follow=False)) as frames:
            async for frame in frames:
                return frame.ts
        return info.created_at

    async def _attach(self, info: SessionInfo, *, show_replay: bool) -> None:
        """Follow the session from seq 1; returns once its history up to now is replayed (sent
        to the editor when ``show_replay``). An earlier follower of it is stopped first."""
        old = self.sessions.pop(info.id, None)
        if old is not None:
            old.scope.cancel()
            await old.finished.wait()
        attached = Attached(SessionTurns(info.id, info.cwd, self.client.connection_id))
        self.sessions[info.id] = attached
        await self._nursery.start(follow, self.client, self.editor, attached, info.last_seq, show_replay)


def _mode(mode_id: str) -> PermissionMode:
    if mode_id not in modes():
        raise RpcFailure(INVALID_PARAMS, f"no mode {mode_id!r}: one of {', '.join(modes())}")
    return mode_id  # type: ignore[return-value]

