"""The daemon's lifetime from the command line: ``corral daemon``, ``start``, ``stop``, ``status``.

``start`` runs ``python -m MODULE daemon`` (the composition root's module) in a new session with stdin on
``/dev/null`` and stdout/stderr appended to ``daemon.log``, then polls (every 50 ms, up to a
deadline) until ``daemon.json`` names that process *and* a ``hello`` is answered; a daemon
that exits first gets its last log lines printed. ``daemon`` logs to ``daemon.log`` and to
stderr, once: when stderr already is ``daemon.log`` (under ``start``) only the file is used.
File work (the state directory, ``daemon.json``, the log) runs in worker threads.

Once the daemon is ready, ``daemon`` freezes what start-up made (``gc.freeze``): the modules,
classes and booted state live as long as the process, and out of the cyclic collector's sight a
full collection walks only what came after, instead of pausing every session and client for tens
of ms (the latency p99 of ``tests/bench/bench_latency.py``).
"""

from __future__ import annotations

import functools
import gc
import logging
import os
import site
import sys
from pathlib import Path
from collections.abc import Awaitable
from typing import Any, NamedTuple, Protocol, TextIO

import msgspec
import psutil
import trio
from msgspec import Struct

from protocol.errors import CorralError, DaemonNotRunning, Timeout

from supervisor import logformat
from supervisor.config import LoadedConfig, load_config
from supervisor.placement.config import with_flags
from supervisor.statedir import DaemonFile, StateDir

__all__ = ["DaemonRunner", "PlacementFlags", "run_foreground", "start", "status_report", "stop"]

POLL = 0.05
_LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
_ERROR_PREFIX = "corral: "
"""How ``commands`` starts the one line of a failed command (the daemon's too)."""


class DaemonRunner(Protocol):
    """Runs a daemon on a state directory until it stops (``actors.app.serve``)."""

    def __call__(self, state_root: Path, loaded: LoadedConfig[Any], *, port: int | None = None,
                 task_status: trio.TaskStatus[DaemonFile] = ...) -> Awaitable[None]: ...


class PlacementFlags(NamedTuple):
    """``--placement`` and ``--ray-address`` of ``corral daemon``/``start`` (None: not given)."""

    backend: str | None = None
    address: str | None = None

    def argv(self) -> list[str]:
        """The flags again, for the daemon ``corral start`` spawns."""
        return [*(["--placement", self.backend] if self.backend is not None else []),
                *(["--ray-address", self.address] if self.address is not None else [])]


def run_foreground(root: Path, run: DaemonRunner, root_config: type[Struct], *, port: int | None,
                   config: str | None, placement: PlacementFlags = PlacementFlags()) -> None:
    """Run the daemon in this process until it stops; ``DaemonRunning`` if the directory is taken.

    ``config`` (a path, else the default file if it exists) is loaded as ``root_config``, whose
    ``[placement]`` section the ``placement`` flags override (``ConfigInvalid`` for a bad one).
    """
    loaded = _with_placement(load_config(root_config, config), placement)
    state = StateDir(root)
    state.ensure()
    _log_to(state.log_path)
    trio.run(functools.partial(run, root, loaded, port=port, task_status=_FreezeWhenReady()))


class _FreezeWhenReady(trio.TaskStatus[DaemonFile]):
    """The daemon's readiness, told to nobody: the heap start-up made is frozen then (see the
    module docstring)."""

    def started(self, value: DaemonFile | None = None) -> None:
        gc.freeze()


async def start(root: Path, module: str, *, port: int | None, config: str | None, wait: float,
                out: TextIO, placement: PlacementFlags = PlacementFlags()) -> None:
    """Start a daemon in the background and return once it answers; ``CorralError`` says why not."""
    running = await _running_pid(root)
    if running is not None:
        out.write(f"corral daemon already running (pid {running})\n")
        return
    state = StateDir(root)
    offset = await trio.to_thread.run_sync(_prepare, state)
    pid = await trio.to_thread.run_sync(functools.partial(_spawn, state, module, port=port,
                                                          config=config, extra=placement.argv()))
    deadline = trio.current_time() + wait
    while True:
        finished, code = os.waitpid(pid, os.WNOHANG)
        if finished:
            tail = await trio.to_thread.run_sync(_tail, state.log_path, offset)
            raise CorralError(f"the daemon exited with status {os.waitstatus_to_exitcode(code)} "
                              f"before it was ready{': ' + tail if tail else ''}")
        info = await trio.to_thread.run_sync(state.read_daemon_file)
        if info is not None and info.pid == pid and await _running_pid(root) == pid:
            out.write(f"corral daemon started (pid {pid}) on {info.url} and {info.socket}\n")
            return
        if trio.current_time() > deadline:
            raise Timeout(f"the daemon (pid {pid}) did not become ready within {wait:g} s; "
                          f"see {state.log_path}")
        await trio.sleep(POLL)


