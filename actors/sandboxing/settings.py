"""A session's sandbox settings: ``options.sandbox`` over ``[sandbox]``, checked against this machine.

``resolve`` decodes ``options.sandbox`` (``bad_request`` naming the field when malformed) and
merges it over the config; ``mode = "off"`` resolves to ``None`` (the session is unconfined).
``check`` asks ``supervisor.sandbox.available`` which backend the mode gets here and raises
``sandbox_unavailable`` with the reason when none: never a session that runs unconfined.
"""

from __future__ import annotations

import os
from typing import Any

import msgspec

from actors.sandboxing.config import SandboxConfig
from protocol.errors import BadRequest, SandboxUnavailable
from protocol.sandbox import SandboxInfo, SandboxOptions
from supervisor.sandbox.allowlist import parse_host_port
from supervisor.sandbox.available import Unavailable, available, landlock_problem

__all__ = ["check", "check_worker", "requested", "resolve"]


def requested(options: dict[str, Any]) -> SandboxOptions:
    """``options.sandbox`` decoded; a string is Codex's own ``sandbox`` option (not ours)."""
    raw = options.get("sandbox")
    if raw is None or isinstance(raw, str):
        return SandboxOptions()
    try:
        return msgspec.convert(raw, SandboxOptions)
    except msgspec.ValidationError as exc:
        raise BadRequest(f"options.sandbox: {exc}", data={"field": "options.sandbox"}) from None


def resolve(options: dict[str, Any], config: SandboxConfig) -> SandboxInfo | None:
    """The session's sandbox as asked (``effective`` still to be checked: see ``check``), or
    ``None`` for an unconfined session."""
    asked = requested(options)
    for host in [*config.allow_hosts, *(asked.allow_hosts or [])]:
        _check_host(host)
    extra_rw = _unique([_absolute(p, "extra_rw") for p in [*config.extra_rw, *(asked.extra_rw or [])]])
    deny_read = _unique([_absolute(p, "deny_read") for p in [*config.deny_read, *(asked.deny_read or [])]])
    mode = asked.mode or config.mode
    if mode == "off":
        return None
    return SandboxInfo(
        mode=mode, effective="bwrap" if mode == "bwrap" else "landlock" if mode == "landlock" else "off",
        net=asked.net or config.net,
        allow_hosts=_unique([*config.allow_hosts, *(asked.allow_hosts or [])]),
        extra_rw=extra_rw, deny_read=deny_read)


def check(info: SandboxInfo, config: SandboxConfig, *, path: str | None = None) -> SandboxInfo:
    """``info`` with ``effective`` set to the backend its mode gets here; ``SandboxUnavailable``
    when none can honour it (``net = "model"`` always can: each such session runs its own proxy,
    ``actors.sandboxing.netproxy``). Blocking: it may run ``bwrap`` once (cached)."""
    found = available(info.mode, net=info.net, landlock_enabled=config.landlock, path=path)
    if isinstance(found, Unavailable) or found == "off":
        raise SandboxUnavailable(f"sandbox mode {info.mode!r} is unavailable here: {found}",
                                 data={"mode": info.mode, "net": info.net})
    return msgspec.structs.replace(info, effective=found)


def check_worker(info: SandboxInfo, config: SandboxConfig, *, harness: str) -> None:
    """``SandboxUnavailable`` when a native worker cannot be held as ``info`` (checked) says.
    Under bubblewrap the worker keeps the host's network (it calls its model), so its bash
    commands reach the session's proxy (``net = "model"``) through Landlock's TCP rules: those
    must be there. (``off`` needs no Landlock: each command gets an empty network namespace.)"""
    if info.effective != "bwrap" or info.net != "model":
        return
    problem = landlock_problem(info.net, config.landlock)
    if problem is not None:
        raise SandboxUnavailable(
            f"the {harness} harness's bash commands reach the sandbox's proxy through Landlock's "
            f"TCP rules, and {problem}", data={"harness": harness, "mode": info.mode, "net": info.net})


def _absolute(path: str, field: str) -> str:
    expanded = os.path.expanduser(path)
    if not os.path.isabs(expanded):
        raise BadRequest(f"options.sandbox.{field}: {path!r} is not an absolute path",
                         data={"field": f"options.sandbox.{field}"})
    return os.path.normpath(expanded)


def _check_host(item: str) -> None:
    """The proxy's own parser (``supervisor.sandbox.allowlist``) decides what an item may be."""
    try:
        parse_host_port(item)
    except BadRequest:
        raise BadRequest(f"options.sandbox.allow_hosts: {item!r} is not HOST or HOST:PORT",
                         data={"field": "options.sandbox.allow_hosts"}) from None


def _unique(items: list[str]) -> list[str]:
    return list(dict.fromkeys(items))
