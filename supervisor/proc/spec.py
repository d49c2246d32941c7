"""What a process child is asked to be (``ProcessSpec``) and how it ended (``ExitStatus``).

Plain data and the pure helpers that interpret it: the child's environment, its framer, the
exit status read from the kernel. ``supervisor.proc.child`` re-exports both Structs.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Mapping
from functools import partial
from typing import Literal

import msgspec

from protocol.framing import (
    DEFAULT_LIMIT,
    ContentLengthFramer,
    FramerFactory,
    LengthPrefixFramer,
    NdjsonFramer,
)
from supervisor.proc.pipes import RawFramer, peek_exit
from supervisor.proc.identity import ENV_CHILD_KEY, ENV_STATE_DIR

Framing = Literal["ndjson", "content_length", "length_prefix", "raw"]
ExitReason = Literal["exited", "crashed", "killed"]


class ProcessSpec(msgspec.Struct, kw_only=True, frozen=True):
    """How to run one child.

    ``env`` entries override ``os.environ``; a ``None`` value removes the variable. ``shutdown``
    bounds the close sequence (seconds; 0 kills at once). ``frame_limit`` bounds one stdout
    frame (the frames of one 64 KiB read and one partial frame are all that is held).
    ``death_signal`` is sent to the child if the daemon dies (Linux; None for none).
    """

    key: str
    argv: list[str]
    kind: str = "process"
    cwd: str | None = None
    env: Mapping[str, str | None] = msgspec.field(default_factory=dict)
    shutdown: float = 5.0
    framing: Framing = "ndjson"
    frame_limit: int = DEFAULT_LIMIT
    stderr_lines: int = 200
    stderr_line_limit: int = 4096
    secrets: frozenset[str] = frozenset()
    """Values (e.g. the session's env) masked as ``***`` in the stderr lines kept and logged."""
    death_signal: str | None = "SIGTERM"


class ExitStatus(msgspec.Struct, kw_only=True, frozen=True):
    """How a child ended.

    ``reason``: ``exited`` (it ended by itself with ``exit_code``), ``crashed`` (a signal we did
    not send, named in ``signal``), ``killed`` (it ended after our SIGTERM or SIGKILL; ``signal``
    or ``exit_code`` says how).
    """

    reason: ExitReason
    exit_code: int | None = None
    signal: str | None = None

    @property
    def ok(self) -> bool:
        """Whether the child ended by itself with status 0."""
        return self.reason == "exited" and self.exit_code == 0


def redact(line: str, secrets: frozenset[str]) -> str:
    """``line`` with every secret value (of 4 characters or more) replaced by ``***``."""
    for secret in secrets:
        if len(secret) >= 4 and secret in line:
            line = line.replace(secret, "***")
    return line


def validate(spec: ProcessSpec) -> None:
    if not spec.argv:
        raise ValueError(f"child {spec.key!r}: argv is empty")
    if spec.shutdown < 0:
        raise ValueError(f"child {spec.key!r}: shutdown must be >= 0, got {spec.shutdown}")
    if spec.death_signal is not None and spec.death_signal not in signal.Signals.__members__:
        raise ValueError(f"child {spec.key!r}: unknown death signal {spec.death_signal!r}")


def child_env(overrides: Mapping[str, str | None], marker: dict[str, str]) -> dict[str, str]:
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


def framer_factory(spec: ProcessSpec) -> FramerFactory:
    match spec.framing:
        case "ndjson":
            return partial(NdjsonFramer, spec.frame_limit)
        case "content_length":
            return partial(ContentLengthFramer, spec.frame_limit)
        case "length_prefix":
            return partial(LengthPrefixFramer, spec.frame_limit)
        case "raw":
            return partial(RawFramer, spec.frame_limit)


def status_of(pid: int, *, killed: bool) -> ExitStatus:
    exit_code, sig = peek_exit(pid)
    reason: ExitReason = "killed" if killed else "crashed" if sig is not None else "exited"
    return ExitStatus(reason=reason, exit_code=exit_code, signal=sig)


def returncode(status: ExitStatus) -> int:
    if status.signal is not None and status.signal in signal.Signals.__members__:
        return -signal.Signals[status.signal]
    return status.exit_code if status.exit_code is not None else -signal.SIGKILL
