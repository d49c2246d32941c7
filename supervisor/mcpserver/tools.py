"""The ``corral_*`` MCP tools, as one implementation over the daemon's client protocol.

Every call opens its own connection to the daemon (``connect``, named ``mcp:<the MCP client's
name>`` in ``hello``): a session and its permissions live in the daemon only, every other client
sees them, and two calls on one session (a ``corral_prompt`` waiting while ``corral_read_events``
reads) never share a subscription. Each tool answers one JSON object; a call the daemon refuses
raises its ``CorralError`` (the server turns it into an ``isError`` result led by the code).

``corral_prompt`` (``_prompt``) subscribes from the seq after the newest one that existed before
it sends the prompt, so no event of its turn can be missed, and follows the turn with
``turn.PromptTurn``. A ``permission`` request is only a stop once every event the same session
step wrote has been read: the policy answers a request in the step that reports it, so the
tool reads up to the ``last_seq`` that ``session.get`` gives after the request, and only a
request still open there waits for someone.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager, aclosing
from typing import Annotated, Any, Protocol

import msgspec
import trio

from protocol.errors import AlreadyDecided, BadRequest, CorralError, UnknownPermission
from protocol.events import Assistant, Decision, Event, Permission, SessionState, Status, Thought
from protocol.messages import SessionCreate, WorkspaceDiff, WorkspaceMerge
from protocol.models import Permissions, PermissionMode, WorkspaceSpec
from protocol.requests import MergeStrategy

from supervisor.client import Client
from supervisor.mcpserver.turn import Digest, PromptTurn, permission_view

__all__ = ["DEFAULT_WAIT", "TOOLS", "AskLater", "Caller", "Connect", "InputRequired", "Resume",
           "ToolSpec", "Tools"]

DEFAULT_WAIT = 600.0
"""Seconds ``corral_prompt`` waits for the turn's result by default."""
MAX_EVENTS = 1000
HEARTBEAT = 10.0
"""Seconds between two progress notifications of a turn that shows no step meanwhile (a long
model call): a client that resets its tool timeout on progress keeps waiting."""
"""The most events one ``corral_read_events`` call returns."""

Connect = Callable[[str], AbstractAsyncContextManager[Client]]
"""Opens a connection to the daemon whose ``hello`` names the client as given."""


class AskLater(Exception):
    """Raised by ``Caller.ask``: the client asks its user between two rounds of the call (MCP
    2026-07-28's ``input_required``), so the call answers now and is made again with the answer."""


class InputRequired(Exception):
    """``corral_prompt`` needs the user's decision on ``permission`` first; the call is made again
    with ``Resume(from_seq, permission_id, decision)``."""

    def __init__(self, permission: Permission, session_id: str, from_seq: int) -> None:
        super().__init__(permission.permission_id)
        self.permission = permission
        self.session_id = session_id
        self.from_seq = from_seq


class Resume(msgspec.Struct, frozen=True, kw_only=True):
    """A ``corral_prompt`` made again after ``InputRequired``: its turn's first seq, and the
    user's decision on the permission (``None``: the user did not decide)."""

    from_seq: int
    permission_id: str
    decision: Decision | None = None


class Caller(Protocol):
    """The MCP client behind one tool call: its name, its progress token, its user."""

    @property
    def name(self) -> str: ...

    async def progress(self, done: float, message: str) -> None:
        """Report progress, ``done`` increasing from call to call (nothing when the call
        carried no progress token)."""

    async def ask(self, permission: Permission, session_id: str) -> Decision | None:
        """The user's decision on ``permission``, or ``None`` when the client cannot ask
        (no elicitation capability) or the user cancelled; ``AskLater`` to ask between rounds."""


# --- arguments ------------------------------------------------------------------------------


class _Args(msgspec.Struct, kw_only=True, frozen=True):
    pass


def _about(text: str, **constraints: Any) -> msgspec.Meta:
    return msgspec.Meta(description=text, **constraints)


_SessionId = Annotated[str, _about("A session id (s-…), as corral_list_sessions or corral_create_session give it.")]


