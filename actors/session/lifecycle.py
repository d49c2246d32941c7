"""A session's lifecycle as a table: the moves each state allows and where they lead.

The lifecycle overrides the activity the tracker derives (``idle``, ``running``, ``waiting``);
``None`` is a ready child running (the activity shows). Every change of it goes through
``next_lifecycle``; a move the table does not hold is a bug of ours and raises
``LifecycleError`` (the session shell then ends the session ``failed`` with an ``internal``
error, as for any bug of the core). The guards of ``SessionCore`` ask the same table
(``allows``), so what a state takes and what it refuses are written down once:

============ ============ ============ ==========================================================
from         move         to           when
============ ============ ============ ==========================================================
starting     spawned      starting     a child generation is up; its harness is not ready yet
restarting   spawned      starting
starting     ready        running      the harness is ready (at its spawn, or by its frames)
restarting   ready        running
starting     crashed      restarting   a spawn failed, or the child exited unasked
restarting   crashed      restarting
running      crashed      restarting
starting     close        closing      ``session.close``, or the daemon stops the session
restarting   close        closing
running      close        closing
closing      closed       closed       the child exited (or there was none to close)
starting     gave_up      failed       the child's supervisor gave up restarting it
restarting   gave_up      failed
running      gave_up      failed
starting     abort        failed       a bug, or a log that takes no more events
restarting   abort        failed
running      abort        failed
closing      abort        failed
============ ============ ============ ==========================================================

``closed`` and ``failed`` are final: they allow no move. ``running`` in the table is ``None``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar, Final, Literal

from protocol.errors import ErrorCode

__all__ = ["FINAL", "TRANSITIONS", "Lifecycle", "LifecycleError", "Move", "allows", "next_lifecycle"]

Lifecycle = Literal["starting", "restarting", "closing", "closed", "failed"]
"""The states that override the tracker's activity (``None``: a ready child runs)."""

Move = Literal["spawned", "ready", "crashed", "close", "closed", "gave_up", "abort"]
"""What happens to a session's lifecycle (the table in the module docstring)."""

FINAL: Final[tuple[Lifecycle, ...]] = ("closed", "failed")
"""The states a session ends in: no move leaves them."""

_LIVE: Final[tuple[Lifecycle | None, ...]] = ("starting", "restarting", None)
"""The states with a session that runs (or is about to), before any close."""

TRANSITIONS: Final[Mapping[tuple[Lifecycle | None, Move], Lifecycle | None]] = {
    **{(state, "spawned"): "starting" for state in ("starting", "restarting")},
    **{(state, "ready"): None for state in ("starting", "restarting")},
    **{(state, "crashed"): "restarting" for state in _LIVE},
    **{(state, "close"): "closing" for state in _LIVE},
    ("closing", "closed"): "closed",
    **{(state, "gave_up"): "failed" for state in _LIVE},
    **{(state, "abort"): "failed" for state in (*_LIVE, "closing")},
}
"""``(lifecycle, move) → next lifecycle``: every move a state allows, nothing else."""


class LifecycleError(Exception):
    """A move the lifecycle table does not allow in the session's state: a bug of ours (like
    ``ConnectionCore``'s ``LocalProtocolError``), never a client's mistake, so it is not a
    ``CorralError`` a request could be answered with. Its ``code`` is the one the session's
    failure is reported under."""

    code: ClassVar[ErrorCode] = ErrorCode.INTERNAL

    def __init__(self, lifecycle: Lifecycle | None, move: Move) -> None:
        super().__init__(f"a session that is {lifecycle or 'running'} cannot take the move {move!r}")
        self.lifecycle = lifecycle
        self.move = move


def allows(lifecycle: Lifecycle | None, move: Move) -> bool:
    """Whether the table holds ``move`` from ``lifecycle``."""
    return (lifecycle, move) in TRANSITIONS


def next_lifecycle(lifecycle: Lifecycle | None, move: Move) -> Lifecycle | None:
    """Where ``move`` leads from ``lifecycle``; ``LifecycleError`` if the table has no such move."""
    try:
        return TRANSITIONS[lifecycle, move]
    except KeyError:
        raise LifecycleError(lifecycle, move) from None
