"""What goes into the session core and what comes out of it: plain data, no I/O.

Inputs are client requests and notices about the harness child. Every notice about a child
carries its *generation* (1 for the first child of a session run, then one more per spawn
attempt), so the core can tell the running child from a dead one whose news is still queued.
Outputs are done by the shell (``actors.session.actor``) in the order the core gives them.
``RunWork`` and ``WorkDone`` carry a driver's client-side jobs (``actors.harness``) to the
child's work runner and their outcomes back; the job and its outcome are opaque to the session.
"""

from __future__ import annotations

from typing import Any

import msgspec

from actors.harness import HarnessRequest
from actors.session.meta import SessionMeta
from protocol.errors import CorralError
from protocol.events import Event
from protocol.messages import ClientRequest
from protocol.models import Placement
from supervisor.proc.spec import ExitStatus

__all__ = [
    "Abandoned",
    "Abort",
    "Answer",
    "ChildBroken",
    "ChildFrame",
    "ChildReaped",
    "ChildSpawnFailed",
    "ChildSpawned",
    "CloseChild",
    "Emit",
    "GaveUp",
    "Input",
    "Output",
    "Request",
    "RunWork",
    "SaveMeta",
    "Stop",
    "StorageLost",
    "Tick",
    "WorkDone",
    "Write",
]


# --- inputs ---------------------------------------------------------------------------------


class Request(msgspec.Struct, frozen=True, kw_only=True):
    """A client request; ``call`` numbers it so that its ``Answer`` finds the caller.

    ``by`` is the connection id of the caller, ``by_name`` the name its client gave (its id
    when unknown)."""

    call: int
    request: ClientRequest
    by: str
    by_name: str = ""


class ChildSpawned(msgspec.Struct, frozen=True, kw_only=True):
    """Generation ``gen`` runs, launched from ``request`` (its translator must be built from it)."""

    gen: int
    request: HarnessRequest
    pid: int | None
    placement: Placement | None = None
    """Where it runs, when a placement backend other than ``local`` placed it."""


class ChildSpawnFailed(msgspec.Struct, frozen=True, kw_only=True):
    """Generation ``gen`` could not be spawned (a missing binary, a bad argument …)."""

    gen: int
    code: str
    message: str


class ChildFrame(msgspec.Struct, frozen=True, kw_only=True):
    """One frame generation ``gen`` wrote on its stdout."""

    gen: int
    data: bytes


class ChildBroken(msgspec.Struct, frozen=True, kw_only=True):
    """Generation ``gen`` broke its framing (an over-long or unreadable frame); its exit follows."""

    gen: int
    code: str
    message: str


class ChildReaped(msgspec.Struct, frozen=True, kw_only=True):
    """Generation ``gen`` ended and was reaped (``status`` is ``None`` when it is not known)."""

    gen: int
    status: ExitStatus | None


class WorkDone(msgspec.Struct, frozen=True, kw_only=True):
    """Job ``id`` of generation ``gen`` ended with ``outcome`` (for its translator's ``finished``)."""

    gen: int
    id: int
    outcome: Any


class GaveUp(msgspec.Struct, frozen=True):
    """The harness child's supervisor exceeded its restart intensity: no more children."""


class Stop(msgspec.Struct, frozen=True):
    """The daemon stops the session: close it as ``session.close`` would."""


class Abandoned(msgspec.Struct, frozen=True):
    """The shell can no longer run the child (the stop overran its bound): end the session now."""


class Abort(msgspec.Struct, frozen=True, kw_only=True):
    """The session itself failed (a bug): report it and end the session ``failed``."""

    code: str
    message: str


class StorageLost(msgspec.Struct, frozen=True, kw_only=True):
    """The event log can take no more events: end the session ``failed`` without events."""

    message: str


class Tick(msgspec.Struct, frozen=True):
    """Time passed (a deadline of ``next_deadline`` came); nothing else happened."""


Input = (
    Request | ChildSpawned | ChildSpawnFailed | ChildFrame | ChildBroken | ChildReaped | WorkDone
    | GaveUp | Stop | Abandoned | Abort | StorageLost | Tick
)


# --- outputs --------------------------------------------------------------------------------


class Emit(msgspec.Struct, frozen=True):
    """Append ``event`` to the log (the shell stamps ``seq`` and ``ts``)."""

    event: Event


class Write(msgspec.Struct, frozen=True, kw_only=True):
    """Write ``data`` to generation ``gen``'s stdin; dropped if that generation is not running."""

    gen: int
    data: bytes


class CloseChild(msgspec.Struct, frozen=True, kw_only=True):
    """Close generation ``gen`` politely: send ``goodbye``, close stdin, then the usual sequence."""

    gen: int
    goodbye: tuple[bytes, ...] = ()


class RunWork(msgspec.Struct, frozen=True, kw_only=True):
    """Run ``job`` (the translator's ``Work`` ``id``) with generation ``gen``'s runner, beside the
    loop; its ``WorkDone`` comes back as an input. Dropped if that generation is not running."""

    gen: int
    id: int
    job: Any


class Answer(msgspec.Struct, frozen=True, kw_only=True):
    """The answer to request ``call``: ``result``, or ``error`` to raise in the caller."""

    call: int
    result: msgspec.Struct | None = None
    error: CorralError | None = None


class SaveMeta(msgspec.Struct, frozen=True):
    """Write ``meta`` to ``meta.json`` (after the events emitted before it)."""

    meta: SessionMeta


Output = Emit | Write | CloseChild | RunWork | Answer | SaveMeta
