"""Supervision trees on trio, with Erlang/OTP's semantics (specs and rules: ``specs.py``).

Theory of operation. ``supervise()`` is the supervisor: one task that owns a nursery. Each child
instance runs in that nursery inside its own *shielded* cancel scope, so a cancellation of the
supervisor never reaches the children all at once: the supervisor stops them itself, one at a
time, in reverse start order, cancelling each scope and waiting at most the child's shutdown
grace. Every decision is taken by the supervisor task alone, one message at a time, from its
inbox: exits posted by the instances and calls made through the ``Supervisor`` handle. So a
restart sequence (stop in reverse, start in order) never interleaves with a ``start_child``.

A restart is decided when an exit calls for one (see ``RestartType``). The supervisor counts it
against its intensity (more than ``intensity`` restarts in ``period`` seconds: every child is
stopped in reverse order and ``supervise`` raises ``IntensityExceeded``, an abnormal exit in the
eyes of its parent), then schedules the strategy's group of children to start in order after the
crashed child's backoff. While children wait out a backoff, the supervisor keeps serving. A child
whose start fails during a restart has crashed again: the same rules apply.

Limits. trio cannot kill a task. A child that shields itself from cancellation past its
shutdown grace is given up on at the deadline: the supervisor carries on (restarts it, stops the
next sibling, ...) and counts it in ``shutdown_timeouts``/``lingering``, but ``supervise`` cannot
return before that task has finished on its own. ``brutal_kill`` cancels and does not wait at all:
unshielded cleanup cannot await anyway, so the instance is gone within the same instant, but the
order in which several brutally killed siblings unwind is then not guaranteed. Children that own
OS processes enforce their hard kill themselves, within their shutdown time. Starting a child
is not interruptible (a cancellation is seen once it is ready, and then stops it in order), so a
start function that never becomes ready blocks its supervisor, as in OTP; it must not call its
own supervisor before calling ``task_status.started``.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from functools import partial
from typing import Literal

import trio

from supervisor.tree._core import Core, DeleteChild, RestartChild, StartChild, TerminateChild
from supervisor.tree.specs import ChildInfo, ChildSpec, ChildType, RestartType, SupervisorSpec, SupervisorStats

__all__ = ["Supervisor", "supervise", "supervisor_child"]

_SHARED_RNG = random.Random()
"""The jitter of supervisors given no generator of their own: one for all (a ``Random`` holds
2.5 KiB of state, and every session runs a supervisor of its own)."""


class Supervisor:
    """The handle ``supervise`` passes to ``task_status.started``.

    The async calls are served one at a time by the supervisor's task, between restarts; each
    waits at most ``timeout`` seconds (``Timeout``; the operation itself still completes) and
    raises ``ActorGone`` once the supervisor has stopped. The reads are synchronous snapshots.
    """

    def __init__(self, core: Core) -> None:
        self._core = core

    @property
    def name(self) -> str:
        return self._core.name

    async def start_child(self, spec: ChildSpec, *, timeout: float = math.inf) -> object:
        """Add a child at the end (started last, stopped first) and start it; returns its handle.

        ``DuplicateChild`` if the id is taken. If the start raises, the child is not added and
        that exception is raised here.
        """
        return await self._core.inbox.request(
            lambda reply: StartChild(spec=spec, reply=reply), timeout=timeout
        )

    async def terminate_child(self, id: str, *, timeout: float = math.inf) -> None:
        """Stop a child (cancel, wait up to its shutdown grace); a pending restart is dropped.

        A temporary child is removed; any other is kept, stopped, until ``restart_child`` or
        ``delete_child``. ``UnknownChild`` if there is no such id.
        """
        await self._core.inbox.request(
            lambda reply: TerminateChild(id=id, reply=reply), timeout=timeout
        )

    async def restart_child(self, id: str, *, timeout: float = math.inf) -> object:
        """Start a stopped child again; returns its handle. ``ChildRunning`` if it is not stopped."""
        return await self._core.inbox.request(
            lambda reply: RestartChild(id=id, reply=reply), timeout=timeout
        )

    async def delete_child(self, id: str, *, timeout: float = math.inf) -> None:
        """Forget a stopped child. ``ChildRunning`` if it is running or waiting to restart."""
        await self._core.inbox.request(
            lambda reply: DeleteChild(id=id, reply=reply), timeout=timeout
        )

    def which_children(self) -> tuple[ChildInfo, ...]:
        """Every child this supervisor holds, in start order."""
        return tuple(self._core.info(child) for child in self._core.children)

    def child(self, id: str) -> ChildInfo:
        """The row of one child; ``UnknownChild`` if there is no such id."""
        return self._core.info(self._core.get(id))

    def statistics(self) -> SupervisorStats:
        """A snapshot of children, restarts and stuck shutdowns (call it from trio)."""
        return self._core.statistics()


async def supervise(
    spec: SupervisorSpec,
    children: Sequence[ChildSpec] = (),
    *,
    name: str = "supervisor",
    rng: random.Random | None = None,
    task_status: trio.TaskStatus[Supervisor] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Run a supervisor: start ``children`` in order, then report ready with a ``Supervisor``.

    Runs until cancelled; then stops every child in reverse order (each within its shutdown
    grace, shielded from the cancellation) and lets the cancellation through. Raises
    ``IntensityExceeded`` (after stopping every child) when restarts exceed the intensity, and a
    static child's own exception if it fails to start (the ones already started are stopped).
    ``rng`` draws the backoff jitter.
    """
    failure: Exception | None = None
    async with trio.open_nursery() as nursery:
        core = Core(spec, name, rng or _SHARED_RNG, nursery)
        try:
            for child_spec in children:
                await trio.lowlevel.checkpoint_if_cancelled()  # starts are shielded; stop early
                await core.add(child_spec)
            task_status.started(Supervisor(core))
            await core.serve()
        except Exception as exc:  # raised outside the nursery, so not wrapped in a group
            failure = exc
        finally:
            core.inbox.close()
            with trio.CancelScope(shield=True):
                await core.stop_all()
            core.ended = True
    if failure is not None:
        raise failure


def supervisor_child(
    id: str,
    spec: SupervisorSpec,
    children: Sequence[ChildSpec] = (),
    *,
    restart: RestartType = RestartType.PERMANENT,
    shutdown: float | Literal["brutal_kill"] | None = None,
    rng: random.Random | None = None,
) -> ChildSpec:
    """A ``ChildSpec`` that runs a nested supervisor named ``id`` (shutdown: unbounded by default)."""
    start = partial(supervise, spec, tuple(children), name=id, rng=rng)
    return ChildSpec(id=id, start=start, restart=restart, shutdown=shutdown, type=ChildType.SUPERVISOR)
