"""An attached session's follower: its events to the editor, and the editor asked for its
permissions (the I/O side of ``supervisor.acp.turns``).

``follow`` subscribes to the session from seq 1 and feeds every event to the session's
``SessionTurns``, performing what it says: updates are sent, prompts settled, permissions asked
(one task each, in the follower's nursery, so closing or re-attaching the session ends them),
withdrawn requests reported. It reports itself started once the replay up to ``replay_to`` is
done. ``ask`` sends one ``session/request_permission`` and turns the editor's answer into the
session's decision unless another client decided first. The shell hands both an ``Editor``: the
two ways to reach the editor they need.
"""

from __future__ import annotations

import logging
from contextlib import aclosing
from typing import Any, Protocol

import msgspec
import trio

from protocol.errors import AlreadyDecided, ProtocolError, SessionClosed, UnknownPermission
from protocol.events import Decision, Permission
from protocol.jsonrpc import ErrorResponse, Response, decode_as

from supervisor.client import Client

from . import schema as s
from .turns import Answered, Ask, SessionTurns, Withdraw
from .updates import acp_kind, paths_of, title_of

__all__ = ["Attached", "Editor", "Waiter", "ask", "follow", "settle"]

log = logging.getLogger("corral.acp")

_DECISIONS: dict[str, Decision] = {"allow_once": "allow", "allow_always": "allow_always",
                                   "reject_once": "deny"}


class Editor(Protocol):
    """What a follower needs of the shell: a notification to send, a request to make."""

    async def notify(self, session_id: str, update: s.Update) -> None: ...

    async def call(self, method: str, params: msgspec.Struct) -> Response | ErrorResponse: ...


class Waiter:
    """One answer someone waits for (a prompt's ``Answered``, an editor's response)."""

    def __init__(self) -> None:
        self.done = trio.Event()
        self.answer: Any = None


class Attached:
    """One session the editor attached: its turns, its follower's scope and the prompts waiting."""

    def __init__(self, turns: SessionTurns) -> None:
        self.turns = turns
        self.scope = trio.CancelScope()
        self.finished = trio.Event()
        self.prompts: dict[int, Waiter] = {}
        self.asks: trio.Nursery | None = None
        self.last_ts: str | None = None
        """The time of the newest event its follower saw."""


async def follow(client: Client, editor: Editor, attached: Attached, replay_to: int,
                 show_replay: bool, *, task_status: trio.TaskStatus[None]) -> None:
    """Follow ``attached`` until cancelled (its scope) or the connection drops (raises
    ``ConnectionLost``); started once the events up to ``replay_to`` were replayed (sent to
    the editor only when ``show_replay``). Every prompt still waiting is settled on the way out."""
    turns, started = attached.turns, False
    try:
        with attached.scope:
            async with trio.open_nursery() as asks:
                attached.asks = asks
                async with aclosing(client.events(turns.session_id, 1)) as frames:
                    if replay_to < 1:
                        await _perform(client, editor, attached, turns.caught_up())
                        task_status.started()
                        started = True
                    async for frame in frames:
                        attached.last_ts = frame.ts
                        actions = turns.receive(frame.event)
                        if not turns.live and not show_replay:
                            actions = [a for a in actions if not isinstance(a, s.Update)]
                        await _perform(client, editor, attached, actions)
                        if not turns.live and frame.seq >= replay_to:
                            await _perform(client, editor, attached, turns.caught_up())
                            task_status.started()
                            started = True
    finally:
        settle(attached, turns.abandon())
        attached.finished.set()
    if not started:  # cancelled before the replay ended: the attach is over too
        task_status.started()


async def _perform(client: Client, editor: Editor, attached: Attached, actions: list[Any]) -> None:
    sid = attached.turns.session_id
    for action in actions:
        match action:
            case s.Update():
                await editor.notify(sid, action)
            case Answered():
                settle(attached, [action])
            case Ask(permission=permission) if attached.asks is not None:
                attached.asks.start_soon(ask, client, editor, attached, permission)
            case Withdraw(permission_id=pid, status=status):
                await editor.notify(sid, s.Update(session_update="tool_call_update",
                                                  tool_call_id=pid, status=status))


def settle(attached: Attached, answers: list[Answered]) -> None:
    """Hand each answer to the prompt waiting for it."""
    for answer in answers:
        waiter = attached.prompts.get(answer.token)
        if waiter is not None and not waiter.done.is_set():
            waiter.answer = answer
            waiter.done.set()


async def ask(client: Client, editor: Editor, attached: Attached, permission: Permission) -> None:
    """Ask the editor; its answer is the decision unless another client decided first."""
    sid, pid = attached.turns.session_id, permission.permission_id
    options = [s.PermissionOption(option_id="allow_once", name="Allow", kind="allow_once")]
    if "allow_always" in permission.options:
        options.append(s.PermissionOption(option_id="allow_always", name="Always allow",
                                          kind="allow_always"))
    options.append(s.PermissionOption(option_id="reject_once", name="Deny", kind="reject_once"))
    paths = paths_of(permission.input, attached.turns.updates.cwd)
    call = s.ToolCallRef(tool_call_id=pid, title=title_of(permission.tool, permission.input),
                         kind=acp_kind(permission.kind, permission.tool), status="pending",
                         raw_input=permission.input,
                         locations=[s.Location(path=p) for p in paths] or None)
    answer = await editor.call("session/request_permission",
                               s.PermissionParams(session_id=sid, tool_call=call, options=options))
    if not attached.turns.answered(pid):
        log.info("permission %s of %s: the editor's late answer is ignored", pid, sid)
        return
    if isinstance(answer, ErrorResponse):
        log.info("permission %s of %s: the editor failed it: %s", pid, sid, answer.error.message)
        return
    try:
        outcome = decode_as(answer.result, s.PermissionAnswer, "session/request_permission result").outcome
    except ProtocolError as exc:
        log.warning("permission %s of %s: %s", pid, sid, exc.message)
        return
    decision = _DECISIONS.get(outcome.option_id or "") if outcome.outcome == "selected" else None
    if decision is None:
        return  # cancelled (after session/cancel, whose interrupt cancels it)
    try:
        await client.permission(sid, pid, decision)
    except (AlreadyDecided, UnknownPermission, SessionClosed) as exc:
        log.info("permission %s of %s: %s", pid, sid, exc.message)
