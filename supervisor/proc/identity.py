"""Who a process is: a start token that survives pid reuse and reboots, and the environment marker.

A pid alone names nothing durable: the kernel reuses it, and a ledger row from before a reboot can
name a process that has nothing to do with us. A ``StartToken`` pins a pid to one process: the
kernel boot id (``/proc/sys/kernel/random/boot_id``) plus the process start time. On Linux the
comparison uses the start time in clock ticks since boot (``procstat``: field 22 of the stat line),
which never changes; psutil's ``create_time()`` (seconds since the epoch) is kept for people and
for other platforms, but it is derived from the wall clock and can drift by a second when the
clock is stepped, so it is not exact enough to tell two processes apart on Linux.

Every child we spawn carries two environment variables, inherited by all its descendants:
``CORRAL_STATE_DIR`` (the daemon's state directory) and ``CORRAL_CHILD_KEY`` (its ledger key).
They let us recognise leftovers whose leader is gone and whose ledger row never got written.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Mapping

import msgspec
import psutil

from supervisor.proc.procstat import read_stat

ENV_STATE_DIR = "CORRAL_STATE_DIR"
"""The marker naming the state directory of the daemon that spawned a process (or its ancestor)."""

ENV_CHILD_KEY = "CORRAL_CHILD_KEY"
"""The marker naming the ledger key of the child a process belongs to."""

_BOOT_ID_PATH = "/proc/sys/kernel/random/boot_id"


class StartToken(msgspec.Struct, kw_only=True, frozen=True):
    """The identity of one process: which boot it ran in and when it started.

    ``start_ticks`` is the exact start time (clock ticks since boot, Linux only); ``create_time``
    is psutil's wall-clock start time in seconds since the epoch.
    """

    boot_id: str
    create_time: float
    start_ticks: int | None = None


def boot_id() -> str:
    """The kernel's boot id; elsewhere the boot time in whole seconds, which serves the same end."""
    return _boot_id()


@functools.cache
def _boot_id() -> str:
    try:
        with open(_BOOT_ID_PATH, encoding="ascii") as f:
            return f.read().strip()
    except OSError:
        return f"boot-time:{int(psutil.boot_time())}"


def start_token(pid: int) -> StartToken:
    """The start token of ``pid`` (a zombie still has one). Raises ``psutil.NoSuchProcess``."""
    return token_of(psutil.Process(pid))


def token_of(proc: psutil.Process) -> StartToken:
    """The start token of a psutil process. Raises ``psutil.NoSuchProcess`` if it is gone."""
    return StartToken(
        boot_id=boot_id(), create_time=proc.create_time(), start_ticks=_start_ticks(proc.pid)
    )


def same_process(recorded: StartToken, current: StartToken) -> bool:
    """Whether two tokens name the same process (same boot, same start)."""
    if recorded.boot_id != current.boot_id:
        return False
    if recorded.start_ticks is not None and current.start_ticks is not None:
        return recorded.start_ticks == current.start_ticks
    return abs(recorded.create_time - current.create_time) < 0.01


def started_before(candidate: StartToken, reference: StartToken) -> bool:
    """Whether ``candidate`` started strictly before ``reference`` (same boot assumed)."""
    if candidate.start_ticks is not None and reference.start_ticks is not None:
        return candidate.start_ticks < reference.start_ticks
    return candidate.create_time < reference.create_time - 0.01


def _start_ticks(pid: int) -> int | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        return read_stat(pid).start_ticks
    except FileNotFoundError:
        raise psutil.NoSuchProcess(pid) from None
    except (OSError, ValueError):
        return None


def marker_env(state_dir: str | None, child_key: str) -> dict[str, str]:
    """The environment marker for a child: its key, and the state dir when there is a ledger."""
    marker = {ENV_CHILD_KEY: child_key}
    if state_dir is not None:
        marker[ENV_STATE_DIR] = state_dir
    return marker


def child_env(overrides: Mapping[str, str | None], marker: dict[str, str]) -> dict[str, str]:
    """The environment of a child: ours, with ``overrides`` applied and ``marker`` on top."""
    env = dict(os.environ)
    # A daemon that itself runs under a corral must not pass its own marker on.
    env.pop(ENV_STATE_DIR, None)
    env.pop(ENV_CHILD_KEY, None)
    for name, value in overrides.items():
        if value is None:
            env.pop(name, None)
        else:
            env[name] = value
    env.update(marker)
    return env


def real_state_dir(state_dir: str | os.PathLike[str]) -> str:
    """The canonical spelling of a state directory, as markers and ledgers compare it."""
    return os.path.realpath(os.fspath(state_dir))


def read_marker(pid: int) -> tuple[str | None, str | None]:
    """The ``(state_dir, child_key)`` marker in ``pid``'s environment; Nones if absent/unreadable.

    The environment read is the one the process started with (``/proc/<pid>/environ``), which is
    what a child inherits, whatever the process did to its own ``os.environ`` since.
    """
    try:
        if os.path.isdir("/proc/self"):
            with open(f"/proc/{pid}/environ", "rb") as f:
                raw = f.read()
            env = dict(_split_environ(raw))
        else:
            env = {k: v for k, v in psutil.Process(pid).environ().items()}
    except (OSError, psutil.Error):
        return None, None
    return env.get(ENV_STATE_DIR), env.get(ENV_CHILD_KEY)


def _split_environ(raw: bytes) -> list[tuple[str, str]]:
    pairs = []
    for item in raw.split(b"\0"):
        if item.startswith(b"CORRAL_"):
            name, _, value = item.partition(b"=")
            pairs.append((os.fsdecode(name), os.fsdecode(value)))
    return pairs
