"""A session's harness child: spawned from the driver's ``Launch``, supervised by the tree.

The child runs under a one-child ``one_for_one`` supervisor (``supervisor.tree``) whose restart
intensity and backoff are the session's (``[sessions] restart_*``, ``backoff_*``): the tree's
restart planner decides when the next child starts, or that none will (``IntensityExceeded``,
reported to the session as ``GaveUp``). The child spec is ``transient``: a child the session
closed ends its run normally and stays down; any other end is a crash and is restarted.

One run of ``Harness.run`` is one *generation*. It spawns the child, tells the session
(``ChildSpawned``, or ``ChildSpawnFailed`` and a crash), forwards every stdout frame
(``ChildFrame``), and when stdout ends it runs the child's close sequence to the end (so the
exit status is known and nothing of the child is left) and reports ``ChildReaped``. The session
talks back through ``write(gen, data)``, ``close(gen, goodbye)`` and ``run_work(gen, id, job)``:
each names the generation, and a generation that is no longer running gets nothing.

Client-side work (``actors.harness``). When the request says the session runs ``Work``, each
generation opens the driver's ``work_runner`` around its child's life, and a nursery for its jobs:
``run_work`` starts a job there, beside the frame loop (a terminal's wait may block for long),
and its outcome goes to the session as ``WorkDone``. When the child ends, its jobs are cancelled
and the runner is closed (it kills what the jobs left running: terminal process groups) before
``ChildReaped`` is told, so nothing of a dead generation runs on.

How a child is spawned is one function, ``spawn_process``; a driver with a ``spawn`` attribute
of the same shape replaces it (a native harness forks its worker from a fork server; tests run
children in memory). A placement backend other than ``local`` gives the session an ``opener``
(``open_child``'s shape, plus the ``node`` the session named in ``options.placement``): every
child is then opened through it, on a node of the cluster, a driver's own ``spawn`` included when
it takes an ``opener``; the child it yields has the same interface, and its ``placement`` goes to
the session with ``ChildSpawned``.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import itertools
import os
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any, Protocol

import msgspec
import trio

from actors.harness import Driver, HarnessRequest, Launch, WorkRunner
from actors.sandboxing.plans import confine_launch
from actors.session.ending import describe_exit
from actors.session.framelog import FrameLog
from actors.session.messages import (
    ChildBroken,
    ChildFrame,
    ChildReaped,
    ChildSpawned,
    ChildSpawnFailed,
    GaveUp,
    Input,
    WorkDone,
)
from protocol.errors import (
    ActorGone,
    ChildExited,
    CorralError,
    IntensityExceeded,
    PlacementBinaryMissing,
    PlacementCwdMissing,
    SandboxUnavailable,
)
from actors.session.config import KILL_MARGIN, SessionsConfig
from supervisor.placement.policy import wanted_node
from supervisor.proc.config import ChildrenConfig
from supervisor.proc.child import Goodbye, open_child
from supervisor.proc.spawn import spawn
from supervisor.proc.spec import ExitStatus, ProcessSpec
from supervisor.tree import Backoff, ChildSpec, RestartType, Strategy, Supervisor, SupervisorSpec, supervise

__all__ = ["Generation", "Harness", "HarnessChild", "Spawn", "spawn_process"]

class HarnessChild(Protocol):
    """What a session needs of a running child (``supervisor.proc.ProcessChild`` is one)."""

    @property
    def pid(self) -> int: ...

    async def send(self, data: bytes) -> None:
        """Write to the child's stdin; raises ``ChildExited`` once it no longer reads."""

    def frames(self) -> AsyncIterator[bytes]:
        """Its stdout frames until stdout ends; raises the framing error that ended them."""

    async def close(self, goodbye: Goodbye | None = None) -> ExitStatus:
        """Run (or join) the bounded close sequence; the exit status once it is reaped."""


Spawn = Callable[[Launch, ProcessSpec, Any], AbstractAsyncContextManager[HarnessChild]]
"""``spawn(launch, spec, ledger)``: an async context manager yielding the running child and
closing it (bounded) on the way out."""


