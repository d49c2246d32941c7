"""The native fork server as the daemon runs it: a supervised child started on demand, and the
spawner that asks it for workers, falling back to a plain exec whenever it cannot.

``ForkServer.run`` is a permanent child's start function (under its own supervisor,
``supervisor_spec``). It is ready at once and does nothing until the first native spawn, or,
with ``prewarm`` (seconds), until that many seconds have passed without one: then it starts the
server in the background (``--background``: the template imports and warms up at a low CPU
priority, so it never slows the daemon's start or a first request; the first native session
then finds it serving. One that comes while it warms up starts a normal one beside it: on
a busy machine the low-priority template may be far behind, on an idle one it is ahead; the
first of the two to be ready serves, the other is closed). Either way it
runs ``python -m actors.native.forkserver ADDRESS`` through ``open_child`` (kind
``native-forkserver``: in the ledger, in ``daemon.status``, closed with the daemon), waits for
its ready line, serves until the process ends and raises ``ChildExited``, so the supervisor
restarts it with its backoff. A restarted run starts the process again at once if the last one
had served (the daemon runs native sessions), or on the next spawn if it never became ready (a
broken install does not loop without demand).

``ForkServer.spawn`` has the shape of ``supervisor.proc.spawn.spawn``: the native driver hands
it to ``open_child``. It asks the server (``forkclient.fork_worker``) when one is serving, waits
(bounded) for one that is starting, and otherwise, or when the request fails, execs the argv it
was given as ``spawn`` would, with a warning: a native session never fails because of the fork
server. A server that does not answer in time is killed (the supervisor restarts it). Workers
are the daemon's children, not the server's: they outlive it.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import msgspec
import trio

from protocol.errors import ChildExited, CorralError
from supervisor.ledger.store import Ledger
from supervisor.tree import Backoff, ChildSpec, RestartType, Strategy, SupervisorSpec, supervisor_child

if TYPE_CHECKING:  # the process child loads when the server is first wanted (or a spawn falls back)
    from protocol.forkserver import ForkServerReady
    from supervisor.proc.child import ProcessChild
    from supervisor.proc.spawn import Spawned

__all__ = ["KIND", "SUPERVISOR", "ForkServer", "ForkServerStats"]

log = logging.getLogger("corral.native.forkserver")

KIND = "native-forkserver"
"""The fork server's kind in the ledger and ``daemon.status`` (its workers: ``harness:native``)."""

MODULE = "actors.native.forkserver"

SUPERVISOR = SupervisorSpec(strategy=Strategy.ONE_FOR_ONE, intensity=10, period=60.0,
                            backoff=Backoff(initial=1.0, factor=2.0, max=60.0, jitter=0.2))
"""The fork server's own supervisor. With this backoff even a server that dies the moment it
starts is started at most 7 times in any 60 s, so the intensity is never reached and the root
(3 in 10 s) never sees a restart for it (``test_forkservice``). A server that never became
ready is only started again on the next spawn, so a broken install does not loop by itself."""


State = Literal["idle", "starting", "serving", "down"]


class ForkServerStats(msgspec.Struct, kw_only=True, frozen=True):
    """``state``: ``idle`` (no demand yet), ``starting``, ``serving``, ``down`` (between runs);
    ``pid`` of the serving process; ``forks`` and ``fallbacks`` (plain execs) since boot;
    ``rivals``: normal starts raced against a background one a spawn waited for."""

    state: State
    pid: int | None
    forks: int
    fallbacks: int
    rivals: int = 0


class _Run:
    """One run of the server process, as spawns see it."""

    def __init__(self) -> None:
        self.state: State = "idle"
        self.address: str | None = None
        self.child: ProcessChild | None = None
        self.served = False
        self.settled = trio.Event()  # serving, or over
        self.background = False  # started by the prewarm, at low priority
        self.contenders: list[trio.CancelScope] = []  # the processes starting for this run


