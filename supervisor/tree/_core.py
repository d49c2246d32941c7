"""The state and decisions of one supervisor; private to ``supervision.py`` (read its header).

``Core`` is mutated only by the ``supervise`` task; child instances only post an ``Exited``
message to its inbox, and the ``Supervisor`` handle posts calls that carry a ``Reply``.
"""

from __future__ import annotations

import contextlib
import logging
import math
import random
from typing import Any

import msgspec
import trio

from protocol.errors import ActorGone, IntensityExceeded

from supervisor.tree.mailbox import Mailbox, Reply
from supervisor.tree.specs import (
    ChildInfo,
    ChildRunning,
    ChildSpec,
    ChildState,
    ChildStats,
    DuplicateChild,
    RestartType,
    Strategy,
    SupervisorSpec,
    SupervisorStats,
    UnknownChild,
)

_log = logging.getLogger("corral.supervisor")


class StartChild(msgspec.Struct, kw_only=True, frozen=True):
    spec: ChildSpec
    reply: Reply[object]


class TerminateChild(msgspec.Struct, kw_only=True, frozen=True):
    id: str
    reply: Reply[None]


class RestartChild(msgspec.Struct, kw_only=True, frozen=True):
    id: str
    reply: Reply[object]


class DeleteChild(msgspec.Struct, kw_only=True, frozen=True):
    id: str
    reply: Reply[None]


class Instance:
    """One run of a child: its scope (shielded: only the supervisor cancels it) and its fate."""

    __slots__ = ("_waiter", "done", "handle", "scope", "started", "stopping")

    def __init__(self) -> None:
        self.scope = trio.CancelScope(shield=True)
        self.done = False
        """Whether the run has ended (``wait`` returns)."""
        self._waiter: trio.Event | None = None
        """Made only when the supervisor waits for the end (a stop): one Event less a child."""
        self.handle: object = None
        self.started = False
        self.stopping = False

    def end(self) -> None:
        self.done = True
        if self._waiter is not None:
            self._waiter.set()

    async def wait(self) -> None:
        """Return once the run has ended (a schedule point, as ``trio.Event.wait`` is)."""
        if self.done:
            await trio.lowlevel.checkpoint()
            return
        if self._waiter is None:
            self._waiter = trio.Event()
        await self._waiter.wait()


class Slot:
    """One child spec held by a supervisor: its running instance, pending restart and history."""

    __slots__ = ("due", "history", "instance", "restarts", "spec")

    def __init__(self, spec: ChildSpec) -> None:
        self.spec = spec
        self.instance: Instance | None = None
        self.due: float | None = None
        self.history: list[float] = []
        self.restarts = 0


class Exited(msgspec.Struct, kw_only=True, frozen=True):
    child: Slot
    instance: Instance
    error: Exception | None


Message = StartChild | TerminateChild | RestartChild | DeleteChild | Exited


class ReadyRelay(trio.TaskStatus[Any]):
    """Records the handle on the instance before passing readiness on to ``nursery.start``."""

    def __init__(self, instance: Instance, outer: trio.TaskStatus[None]) -> None:
        self._instance = instance
        self._outer = outer

    def started(self, value: Any = None) -> None:
        self._instance.handle = value
        self._instance.started = True
        self._outer.started()


