"""A native session's confinement, apart from the rest of the worker protocol: the harness
request carries it, and an idle daemon loads it without ``protocol.native``."""

from __future__ import annotations

from typing import Literal

import msgspec

__all__ = ["Confinement"]


class Confinement(msgspec.Struct, kw_only=True, frozen=True):
    """A sandboxed native session's confinement (``supervisor.sandbox.SandboxPlan`` as plain
    strings): the worker enforces it on itself with Landlock as its first act, so its file tools
    and every tool process it starts are held by the kernel; ``net`` other than ``on`` is also
    laid on each bash command (the worker itself keeps reaching its model). Under bubblewrap
    (``effective``) the worker already runs inside the session's mounts; Landlock, when
    ``landlock``, holds its file tools once more."""

    cwd: str
    read_only: list[str] = []
    writable: list[str] = []
    protected: list[str] = []
    masked: list[str] = []
    hidden: list[str] = []
    tmp_dir: str | None = None
    net: Literal["on", "model", "off"] = "on"
    effective: Literal["landlock", "bwrap"] = "landlock"
    """What holds the worker: its own Landlock ruleset, or bubblewrap around its whole process
    (then a bash command with ``net = "off"`` gets a network namespace of its own)."""
    landlock: bool = True
    """Whether the worker lays the Landlock ruleset on itself (always under ``landlock``; under
    ``bwrap`` where the kernel has Landlock and ``[sandbox] landlock`` is on)."""
    proxy_port: int | None = None
    """``net = "model"``: the loopback port of the session's proxy, the one TCP port a bash
    command may connect to; its proxy variables point there."""