class ForkServer:
    """See the module docstring."""

    def __init__(self, state_dir: str | os.PathLike[str], ledger: Ledger | None, *, cwd: str,
                 start_timeout: float = 120.0, wait_timeout: float = 90.0,
                 answer_timeout: float = 10.0, shutdown: float = 5.0,
                 prewarm: float | None = None) -> None:
        """``prewarm``: start the server in the background this many seconds after the first
        run starts, if no spawn asked for it before (``None``: only on demand; tried once).
        ``start_timeout`` bounds the template's import and warm-up (it is killed after it),
        ``wait_timeout`` how long a spawn waits for a starting template before it execs (long:
        on a loaded machine an exec'd worker racing the template only slows both down),
        ``answer_timeout`` one fork request; ``shutdown`` is the template's close time."""
        self._state_dir = Path(state_dir)
        self._ledger = ledger
        self._cwd = cwd
        self._start_timeout = start_timeout
        self._wait_timeout = wait_timeout
        self._answer_timeout = answer_timeout
        self._shutdown = shutdown
        self._prewarm = prewarm
        self._wanted = trio.Event()
        self._run: _Run | None = None
        self.forks = 0
        self.fallbacks = 0
        self.rivals = 0

    def child_spec(self, id: str = "native") -> ChildSpec:
        """The fork server under its own supervisor, for the root's children."""
        child = ChildSpec(id="native-forkserver", start=self.run, restart=RestartType.PERMANENT,
                          shutdown=self._shutdown + 5.0)
        return supervisor_child(id, SUPERVISOR, [child])

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """The start function: ready at once; serves from the first demand until the process
        ends, then raises ``ChildExited``. Cancellation closes the process (bounded)."""
        run = _Run()
        self._run = run
        task_status.started()
        try:
            run.background = await self._until_wanted()
            run.state = "starting"
            await self._serve(run)
        finally:
            run.state = "down"
            run.settled.set()
            self._run = None
            if not run.served:  # a failed start: try again on the next spawn, not in a loop
                self._wanted = trio.Event()

    @property
    def warming(self) -> bool:
        """Whether the server is starting (a native spawn now waits for its warm-up)."""
        return self._run is not None and self._run.state == "starting"

    async def spawn(self, argv: Sequence[str], *, cwd: str | None, env: Mapping[str, str],
                    death_signal: signal.Signals | None) -> Spawned:
        """A worker forked by the server, else ``argv`` exec'd (see the module docstring)."""
        from .forkclient import ForkFailed  # the client loads with the first native worker

        try:
            spawned = await self._fork(cwd or self._cwd, env, death_signal)
        except ForkFailed as exc:
            from supervisor.proc.spawn import spawn

            self.fallbacks += 1
            log.warning("native fork server: %s; starting the worker with a plain exec", exc)
            return await spawn(argv, cwd=cwd, env=env, death_signal=death_signal)
        self.forks += 1
        return spawned

    def statistics(self) -> ForkServerStats:
        """A snapshot (see ``ForkServerStats``)."""
        run = self._run
        if run is None:
            return ForkServerStats(state="down", pid=None, forks=self.forks,
                                   fallbacks=self.fallbacks, rivals=self.rivals)
        pid = run.child.pid if run.child is not None and run.state == "serving" else None
        return ForkServerStats(state=run.state, pid=pid, forks=self.forks,
                               fallbacks=self.fallbacks, rivals=self.rivals)

    async def _fork(self, cwd: str, env: Mapping[str, str],
                    death_signal: signal.Signals | None) -> Spawned:
        from supervisor.proc import prctl

        from .forkclient import ForkFailed, NoAnswer, fork_worker  # loaded by ``spawn``

        if not prctl.is_child_subreaper():
            raise ForkFailed("this process is not a child subreaper, so its workers would not "
                             "be its children")
        self._wanted.set()  # in a restart's backoff too: the next run then starts at once
        run = self._run
        if run is None:
            raise ForkFailed("it is not running")
        with trio.move_on_after(self._wait_timeout):
            await run.settled.wait()
        if run.state != "serving" or run.address is None or run.child is None:
            raise ForkFailed(f"it is {run.state}")
        try:
            return await fork_worker(run.address, cwd=cwd, env=env, death_signal=death_signal,
                                     timeout=self._answer_timeout)
        except NoAnswer:
            log.warning("native fork server (pid %d) is stuck; killing it", run.child.pid)
            run.child.kill_group()
            raise

    async def _until_wanted(self) -> bool:
        """Wait for the first spawn, or for the ``prewarm`` delay (once per daemon: a
        restarted run waits for demand as before); whether the start is a background one."""
        delay, self._prewarm = self._prewarm, None
        if delay is None or self._wanted.is_set():
            await self._wanted.wait()
            return False
        with trio.move_on_after(delay):
            await self._wanted.wait()
        return not self._wanted.is_set()

    async def _serve(self, run: _Run) -> None:
        """Run the process until it ends, then raise ``ChildExited``.

        A background start that a spawn waits for races a normal one (a thread's nice value
        cannot be lowered, and on a busy machine the low-priority template may be far from
        ready, while on an idle one it is ahead): the first of the two to be ready serves, the
        other is closed."""
        from .forkclient import RIVAL_SOCKET_NAME, SOCKET_NAME  # loaded when the server is first wanted

        ended: list[ChildExited] = []
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._contend, run, SOCKET_NAME, run.background, ended,
                               nursery.cancel_scope)
            if run.background:
                await self._wanted.wait()  # a spawn waits for it
                if run.state == "starting":
                    self.rivals += 1
                    nursery.start_soon(self._contend, run, RIVAL_SOCKET_NAME, False, ended,
                                       nursery.cancel_scope)
                await trio.sleep_forever()  # until the contenders are done (they cancel this)
        # Every contender says how it ended before it cancels the nursery; the last one (the
        # server that served, or the last that failed to start) is this run's end.
        raise ended[-1]

    async def _contend(self, run: _Run, name: str, background: bool, ended: list[ChildExited],
                       done: trio.CancelScope) -> None:
        """Start one process for ``run``; if it is ready first, it serves until it ends (the
        other contender is cancelled, which closes its process). How it ended goes to
        ``ended``; the last contender out cancels ``done``."""
        from supervisor.proc.child import ProcessSpec, open_child

        from .forkclient import socket_address

        address = socket_address(self._state_dir, name)
        argv = [sys.executable, "-m", MODULE, address, *(["--background"] if background else [])]
        spec = ProcessSpec(key=KIND, kind=KIND, argv=argv, cwd=self._cwd,
                           shutdown=self._shutdown, framing="ndjson")
        with trio.CancelScope() as mine:
            run.contenders.append(mine)
            try:
                async with open_child(spec, ledger=self._ledger) as child:
                    ready = await self._ready(child, address)
                    for other in run.contenders:
                        if other is not mine:
                            other.cancel()
                    run.child, run.address, run.state, run.served = child, address, "serving", True
                    run.settled.set()
                    log.info("native fork server (pid %d) serves on %s (warmed up: %s%s)",
                             child.pid, address, ", ".join(ready.warmed) or "nothing",
                             "; started in the background" if background else "")
                    status = await child.wait()
                tail = " | ".join(child.stderr_tail()[-5:])
                ended.append(ChildExited(
                    f"the native fork server (pid {child.pid}) ended: {status.reason} (exit "
                    f"{status.exit_code}, signal {status.signal}); stderr: {tail}",
                    data={"pid": child.pid}))
            except ChildExited as exc:
                ended.append(exc)
            finally:
                run.contenders.remove(mine)
                if not run.contenders:
                    done.cancel()

    async def _ready(self, child: ProcessChild, address: str) -> ForkServerReady:
        from protocol.forkserver import decode_ready

        frame: bytes | None = None
        with trio.move_on_after(self._start_timeout):
            try:
                frame = await child.receive_frame()
            except (trio.EndOfChannel, CorralError):
                frame = None
        try:
            ready = decode_ready(frame) if frame is not None else None
        except msgspec.DecodeError:
            ready = None
        if ready is None or ready.address != address or ready.pid != child.pid:
            tail = " | ".join(child.stderr_tail()[-5:])
            raise ChildExited(f"the native fork server (pid {child.pid}) did not become ready "
                              f"within {self._start_timeout:g} s; stderr: {tail}",
                              data={"pid": child.pid})
        return ready