async def stop(root: Path, *, timeout: float, out: TextIO, err: TextIO) -> None:
    """Ask the daemon to stop and wait (bounded) until its process is gone."""
    from supervisor.client import open_client  # not for `corral daemon`
    process: psutil.Process | None = None
    try:
        async with open_client(root) as client:
            process = psutil.Process(client.daemon_pid)
            await client.shutdown()
    except DaemonNotRunning as exc:
        if process is None:
            err.write(f"corral: {exc.message}\n")
            return
        # The connection dropped before the answer: the daemon is stopping all the same.
    deadline = trio.current_time() + timeout
    while _alive(process):
        if trio.current_time() > deadline:
            raise Timeout(f"the daemon (pid {process.pid}) did not stop within {timeout:g} s")
        await trio.sleep(POLL)
    out.write(f"corral daemon stopped (pid {process.pid})\n")


async def status_report(root: Path) -> dict[str, object]:
    """The daemon's status, its sessions and ``daemon.json``, as one JSON-able dict."""
    from supervisor.client import open_client  # not for `corral daemon`
    async with open_client(root) as client:
        status = await client.status()
        sessions = await client.sessions()
    info = await trio.to_thread.run_sync(StateDir(root).read_daemon_file)
    return {
        "state_dir": str(root),
        "daemon": msgspec.to_builtins(info) if info is not None else None,
        "status": msgspec.to_builtins(status),
        "sessions": msgspec.to_builtins(sessions),
    }


def _prepare(state: StateDir) -> int:
    """Create the state directory; the size of ``daemon.log`` (where this start's lines begin)."""
    state.ensure()
    return state.log_path.stat().st_size if state.log_path.exists() else 0


def _with_placement(loaded: LoadedConfig[Any], flags: PlacementFlags) -> LoadedConfig[Any]:
    """``loaded`` with the command line's placement flags over its ``[placement]`` section."""
    if flags == PlacementFlags():
        return loaded
    placement = with_flags(loaded.config.placement, backend=flags.backend, address=flags.address)
    return msgspec.structs.replace(
        loaded, config=msgspec.structs.replace(loaded.config, placement=placement))


def _spawn(state: StateDir, module: str, *, port: int | None, config: str | None,
           extra: list[str]) -> int:
    argv = [sys.executable, "-m", module, "daemon", "--state-dir", str(state.root), *extra]
    if port is not None:
        argv += ["--port", str(port)]
    if config is not None:
        argv += ["--config", str(Path(config).absolute())]
    env = dict(os.environ)
    root = _source_root()
    if root is not None:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    log_flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT
    return os.posix_spawn(sys.executable, argv, env, setsid=True, file_actions=[
        (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
        (os.POSIX_SPAWN_OPEN, 1, str(state.log_path), log_flags, 0o600),
        (os.POSIX_SPAWN_DUP2, 1, 2),
    ])


def _source_root() -> str | None:
    """The directory that holds this code, when ``python -m`` would not find it on its own.

    The daemon must run the very code of this CLI: from a source tree (run with ``PYTHONPATH``,
    or a worktree beside an editable install of another) that takes its directory on the
    daemon's ``PYTHONPATH``. An installed copy (a wheel in a venv, ``pipx``, ``uv tool``) lives
    in a site directory the interpreter reads anyway; putting that on ``PYTHONPATH`` would put
    it ahead of the standard library and hand it to every process the daemon starts, a user's
    own ``python`` in a session included.
    """
    root = Path(__file__).resolve().parents[2]
    sites = {Path(p).resolve() for p in site.getsitepackages()}
    if site.ENABLE_USER_SITE:
        sites.add(Path(site.getusersitepackages()).resolve())
    return None if root in sites else str(root)


async def _running_pid(root: Path) -> int | None:
    """The pid of the daemon that answers a hello in ``root``, or None."""
    from supervisor.client import open_client  # not for `corral daemon`
    try:
        async with open_client(root, connect_timeout=5) as client:
            return client.daemon_pid
    except DaemonNotRunning:
        return None


def _alive(process: psutil.Process) -> bool:
    """Running and not a zombie (a reparented daemon may wait for a reaper that never comes)."""
    try:
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _tail(path: Path, offset: int, lines: int = 5) -> str:
    try:
        with path.open("rb") as handle:
            handle.seek(offset)
            text = handle.read().decode(errors="replace")
    except OSError:
        return ""
    # The daemon's own one-line error (a taken port, a bad config) loses its "corral: ", which
    # the message it ends up in has already.
    return " | ".join(line.strip().removeprefix(_ERROR_PREFIX)
                      for line in text.strip().splitlines()[-lines:])


def _log_to(log_path: Path) -> None:
    """Log INFO and up to ``daemon.log`` and to stderr, unless stderr is that file already,
    one line a record (``logformat``)."""
    root = logging.getLogger()
    root.setLevel(logging.INFO)
    os.close(os.open(log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600))
    handlers: list[logging.Handler] = [logging.FileHandler(log_path, encoding="utf-8")]
    if not _same_file(sys.stderr, log_path):
        handlers.append(logging.StreamHandler(sys.stderr))
    for handler in handlers:
        root.addHandler(logformat.handler(handler, _LOG_FORMAT))


def _same_file(stream: TextIO, path: Path) -> bool:
    try:
        mine, theirs = os.fstat(stream.fileno()), os.stat(path)
    except (OSError, ValueError):
        return False
    return (mine.st_dev, mine.st_ino) == (theirs.st_dev, theirs.st_ino)