@asynccontextmanager
async def spawn_process(launch: Launch, spec: ProcessSpec, ledger: Any, opener: Any = None, *,
                        confine: Callable[[], None] | None = None) -> AsyncIterator[HarnessChild]:
    """The default spawn: write the launch's files (mode 0600), then ``open_child`` (or
    ``opener(spec, ledger)``: a placement backend's); ``confine`` runs in the child before its
    exec (a sandbox's Landlock ruleset), so it needs a child forked here."""
    if confine is not None and opener is not None:
        raise SandboxUnavailable("sandboxed sessions run on the local placement backend only")
    if launch.files:
        await trio.to_thread.run_sync(_write_files, launch.files)
    if opener is not None:
        opened = opener(spec, ledger)
    else:
        spawner = None if confine is None else functools.partial(spawn, confine=confine)
        opened = open_child(spec, ledger=ledger, spawner=spawner)
    async with opened as child:
        yield child


class Generation:
    """One running child as the session sees it: its number, handle and close request."""

    def __init__(self, gen: int, child: HarnessChild) -> None:
        self.gen = gen
        self.child = child
        self.runner: WorkRunner | None = None
        self.jobs: trio.Nursery | None = None
        """Where this child's ``Work`` runs (with ``runner``), when the session runs it."""
        self.goodbye: tuple[bytes, ...] = ()
        self.asked = False
        """Whether the session asked this child to close: its end is then not a crash."""
        self.closer: trio.Nursery | None = None
        """Where the polite close runs once asked (``Harness._pump``'s nursery)."""

    def close(self, goodbye: tuple[bytes, ...]) -> None:
        if not self.asked:
            self.goodbye = goodbye
            self.asked = True
            if self.closer is not None:
                self.closer.start_soon(self.child.close, _goodbye(goodbye))