class ListArgs(_Args, kw_only=True, frozen=True):
    state: Annotated[SessionState | None, _about("Only sessions in this state.")] = None
    cwd: Annotated[str | None, _about("Only sessions working in this directory.")] = None


class CreateArgs(_Args, kw_only=True, frozen=True):
    harness: Annotated[str, _about("The harness: claude, codex, native, opencode, pi, an ACP agent "
                                   "such as gemini, or fake (see `corral harnesses`).")]
    cwd: Annotated[str, _about("The absolute working directory.")]
    model: Annotated[str | None, _about("The model (default: the harness's).")] = None
    name: Annotated[str | None, _about("A name for the session.")] = None
    permission_mode: Annotated[PermissionMode | None, _about(
        "ask (the default: a request waits for a decision), auto_edit, auto or inherit.")] = None
    worktree: Annotated[bool, _about("Run in a new git worktree (and branch) of the repository "
                                     "that contains cwd.")] = False
    prompt: Annotated[str | None, _about("A first prompt (not waited for).")] = None


class PromptArgs(_Args, kw_only=True, frozen=True):
    session_id: _SessionId
    text: Annotated[str, _about("The prompt.")]
    wait_s: Annotated[float, _about("Seconds to wait for the turn's result; past them the answer is "
                                    "state \"running\" and the turn goes on.", ge=0)] = DEFAULT_WAIT


class SessionArgs(_Args, kw_only=True, frozen=True):
    session_id: _SessionId


class ReadEventsArgs(_Args, kw_only=True, frozen=True):
    session_id: _SessionId
    after_seq: Annotated[int, _about("Only events with a greater seq.", ge=0)] = 0
    limit: Annotated[int, _about("At most this many events.", ge=1, le=MAX_EVENTS)] = 100


class DecideArgs(_Args, kw_only=True, frozen=True):
    session_id: _SessionId
    permission_id: Annotated[str, _about("The request's permission_id.")]
    decision: Annotated[Decision, _about("allow (once), deny, or allow_always.")]


class DiffArgs(_Args, kw_only=True, frozen=True):
    session_id: _SessionId
    stat: Annotated[bool, _about("The list of changed files only.")] = False


class MergeArgs(_Args, kw_only=True, frozen=True):
    session_id: _SessionId
    strategy: Annotated[MergeStrategy, _about("merge (a merge commit), squash (one commit) or "
                                              "rebase.")] = "merge"


class ToolSpec(msgspec.Struct, frozen=True):
    """One tool: its name, what it does, and its arguments' Struct (the input schema)."""

    name: str
    description: str
    args: type[_Args]

    def input_schema(self) -> dict[str, Any]:
        """The arguments' JSON Schema, an ``object`` with no references."""
        _, components = msgspec.json.schema_components([self.args])
        schema = dict(components[self.args.__name__])
        schema.pop("title", None)
        return schema


TOOLS = [
    ToolSpec("corral_list_sessions", "List corral sessions (optionally only those in a state or a "
             "working directory).", ListArgs),
    ToolSpec("corral_create_session", "Start a coding-agent session under the corral daemon; "
             "answers {session}.", CreateArgs),
    ToolSpec("corral_prompt", "Send a prompt to a session and wait (up to wait_s, default 600) for "
             "the turn's result: {state, text, stop_reason, is_error, usage, cost_usd}. A turn "
             "that stops on a permission request answers {state: \"waiting_for_permission\", "
             "waiting_for_permission: {permission_id, tool, input}}: decide it with "
             "corral_decide. Past wait_s the answer is {state: \"running\"}; follow the turn with "
             "corral_get_session or corral_read_events.", PromptArgs),
    ToolSpec("corral_get_session", "A session's state, its last result and its open permission "
             "requests.", SessionArgs),
    ToolSpec("corral_read_events", "A session's events (frames with seq) after after_seq.",
             ReadEventsArgs),
    ToolSpec("corral_decide", "Answer a session's permission request: allow, deny or "
             "allow_always.", DecideArgs),
    ToolSpec("corral_interrupt", "Interrupt a session's running turn.", SessionArgs),
    ToolSpec("corral_close_session", "Close a session (its child process stops).", SessionArgs),
    ToolSpec("corral_workspace_diff", "The diff of a worktree session against its base.", DiffArgs),
    ToolSpec("corral_workspace_merge", "Merge a worktree session's branch into the branch its "
             "repository has checked out (merge, squash or rebase).", MergeArgs),
]
_BY_NAME = {spec.name: spec for spec in TOOLS}


