"""The plain data of a supervision tree (Erlang/OTP): specs going in, snapshots and errors coming out.

A child's ``start`` is an async function called as ``start(task_status=...)`` through
``nursery.start``, so "started" means "ready" (OTP's ``start_link``). It may hand back a handle
with ``task_status.started(handle)`` (a mailbox, a process object: whatever its clients need).
It exits *normally* by returning and *abnormally* by raising. A start function that returns
without calling ``started`` counts as started (handle ``None``) and then exited normally.

Restart types decide what an exit leads to:

=========== ============================ ===================================================
restart     normal exit (returned)       abnormal exit (raised)
=========== ============================ ===================================================
permanent   restarted                    restarted
transient   kept, not running            restarted
temporary   removed                      removed
=========== ============================ ===================================================

``shutdown`` is how long the supervisor waits, after cancelling a child, for it to finish:
seconds of grace (cleanup under ``CancelScope(shield=True)`` may use them), or ``"brutal_kill"``
(cancel and do not wait at all). By default a worker gets 5 s and a supervisor ``math.inf`` (it
needs the time to stop its own children), as in OTP.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Awaitable, Callable
from typing import Final, Literal

import msgspec

from protocol.errors import BadRequest

from supervisor.tree.backoff import Backoff, RestartPolicy

__all__ = [
    "BRUTAL_KILL",
    "ChildInfo",
    "ChildRunning",
    "ChildSpec",
    "ChildState",
    "ChildStats",
    "ChildType",
    "DuplicateChild",
    "RestartType",
    "StartFunction",
    "Strategy",
    "SupervisorSpec",
    "SupervisorStats",
    "UnknownChild",
]

BRUTAL_KILL: Final = "brutal_kill"

# ``async def start(task_status=trio.TASK_STATUS_IGNORED) -> ...``; the return value is ignored.
StartFunction = Callable[..., Awaitable[object]]

_WORKER_SHUTDOWN: Final = 5.0


class RestartType(enum.StrEnum):
    """Which exits of a child lead to a restart (see the table in the module docstring)."""

    PERMANENT = "permanent"
    TRANSIENT = "transient"
    TEMPORARY = "temporary"


class ChildType(enum.StrEnum):
    """A worker does work; a supervisor supervises (it gets an unbounded shutdown by default)."""

    WORKER = "worker"
    SUPERVISOR = "supervisor"


class Strategy(enum.StrEnum):
    """What else is restarted when one child must be restarted.

    ``one_for_one``: only that child. ``one_for_all``: every other child is stopped in reverse
    start order, then all are started again in order. ``rest_for_one``: the children started
    after it are stopped in reverse order, then it and they are started again in order.
    ``simple_one_for_one``: ``one_for_one`` for a supervisor whose children are all added at run
    time (one connection, one session each); at shutdown they are stopped all at once, each
    within its own shutdown grace, as OTP does for its dynamic children.
    """

    ONE_FOR_ONE = "one_for_one"
    ONE_FOR_ALL = "one_for_all"
    REST_FOR_ONE = "rest_for_one"
    SIMPLE_ONE_FOR_ONE = "simple_one_for_one"


class ChildSpec(msgspec.Struct, kw_only=True, frozen=True):
    """How to start one child and what to do when it exits."""

    id: str
    start: StartFunction
    restart: RestartType = RestartType.PERMANENT
    shutdown: float | Literal["brutal_kill"] | None = None
    type: ChildType = ChildType.WORKER

    def __post_init__(self) -> None:
        if not self.id:
            raise ValueError("a child spec needs a non-empty id")
        if self.shutdown is not None and self.shutdown != BRUTAL_KILL:
            if not (isinstance(self.shutdown, int | float) and self.shutdown >= 0):
                raise ValueError(f"shutdown must be seconds >= 0 or 'brutal_kill': {self.shutdown!r}")

    @property
    def grace(self) -> float:
        """Seconds the supervisor waits for this child after cancelling it (0 for brutal_kill)."""
        if self.shutdown == BRUTAL_KILL:
            return 0.0
        if self.shutdown is None:
            return math.inf if self.type is ChildType.SUPERVISOR else _WORKER_SHUTDOWN
        return float(self.shutdown)


class SupervisorSpec(msgspec.Struct, kw_only=True, frozen=True):
    """A supervisor's flags: strategy, restart intensity (OTP defaults: 1 in 5 s) and backoff."""

    strategy: Strategy = Strategy.ONE_FOR_ONE
    intensity: int = 1
    period: float = 5.0
    backoff: Backoff = msgspec.field(default_factory=Backoff)

    def __post_init__(self) -> None:
        if self.intensity < 0 or self.period < 0:
            raise ValueError(f"intensity and period must not be negative: {self!r}")

    @property
    def policy(self) -> RestartPolicy:
        """The intensity and backoff rules as a ``RestartPolicy``."""
        return RestartPolicy(intensity=self.intensity, period=self.period, backoff=self.backoff)


class DuplicateChild(BadRequest):
    """``start_child`` (or a static child list) used an id this supervisor already holds."""


class UnknownChild(BadRequest):
    """A supervisor call named a child id that this supervisor does not hold."""


class ChildRunning(BadRequest):
    """``restart_child`` or ``delete_child`` named a child that is running or waiting to restart."""


class ChildState(enum.StrEnum):
    """``restarting``: waiting out its backoff. ``stopped``: kept (not temporary) but not running."""

    RUNNING = "running"
    RESTARTING = "restarting"
    STOPPED = "stopped"


class ChildInfo(msgspec.Struct, kw_only=True, frozen=True):
    """One row of ``which_children``: ``handle`` is what the running instance passed to ``started``."""

    id: str
    state: ChildState
    handle: object
    type: ChildType
    restart: RestartType


class ChildStats(msgspec.Struct, kw_only=True, frozen=True):
    """One child in ``SupervisorStats``.

    ``restarts``: how many times the supervisor scheduled this child to start again, after its
    own exits or, under ``one_for_all``/``rest_for_one``, a sibling's. ``restart_at``: the
    (trio clock) time of a pending restart.
    """

    id: str
    state: ChildState
    type: ChildType
    restart: RestartType
    restarts: int
    restart_at: float | None


class SupervisorStats(msgspec.Struct, kw_only=True, frozen=True):
    """A snapshot of one supervisor.

    ``restarts`` counts every restart decided since it started; ``restarts_in_period`` those that
    count against ``intensity`` now; ``shutdown_timeouts`` children that outlived their shutdown
    grace; ``lingering`` stopped instances whose task has still not finished.
    """

    name: str
    strategy: Strategy
    intensity: int
    period: float
    children: tuple[ChildStats, ...]
    running: int
    restarts: int
    restarts_in_period: int
    shutdown_timeouts: int
    lingering: int
    ended: bool
