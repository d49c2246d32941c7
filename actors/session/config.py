"""Sections ``[sessions]`` and ``[harness.<name>]`` of the configuration, and what a session reads.

The root Struct of the whole file is ``actors.app.Config`` (the composition root: it also holds
the server's ``[daemon]``, which only ``actors.app`` may import). ``SessionSettings`` is what the
session side reads of it, so ``actors.session`` needs no import of the root.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Annotated, Any, Protocol

from msgspec import Meta, Struct

from actors.sandboxing.config import SandboxConfig
from actors.session.logfile import Durability
from supervisor.proc.config import ChildrenConfig

__all__ = ["KILL_MARGIN", "HarnessConfig", "HarnessesConfig", "SessionSettings", "SessionsConfig",
           "harness_defaults"]

KILL_MARGIN = 5.0
"""Seconds beyond ``close_timeout`` for the SIGKILL at the end of a close sequence and the reap."""

_Count = Annotated[int, Meta(ge=0)]
_Capacity = Annotated[int, Meta(ge=1)]
_Seconds = Annotated[float, Meta(ge=0)]
_PositiveSeconds = Annotated[float, Meta(gt=0)]
_Factor = Annotated[float, Meta(ge=1)]
_Fraction = Annotated[float, Meta(ge=0, le=1)]


class SessionsConfig(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Section ``[sessions]``: restarts, timeouts and durability of every session actor."""

    restart_intensity: _Count = 3  # at most this many restarts ...
    restart_period: _PositiveSeconds = 60.0  # ... within this many seconds
    backoff_initial: _Seconds = 0.5
    backoff_factor: _Factor = 2.0
    backoff_max: _Seconds = 30.0
    backoff_jitter: _Fraction = 0.2  # each later delay is scaled by a random factor in [1, 1+j]
    close_timeout: _Seconds = 10.0  # bound on a harness's close sequence
    permission_timeout: _PositiveSeconds = 600.0  # an open permission is then denied ("timeout")
    stall_threshold: _PositiveSeconds = 300.0
    durability: Durability = "turn"
    fsync_interval: _Seconds = 0.1
    inbox_size: _Capacity = 256
    memory_tail: _Count = 2048  # events kept in memory per session for fast replay
    resume_on_boot: bool = False  # resume the sessions the last daemon closed as it stopped or crashed


class HarnessConfig(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A ``[harness.<name>]`` table: how to launch one harness (paths are used as written)."""

    binary: str | None = None  # None: found on PATH
    extra_args: list[str] = []
    home: str | None = None  # None: the user's own home
    env: dict[str, str] = {}


class HarnessesConfig(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Section ``[harnesses]``: the detection of every harness (``corral harnesses``)."""

    prewarm: bool = True
    """Detect every harness in the background a few seconds after the daemon is ready (its
    probes at low CPU priority), so the first ``harness.list`` answers from the cache."""


class _ShutdownBound(Protocol):
    @property
    def shutdown_timeout(self) -> float: ...


class SessionSettings(Protocol):
    """What the session side reads of the root configuration (``actors.app.Config`` has it)."""

    @property
    def daemon(self) -> _ShutdownBound: ...

    @property
    def sessions(self) -> SessionsConfig: ...

    @property
    def children(self) -> ChildrenConfig: ...

    @property
    def harness(self) -> Mapping[str, HarnessConfig]: ...

    @property
    def sandbox(self) -> SandboxConfig: ...


def harness_defaults(
    config: SessionSettings, harness: str
) -> tuple[dict[str, Any], dict[str, str]]:
    """The session options and env that ``[harness.<name>]`` gives every session of a harness.

    A session's own ``options`` and ``env`` win over these; ``~`` in paths is expanded.
    """
    table = config.harness.get(harness)
    if table is None:
        return {}, {}
    options: dict[str, Any] = {}
    if table.binary:
        options["binary"] = os.path.expanduser(table.binary)
    if table.home:
        options["home"] = os.path.expanduser(table.home)
    if table.extra_args:
        options["extra_args"] = list(table.extra_args)
    return options, dict(table.env)
