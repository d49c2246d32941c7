"""What a process child is asked to be (``ProcessSpec``) and how it ended (``ExitStatus``).

Plain data and the pure helpers that interpret it (checking a spec, redacting a stderr line,
the return code of a status); no trio and no process library, so the sans-IO cores that take an
``ExitStatus`` stay light. ``supervisor.proc.child`` re-exports both Structs.
"""

from __future__ import annotations

import signal
from collections.abc import Mapping
from typing import Literal

import msgspec

from protocol.framing import DEFAULT_LIMIT

Framing = Literal["ndjson", "content_length", "length_prefix", "raw"]
ExitReason = Literal["exited", "crashed", "killed", "lost"]


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
    or ``exit_code`` says how), ``lost`` (a remote child whose node or node agent was lost:
    how it ended is not known).
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


def returncode(status: ExitStatus) -> int:
    if status.signal is not None and status.signal in signal.Signals.__members__:
        return -signal.Signals[status.signal]
    return status.exit_code if status.exit_code is not None else -signal.SIGKILL