class Tools:
    """Runs the tools against the daemon that ``connect`` reaches."""

    def __init__(self, connect: Connect) -> None:
        self.connect = connect

    async def call(self, name: str, arguments: dict[str, Any], caller: Caller,
                   resume: Resume | None = None) -> dict[str, Any]:
        """Run tool ``name``; raises ``CorralError`` (``bad_request`` for bad arguments), or
        ``InputRequired`` (``corral_prompt``, when ``caller.ask`` raised ``AskLater``).
        ``resume``: the same ``corral_prompt`` made again after ``InputRequired``."""
        spec = _BY_NAME.get(name)
        if spec is None:
            raise BadRequest(f"unknown tool {name!r}")
        try:
            args = msgspec.convert(arguments, spec.args)
        except msgspec.ValidationError as exc:
            raise BadRequest(f"{name}: {exc}") from None
        async with self.connect(f"mcp:{caller.name}") as client:
            if isinstance(args, PromptArgs):
                return await self._prompt(client, args, caller, resume)
            handler: Callable[[Client, Any, Caller], Awaitable[dict[str, Any]]] = getattr(
                self, "_" + name.removeprefix("corral_"))
            return await handler(client, args, caller)

    async def _list_sessions(self, client: Client, args: ListArgs, caller: Caller) -> dict[str, Any]:
        sessions = [s for s in await client.sessions()
                    if (args.state is None or s.state == args.state)
                    and (args.cwd is None or os.path.normpath(s.cwd) == os.path.normpath(args.cwd))]
        return {"sessions": _plain(sessions)}

    async def _create_session(self, client: Client, args: CreateArgs, caller: Caller) -> dict[str, Any]:
        request = SessionCreate(
            id=0, harness=args.harness, cwd=args.cwd, model=args.model, name=args.name,
            prompt=args.prompt,
            permissions=Permissions(mode=args.permission_mode) if args.permission_mode else None,
            workspace=WorkspaceSpec(mode="worktree") if args.worktree else None)
        return _object(await client.request(request))

    async def _prompt(self, client: Client, args: PromptArgs, caller: Caller,
                      resume: Resume | None) -> dict[str, Any]:
        sid = args.session_id
        if resume is None:
            from_seq = (await client.get(sid)).last_seq + 1
            await client.prompt(sid, args.text)
        else:  # the turn is in the log from ``from_seq``: decide, then read it again from there
            from_seq = resume.from_seq
            if resume.decision is not None:
                with contextlib.suppress(AlreadyDecided, UnknownPermission):
                    await client.permission(sid, resume.permission_id, resume.decision)
        progress = _Progress(caller)
        with trio.move_on_after(args.wait_s):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(progress.heartbeat)
                answer = await self._follow(client, sid, from_seq, PromptTurn(args.text), progress,
                                            caller, skip=resume.permission_id if resume and resume.decision is None else None)
                nursery.cancel_scope.cancel()
            return answer
        return {"state": "running"}

    async def _follow(self, client: Client, sid: str, from_seq: int, turn: PromptTurn,
                      progress: _Progress, caller: Caller, *, skip: str | None = None) -> dict[str, Any]:
        barrier: int | None = None  # read up to here before a request counts as waiting
        async with aclosing(client.events(sid, from_seq)) as frames:
            async for frame in frames:
                turn.receive(frame.event)
                if turn.done:
                    return turn.answer((await client.get(sid)).state)
                if turn.started and not isinstance(frame.event, (Assistant, Thought, Status)):
                    await progress.step(_describe(frame.event))
                if isinstance(frame.event, Permission) and barrier is None:
                    barrier = (await client.get(sid)).last_seq
                if barrier is None or frame.seq < barrier:
                    continue
                barrier = None
                for permission in list(turn.permissions.open.values()):
                    try:
                        decision = None if permission.permission_id == skip else await caller.ask(permission, sid)
                    except AskLater:
                        raise InputRequired(permission, sid, from_seq) from None
                    if decision is None:
                        return {"state": "waiting_for_permission",
                                "waiting_for_permission": permission_view(permission)}
                    try:
                        await client.permission(sid, permission.permission_id, decision)
                    except (AlreadyDecided, UnknownPermission):
                        pass  # another client answered first
        raise CorralError(f"the events of {sid} ended before its turn did")

    async def _get_session(self, client: Client, args: SessionArgs, caller: Caller) -> dict[str, Any]:
        info = await client.get(args.session_id)
        digest = Digest()
        async with aclosing(client.events(args.session_id, follow=False)) as frames:
            async for frame in frames:
                digest.receive(frame.seq, frame.event)
        return {"session": _plain(info), "last_result": digest.last_result,
                "open_permissions": [permission_view(p) for p in digest.permissions.open.values()]}

    async def _read_events(self, client: Client, args: ReadEventsArgs, caller: Caller) -> dict[str, Any]:
        events: list[Any] = []
        async with aclosing(client.raw_events(args.session_id, args.after_seq + 1,
                                              follow=False)) as frames:
            async for item in frames:
                events.append(json.loads(item.raw))
                if len(events) >= args.limit:
                    break
        return {"events": events}

    async def _decide(self, client: Client, args: DecideArgs, caller: Caller) -> dict[str, Any]:
        await client.permission(args.session_id, args.permission_id, args.decision)
        return await _session(client, args.session_id)

    async def _interrupt(self, client: Client, args: SessionArgs, caller: Caller) -> dict[str, Any]:
        await client.interrupt(args.session_id)
        return await _session(client, args.session_id)

    async def _close_session(self, client: Client, args: SessionArgs, caller: Caller) -> dict[str, Any]:
        await client.close(args.session_id)
        return await _session(client, args.session_id)

    async def _workspace_diff(self, client: Client, args: DiffArgs, caller: Caller) -> dict[str, Any]:
        return _object(await client.request(WorkspaceDiff(id=0, session_id=args.session_id, stat=args.stat)))

    async def _workspace_merge(self, client: Client, args: MergeArgs, caller: Caller) -> dict[str, Any]:
        return _object(await client.request(WorkspaceMerge(id=0, session_id=args.session_id,
                                                          strategy=args.strategy)))