class Core:
    """The supervisor's state; only the ``supervise`` task mutates it (instances only post)."""

    def __init__(self, spec: SupervisorSpec, name: str, rng: random.Random, nursery: trio.Nursery) -> None:
        self.spec = spec
        self.name = name
        self.policy = spec.policy
        self.rng = rng
        # Unbounded on purpose: each instance posts at most one exit and each caller waits for
        # its reply, so the queue never holds more than (children + callers) messages.
        self.inbox: Mailbox[Message] = Mailbox(math.inf, name=f"{name} inbox")
        self.children: list[Slot] = []
        self.history: list[float] = []
        self.restarts = 0
        self.shutdown_timeouts = 0
        self.lingering: list[Instance] = []
        self.ended = False
        self.nursery = nursery

    async def serve(self) -> None:
        while True:
            msg: Message | None = None
            due = self._next_due()
            if due == math.inf:  # no cancel scope open while nothing is due: a few hundred bytes
                msg = await self.inbox.receive()
            else:
                with trio.move_on_at(due):
                    msg = await self.inbox.receive()
            if msg is None:
                await self._start_due()
            elif isinstance(msg, Exited):
                await self._on_exit(msg)
            else:
                await self._on_call(msg)

    async def _on_call(self, msg: StartChild | TerminateChild | RestartChild | DeleteChild) -> None:
        try:
            match msg:
                case StartChild(spec=spec, reply=reply):
                    reply.send(await self.add(spec))
                case TerminateChild(id=id, reply=reply):
                    await self._stop(self.get(id))
                    reply.send(None)
                case RestartChild(id=id, reply=reply):
                    child = self._idle(id)
                    reply.send(await self._start(child))
                case DeleteChild(id=id, reply=reply):
                    self.children.remove(self._idle(id))
                    reply.send(None)
        except Exception as exc:
            msg.reply.fail(exc)

    async def add(self, spec: ChildSpec) -> object:
        if any(child.spec.id == spec.id for child in self.children):
            raise DuplicateChild(f"{self.name} already has a child {spec.id!r}", data={"id": spec.id})
        child = Slot(spec)
        self.children.append(child)
        try:
            return await self._start(child)
        except BaseException:
            self.children.remove(child)
            raise

    def get(self, id: str) -> Slot:
        for child in self.children:
            if child.spec.id == id:
                return child
        raise UnknownChild(f"{self.name} has no child {id!r}", data={"id": id})

    def _idle(self, id: str) -> Slot:
        child = self.get(id)
        state = self._state(child)
        if state is not ChildState.STOPPED:
            raise ChildRunning(f"child {id!r} of {self.name} is {state}", data={"id": id, "state": state})
        return child

    async def _start(self, child: Slot) -> object:
        """Start one instance and wait until it is ready; its own exception if it fails first.

        Not interruptible: under a cancelled caller, trio would not move the ready instance into
        the supervisor's nursery and ``start`` would wait for the (shielded) instance to exit.
        A cancellation is seen at the next checkpoint, when the instance can be stopped in order.
        """
        instance = Instance()
        child.instance = instance
        try:
            with trio.CancelScope(shield=True):
                await self.nursery.start(self._run, child, instance)
        except BaseException:
            child.instance = None
            raise
        return instance.handle

    async def _run(self, child: Slot, instance: Instance, *, task_status: trio.TaskStatus[None]) -> None:
        error: Exception | None = None
        try:
            with instance.scope:
                await child.spec.start(task_status=ReadyRelay(instance, task_status))
        except Exception as exc:
            if not instance.started:
                raise  # nursery.start() raises it in the supervisor's task: the start failed
            error = exc
        finally:
            instance.end()
        if not instance.started:
            ReadyRelay(instance, task_status).started(None)  # returned before ready: ready, then done
        if instance.stopping:
            if error is not None:
                _log.debug("%s: child %r raised while stopping", self.name, child.spec.id, exc_info=error)
            return
        with contextlib.suppress(ActorGone):  # the supervisor is stopping: nobody left to tell
            self.inbox.send_nowait(Exited(child=child, instance=instance, error=error))

    async def _on_exit(self, msg: Exited) -> None:
        child = msg.child
        if child.instance is not msg.instance:
            return  # an instance we stopped or replaced since it posted
        child.instance = None
        if msg.error is None:
            _log.debug("%s: child %r exited normally", self.name, child.spec.id)
        else:
            _log.warning("%s: child %r crashed", self.name, child.spec.id, exc_info=msg.error)
        if child.spec.restart is RestartType.TEMPORARY:
            self.children.remove(child)
        elif child.spec.restart is RestartType.PERMANENT or msg.error is not None:
            await self._restart(child, msg.error)

    async def _restart(self, child: Slot, cause: Exception | None) -> None:
        """Count a restart of ``child``, stop its strategy group, schedule the group's start."""
        now = trio.current_time()
        if self.policy.exceeded(self.history, now):
            raise IntensityExceeded(
                f"{self.name}: more than {self.spec.intensity} restarts in {self.spec.period} s"
                f" (last: child {child.spec.id!r})",
                data={"supervisor": self.name, "child": child.spec.id},
            ) from cause
        self.history = [*self.policy.recent(self.history, now), now]
        earlier = self.policy.recent(child.history, now)
        child.history = [*earlier, now]
        delay = self.spec.backoff.delay(len(earlier), self.rng)
        self.restarts += 1
        group = self._group(child)
        for other in reversed(group):
            if other is not child:
                await self._stop(other)
        group = [c for c in group if c in self.children]  # stopped temporary siblings are gone
        due = max([now + delay, *(c.due for c in group if c.due is not None)])
        for member in group:
            member.due = due
            member.restarts += 1

    def _group(self, child: Slot) -> list[Slot]:
        match self.spec.strategy:
            case Strategy.ONE_FOR_ONE | Strategy.SIMPLE_ONE_FOR_ONE:
                return [child]
            case Strategy.ONE_FOR_ALL:
                return list(self.children)
            case Strategy.REST_FOR_ONE:
                return self.children[self.children.index(child) :]

    def _next_due(self) -> float:
        return min((c.due for c in self.children if c.due is not None), default=math.inf)

    async def _start_due(self) -> None:
        """Start, in child order, every child whose restart time has come."""
        while True:
            now = trio.current_time()
            child = next((c for c in self.children if c.due is not None and c.due <= now), None)
            if child is None:
                return
            child.due = None
            try:
                await self._start(child)
            except Exception as exc:
                _log.warning("%s: child %r failed to restart", self.name, child.spec.id, exc_info=exc)
                await self._restart(child, exc)

    async def _stop(self, child: Slot) -> None:
        """Cancel the child's instance and wait up to its grace; not interruptible, bounded by it."""
        child.due = None
        if child.spec.restart is RestartType.TEMPORARY and child in self.children:
            self.children.remove(child)
        instance = child.instance
        if instance is None:
            return
        instance.stopping = True
        instance.scope.cancel()
        grace = child.spec.grace
        with trio.CancelScope(shield=True), trio.move_on_after(grace):
            await instance.wait()
        child.instance = None
        if not instance.done:
            self.lingering = [i for i in self.lingering if not i.done]
            self.lingering.append(instance)
            if grace > 0:
                self.shutdown_timeouts += 1
                _log.warning("%s: child %r still running %s s after cancel", self.name, child.spec.id, grace)

    async def stop_all(self) -> None:
        """Stop every child: in reverse start order, or all at once under simple_one_for_one."""
        if self.spec.strategy is Strategy.SIMPLE_ONE_FOR_ONE:
            async with trio.open_nursery() as nursery:
                for child in list(self.children):
                    nursery.start_soon(self._stop, child)
            return
        for child in reversed(list(self.children)):
            await self._stop(child)

    def _state(self, child: Slot) -> ChildState:
        if child.instance is not None:
            return ChildState.RUNNING
        return ChildState.STOPPED if child.due is None else ChildState.RESTARTING

    def info(self, child: Slot) -> ChildInfo:
        instance = child.instance
        return ChildInfo(
            id=child.spec.id,
            state=self._state(child),
            handle=None if instance is None else instance.handle,
            type=child.spec.type,
            restart=child.spec.restart,
        )

    def statistics(self) -> SupervisorStats:
        self.lingering = [i for i in self.lingering if not i.done]
        rows = tuple(
            ChildStats(
                id=c.spec.id,
                state=self._state(c),
                type=c.spec.type,
                restart=c.spec.restart,
                restarts=c.restarts,
                restart_at=c.due,
            )
            for c in self.children
        )
        return SupervisorStats(
            name=self.name,
            strategy=self.spec.strategy,
            intensity=self.spec.intensity,
            period=self.spec.period,
            children=rows,
            running=sum(row.state is ChildState.RUNNING for row in rows),
            restarts=self.restarts,
            restarts_in_period=len(self.policy.recent(self.history, trio.current_time())),
            shutdown_timeouts=self.shutdown_timeouts,
            lingering=len(self.lingering),
            ended=self.ended,
        )