class Harness:
    """Runs a session's child generations under a supervisor and relays between them and the session."""

    def __init__(self, *, driver: Driver, session_id: str, harness: str, sessions: SessionsConfig,
                 children: ChildrenConfig, ledger: Any, tell: Callable[[Input], Awaitable[None]],
                 request: Callable[[], HarnessRequest], frame_log: FrameLog | None = None,
                 opener: Any = None) -> None:
        self.driver = driver
        self.session_id = session_id
        self.harness = harness
        self.sessions = sessions
        self.children = children
        self.ledger = ledger
        self.frame_log = frame_log
        self.running: dict[int, Generation] = {}
        self.supervisor: Supervisor | None = None
        self._tell = tell
        self._request = request
        self._gens = itertools.count(1)
        self._spawn: Spawn = getattr(driver, "spawn", None) or spawn_process
        self._opener = opener
        """A placement backend's ``open`` (``None``: children run here, ``open_child``)."""

    async def supervise(self, *, rng: Any = None,
                        task_status: trio.TaskStatus[Supervisor] = trio.TASK_STATUS_IGNORED) -> None:
        """Run the child's supervisor until cancelled; ``GaveUp`` goes to the session when it
        exceeds the restart intensity."""
        s = self.sessions
        spec = SupervisorSpec(
            strategy=Strategy.ONE_FOR_ONE, intensity=s.restart_intensity, period=s.restart_period,
            backoff=Backoff(initial=s.backoff_initial, factor=s.backoff_factor, max=s.backoff_max,
                            jitter=s.backoff_jitter))
        child = ChildSpec(id="harness", start=self.run, restart=RestartType.TRANSIENT,
                          shutdown=s.close_timeout + KILL_MARGIN)
        try:
            await supervise(spec, [child], name=f"{self.session_id} harness", rng=rng,
                            task_status=_Keep(self, task_status))
        except IntensityExceeded:
            with contextlib.suppress(ActorGone):
                await self._tell(GaveUp())

    async def run(self, *, task_status: trio.TaskStatus[Generation | None] = trio.TASK_STATUS_IGNORED) -> None:
        """One generation (the supervisor's start function). Returns when the session closed the
        child (or is gone); raises ``ChildExited`` when the child ended unasked or never started."""
        gen = next(self._gens)
        request = self._request()
        # A spawn on a node may wait long (for the gateway, for the cluster's head): ready
        # before it, so a stop cancels the wait (a supervisor does not interrupt a start).
        early = self._placed(request) is not None
        if early:
            task_status.started(None)
            task_status = trio.TASK_STATUS_IGNORED
        entered = False  # no ``AsyncExitStack`` (issue 24: its deque alone is 760 bytes a session)
        try:
            spawning = await self._spawning(gen, request)
            async with spawning as child:
                entered = True
                running, status = await self._generation(gen, request, child, task_status)
        except Exception as exc:  # a child that cannot start has crashed: the planner decides
            if entered:
                raise
            task_status.started(None)
            code, message = _describe_failure(exc)
            with contextlib.suppress(ActorGone):
                await self._tell(ChildSpawnFailed(gen=gen, code=code, message=message))
            if gen == 1 and isinstance(exc, PlacementCwdMissing | PlacementBinaryMissing):
                return  # no restart: session.create refuses the session with it
            raise ChildExited(f"harness child {gen} did not start: {message}") from exc
        if status is not None and not running.asked:
            raise ChildExited(f"harness child {gen} {describe_exit(status)}")

    async def _spawning(self, gen: int, request: HarnessRequest) -> AbstractAsyncContextManager[HarnessChild]:
        """The spawn of generation ``gen``'s child: launched, confined by the request's sandbox."""
        launch = self.driver.launch(request)
        env: dict[str, str | None] = dict(launch.env)
        if request.sandbox is not None and request.confinement is None:
            confined = await trio.to_thread.run_sync(confine_launch, launch, request, self.harness)
            launch = msgspec.structs.replace(launch, argv=confined.argv)
            env = confined.env
            spawning: AbstractAsyncContextManager[HarnessChild] = spawn_process(
                launch, self._spec(gen, launch, request, env, bwrap=request.sandbox.effective == "bwrap"), self.ledger,
                self._placed(request), confine=confined.preexec)
        elif request.sandbox is not None and request.sandbox.effective == "bwrap":
            # A native worker under bubblewrap: its driver's spawn (its asks), with the
            # wrapped argv (so exec'd, not forked); the worker lays its confinement too.
            confined = await trio.to_thread.run_sync(confine_launch, launch, request, self.harness)
            launch = msgspec.structs.replace(launch, argv=confined.argv)
            env = confined.env
            spawning = self._open(launch, self._spec(gen, launch, request, env, bwrap=True), request)
        else:  # unconfined, or a native worker confining itself with Landlock
            spawning = self._open(launch, self._spec(gen, launch, request, env), request)
        return spawning

    async def _generation(self, gen: int, request: HarnessRequest, child: HarnessChild,
                          task_status: trio.TaskStatus[Generation | None]) -> tuple[Generation, ExitStatus | None]:
        """Run generation ``gen`` with its ``child`` until stdout ends and the child is closed;
        its exit status, or ``None`` when the session is gone (the child is then closed on the
        way out)."""
        running = Generation(gen, child)
        self.running[gen] = running
        try:
            task_status.started(running)
            async with self._working(request, running) if request.runs_work else contextlib.nullcontext():
                await self._tell(ChildSpawned(gen=gen, request=request, pid=child.pid,
                                              placement=getattr(child, "placement", None)))
                status = await self._pump(running)
                running.jobs = None
            if status is not None:
                await self._tell(ChildReaped(gen=gen, status=status))
            return running, status
        except ActorGone:
            return running, None
        finally:
            del self.running[gen]

    @asynccontextmanager
    async def _working(self, request: HarnessRequest, running: Generation) -> AsyncIterator[None]:
        """Around a generation of a session that runs ``Work``: the driver's ``work_runner`` and
        the nursery of its jobs, which are cancelled first on the way out."""
        async with self.driver.work_runner(request, self.ledger) as runner:  # type: ignore[attr-defined]
            async with trio.open_nursery() as jobs:
                running.runner, running.jobs = runner, jobs
                try:
                    yield
                finally:
                    jobs.cancel_scope.cancel()

    def _open(self, launch: Launch, spec: ProcessSpec,
              request: HarnessRequest) -> AbstractAsyncContextManager[HarnessChild]:
        """The child's spawn: the driver's (or ``spawn_process``), through the opener if any."""
        opener = self._placed(request)
        if opener is None:
            return self._spawn(launch, spec, self.ledger)
        if self._spawn is spawn_process:
            return spawn_process(launch, spec, self.ledger, opener)
        if "opener" in inspect.signature(self._spawn).parameters:
            return self._spawn(launch, spec, self.ledger, opener=opener)  # type: ignore[call-arg]
        return self._spawn(launch, spec, self.ledger)  # a driver that takes no opener: here

    def _placed(self, request: HarnessRequest) -> Any:
        """The placement backend's ``open`` for this request's node, or ``None`` (here)."""
        if self._opener is None:
            return None
        return functools.partial(self._opener, node=wanted_node(request.options) or "")

    async def write(self, gen: int, data: bytes) -> None:
        """Send ``data`` to generation ``gen`` if it still runs; a dead child gets nothing."""
        running = self.running.get(gen)
        if running is None:
            return
        if self.frame_log is not None:
            self.frame_log.record("out", data.rstrip(b"\n"), running.child.pid)
        try:
            await running.child.send(data)
        except (CorralError, trio.BrokenResourceError, trio.ClosedResourceError):
            pass  # the child is gone: its exit is on its way to the session

    def run_work(self, gen: int, work_id: int, job: Any) -> None:
        """Start job ``work_id`` with generation ``gen``'s runner; its ``WorkDone`` follows.
        A generation that no longer runs (or runs no work) gets nothing."""
        running = self.running.get(gen)
        if running is None or running.jobs is None or running.runner is None:
            return
        running.jobs.start_soon(self._work, running.gen, running.runner, work_id, job)

    async def _work(self, gen: int, runner: WorkRunner, work_id: int, job: Any) -> None:
        outcome = await runner.run(job)
        with contextlib.suppress(ActorGone):
            await self._tell(WorkDone(gen=gen, id=work_id, outcome=outcome))

    def close(self, gen: int, goodbye: tuple[bytes, ...]) -> None:
        """Ask generation ``gen`` to close politely (with ``goodbye`` first), if it still runs."""
        running = self.running.get(gen)
        if running is not None:
            running.close(goodbye)

    async def _pump(self, running: Generation) -> ExitStatus | None:
        """Forward frames until stdout ends, then finish the close sequence; the exit status,
        or ``None`` when the session is gone (the child is then closed on the way out)."""
        async with trio.open_nursery() as nursery:
            # The polite close starts here when the session asks (``Generation.close``): no task
            # waits for the ask, an idle session costs one less.
            running.closer = nursery
            if running.asked:
                nursery.start_soon(running.child.close, _goodbye(running.goodbye))
            try:
                told = await self._forward(running)
                status = await running.child.close()
            finally:
                running.closer = None
            nursery.cancel_scope.cancel()
        return status if told else None

    async def _forward(self, running: Generation) -> bool:
        """Tell the session every frame (and a broken framing); ``False`` once it is gone."""
        child = running.child
        try:
            try:
                async for frame in child.frames():
                    if self.frame_log is not None:
                        self.frame_log.record("in", frame, child.pid)
                    await self._tell(ChildFrame(gen=running.gen, data=frame))
            except ActorGone:
                raise
            except CorralError as exc:  # the child broke its framing; its close sequence runs
                await self._tell(ChildBroken(gen=running.gen, code=str(exc.code), message=exc.message))
        except ActorGone:
            return False
        return True

    def _spec(self, gen: int, launch: Launch, request: HarnessRequest,
              env: dict[str, str | None], *, bwrap: bool = False) -> ProcessSpec:
        """The child's process spec; ``bwrap``: the argv is bubblewrap's, which gives itself the
        parent-death signal (``--die-with-parent``: SIGKILL, set over any other), so the spawn
        puts no ``setpriv`` in front (an exec, about a millisecond, less)."""
        return ProcessSpec(
            death_signal=None if bwrap else "SIGTERM",
            key=f"session:{self.session_id}:{gen}", kind=f"harness:{self.harness}", argv=launch.argv,
            cwd=launch.cwd, env=env, shutdown=self.sessions.close_timeout,
            frame_limit=self.children.frame_limit, framing=launch.framing,
            stderr_lines=self.children.stderr_lines, secrets=frozenset(request.env.values()),
        )


def _describe_failure(exc: Exception) -> tuple[str, str]:
    if isinstance(exc, CorralError):
        return str(exc.code), exc.message
    return "launch_failed", f"{type(exc).__name__}: {exc}"


def _goodbye(frames: tuple[bytes, ...]) -> Goodbye | None:
    if not frames:
        return None

    async def send(child: Any) -> None:
        for data in frames:
            await child.send(data)

    return send


def _write_files(files: dict[str, str]) -> None:
    for name, content in files.items():
        path = Path(name)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(content)


class _Keep(trio.TaskStatus[Supervisor]):
    """Keeps the supervisor's handle on the ``Harness`` as it reports ready."""

    def __init__(self, harness: Harness, outer: trio.TaskStatus[Supervisor]) -> None:
        self._harness = harness
        self._outer = outer

    def started(self, value: Supervisor | None = None) -> None:
        self._harness.supervisor = value
        self._outer.started(value)  # type: ignore[arg-type]