async def _session(client: Client, session_id: str) -> dict[str, Any]:
    return {"session": _plain(await client.get(session_id))}


def _plain(value: Any) -> Any:
    return msgspec.to_builtins(value)


def _object(result: msgspec.Struct) -> dict[str, Any]:
    """A request's result as the tool's JSON object."""
    out: dict[str, Any] = msgspec.to_builtins(result)
    return out


class _Progress:
    """A turn's progress notifications: one per step (an event that is not text or a status),
    and a heartbeat after ``HEARTBEAT`` seconds without one; ``done`` is the seconds since the
    prompt, kept strictly increasing."""

    def __init__(self, caller: Caller) -> None:
        self.caller = caller
        self.started = trio.current_time()
        self.done = 0.0
        self.last = "waiting"
        self._quiet = trio.CancelScope()

    async def step(self, message: str) -> None:
        self.last = message
        self._quiet.deadline = trio.current_time() + HEARTBEAT
        await self._report(message)

    async def heartbeat(self) -> None:
        """Report every ``HEARTBEAT`` seconds without a step, until cancelled."""
        while True:
            with trio.CancelScope(deadline=trio.current_time() + HEARTBEAT) as self._quiet:
                await trio.sleep_forever()
            await self._report(f"still running (last: {self.last})")

    async def _report(self, message: str) -> None:
        self.done = max(round(trio.current_time() - self.started, 3), round(self.done + 0.001, 3))
        await self.caller.progress(self.done, message)


def _describe(event: Event) -> str:
    """A short line for a progress notification: the event's kind and its name, tool or phase."""
    kind = str(type(event).__struct_config__.tag)
    for field in ("name", "tool", "phase", "code"):
        value = getattr(event, field, None)
        if isinstance(value, str):
            kind += f" {value}"
    return kind

