"""Probes for detection: short-lived children that say which version or which models a CLI has.

A probe is a supervised child like any other (``supervisor.proc.open_child``): it runs in a new
session and process group, dies with the daemon (SIGKILL as its parent-death signal), and
however the probe ends — an answer, end of output, its timeout, the caller's cancellation — the
block ends with a brutal close (``shutdown=0``): SIGKILL to the group and to every descendant
that left it, then the reap. Nothing a probe starts outlives it. Probes are not written to the
crash ledger: each lives for seconds, under a timeout, and dies with the daemon by signal.

Every probe returns a value, never raises for a failure of the probed program: ``ProbeFailed``
carries a reason a user can act on (``pi --version did not answer within 30s``), and
``timed_out`` tells a slow program from a broken one. Output is bounded (``OUTPUT_LIMIT``).

* ``run_probe(argv, env, timeout)``: stdin closed, stdout collected until it ends → ``Ran``.
* ``ask_probe(argv, env, request, answer, timeout)``: one request written to a JSON-lines
  child, its stdout lines fed to ``answer`` until it returns something; a ``Write`` it returns
  is one more request (a handshake of several steps: ACP's ``initialize`` then ``session/new``).
  A child that exits unasked is a reason quoting its last stderr line (values of key-like
  variables masked).
* ``probe_version(path, env, timeout)``: ``PATH --version``'s first line holding ``x.y.z``.
* ``package_version(binary, package)``: the ``version`` of the npm package that ships a binary.

``in_background()`` marks the probes its block starts (in this task and the tasks it starts)
as background work: they run under ``nice -n BACKGROUND_NICE`` (the daemon's detection prewarm),
so they never slow the daemon's start or a first request.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import json
import os
import re
import shutil
from collections.abc import Awaitable, Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Literal, TypeVar

import msgspec
import trio

from protocol.errors import ChildExited, CorralError
from supervisor.proc import ProcessSpec
from supervisor.threadimport import load

if TYPE_CHECKING:  # the process child loads with the first probe (detection runs after start)
    from supervisor.proc.child import ProcessChild

__all__ = ["BACKGROUND_NICE", "OUTPUT_LIMIT", "ProbeFailed", "Ran", "Write", "ask_probe",
           "in_background", "package_version", "parse_version", "probe_version", "run_probe"]

OUTPUT_LIMIT = 4 << 20
"""The most stdout a probe keeps (bytes); more is a failed probe, not a memory blow-up."""

BACKGROUND_NICE = 10
"""The nice value of a probe started in ``in_background()``."""

T = TypeVar("T")

_BACKGROUND: contextvars.ContextVar[bool] = contextvars.ContextVar("corral_probe_background",
                                                                    default=False)

_VERSION = re.compile(r"(\d+)\.(\d+)\.(\d+)")
_SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|CREDENTIAL", re.IGNORECASE)
_SAID_LIMIT = 200  # characters of a child's last stderr line quoted in a reason


class Ran(msgspec.Struct, frozen=True, kw_only=True):
    """A probe that ran to its end: its exit code, what it printed on stdout, and the last line
    it wrote on stderr (values of key-like variables masked; for a reason when it failed)."""

    exit_code: int | None
    stdout: str
    said: str = ""


class ProbeFailed(msgspec.Struct, frozen=True, kw_only=True):
    """A probe that gave no usable answer; ``reason`` is for people (it names no secret)."""

    reason: str
    timed_out: bool = False


class Write(msgspec.Struct, frozen=True):
    """An ``ask_probe`` answer that is not the result yet: write ``data`` to the child, read on."""

    data: bytes


async def run_probe(argv: list[str], env: Mapping[str, str], *, timeout: float,
                    label: str | None = None, merge_stderr: bool = False,
                    cwd: str | None = None) -> Ran | ProbeFailed:
    """Run ``argv`` with stdin closed until its stdout ends and it exits, at most ``timeout`` s.

    ``label`` names the probe in reasons (default: the program and its first argument);
    ``merge_stderr`` sends its stderr into ``stdout`` too, in the order it was written; ``cwd``
    is its working directory (default: the daemon's).
    Cancellation: cancelling the caller kills the probe's group and reaps it before returning.
    """
    name = label or _name(argv)
    output = bytearray()

    async def talk(child: ProcessChild) -> Ran | ProbeFailed:
        await child.close_stdin()
        async for chunk in child.frames():
            output.extend(chunk)
            if len(output) > OUTPUT_LIMIT:
                return ProbeFailed(reason=f"{name} printed more than {OUTPUT_LIMIT} bytes")
        status = await child.wait()
        return Ran(exit_code=status.exit_code, stdout=output.decode("utf-8", "replace"),
                   said=_said(child))

    if merge_stderr:  # the shell execs the program: the pid, the group and the kill stay the same
        argv = ["/bin/sh", "-c", 'exec "$@" 2>&1', "sh", *argv]
    return await _supervised(argv, env, timeout, "raw", talk, name, cwd=cwd)


async def ask_probe(argv: list[str], env: Mapping[str, str], request: bytes,
                    answer: Callable[[bytes], T | Write | None], *, timeout: float,
                    label: str | None = None, cwd: str | None = None) -> T | ProbeFailed:
    """Write ``request`` to a JSON-lines child and feed its stdout lines to ``answer`` until it
    returns something other than ``None`` or a ``Write`` (the result); at most ``timeout``
    seconds. A ``Write`` is sent to the child and the reading goes on.

    ``answer`` may raise ``ValueError`` (``msgspec.DecodeError`` is one) for a line it cannot
    read: that is a failed probe. ``cwd``: the child's working directory (default: the
    daemon's). ``label`` and cancellation: as ``run_probe``.
    """
    name = label or _name(argv)

    async def talk(child: ProcessChild) -> T | ProbeFailed:
        with contextlib.suppress(ChildExited):  # it ended unread: what it printed still counts
            await child.send(request)
        async for line in child.frames():
            if not line.strip():
                continue
            try:
                found = answer(line)
            except ValueError as exc:
                return ProbeFailed(reason=f"{name} answered garbage: {exc}")
            if isinstance(found, Write):
                with contextlib.suppress(ChildExited):
                    await child.send(found.data)
            elif found is not None:
                return found
        status = await child.wait()
        said = _said(child)
        return ProbeFailed(reason=f"{name} exited ({_how(status.exit_code)}) without answering"
                                  + (f": {said}" if said else ""))

    return await _supervised(argv, env, timeout, "ndjson", talk, name, cwd=cwd)


async def probe_version(path: str, env: Mapping[str, str], *, timeout: float) -> str | ProbeFailed:
    """The first line of ``path --version`` that holds an ``x.y.z``, stripped. Its stderr counts
    too: pi 0.73 prints its version there when stdout is not a terminal."""
    ran = await run_probe([path, "--version"], env, timeout=timeout, label=f"{path} --version",
                          merge_stderr=True)
    if isinstance(ran, ProbeFailed):
        return ran
    if ran.exit_code != 0:
        return ProbeFailed(reason=f"{path} --version exited ({_how(ran.exit_code)})")
    for line in ran.stdout.splitlines():
        if parse_version(line) is not None:
            return line.strip()
    first = ran.stdout.strip().splitlines()[:1]
    return ProbeFailed(reason=f"cannot read a version from {path} --version: {first[0] if first else ''!r}")


@contextlib.contextmanager
def in_background() -> Iterator[None]:
    """Run the probes started in this block at low CPU priority (see the module docstring)."""
    token = _BACKGROUND.set(True)
    try:
        yield
    finally:
        _BACKGROUND.reset(token)


def parse_version(text: str) -> tuple[int, int, int] | None:
    """The first ``x.y.z`` in ``text`` as a comparable tuple (``"codex-cli 0.171.0"`` → ``(0, 171, 0)``)."""
    match = _VERSION.search(text)
    if match is None:
        return None
    major, minor, patch = (int(part) for part in match.groups())
    return major, minor, patch


def package_version(binary: str, package: str) -> str | None:
    """The ``version`` of npm package ``package`` that ships ``binary`` (bin link resolved)."""
    directory = Path(binary).resolve().parent
    for folder in (directory, *directory.parents):
        try:
            data = json.loads((folder / "package.json").read_text())
        except (OSError, ValueError):
            continue
        if isinstance(data, dict) and data.get("name") == package:
            version = data.get("version")
            return version if isinstance(version, str) else None
    return None


async def _supervised(argv: list[str], env: Mapping[str, str], timeout: float,
                      framing: Literal["raw", "ndjson"],
                      talk: Callable[[ProcessChild], Awaitable[T | ProbeFailed]],
                      name: str, *, cwd: str | None = None) -> T | ProbeFailed:
    """Spawn ``argv`` as a brutal-close child with exactly ``env``, run ``talk`` on it under
    ``timeout``; the block's end kills the group and reaps it (also on cancellation)."""
    # ``env`` is the whole environment: variables of the daemon's own that it lacks are removed.
    overrides: dict[str, str | None] = {name: None for name in os.environ if name not in env}
    overrides.update(env)
    # Its stderr is logged and may be quoted in a reason: the values of key-like variables are masked.
    secrets = frozenset(value for key, value in env.items() if _SECRET_NAME.search(key))
    key = f"probe:{os.path.basename(argv[0])}"
    nice = _nice() if _BACKGROUND.get() else None
    if nice is not None:  # nice execs the program: the pid, the group and the kill stay the same
        argv = [nice, "-n", str(BACKGROUND_NICE), *argv]
    spec = ProcessSpec(key=key, kind="probe", argv=argv,
                       cwd=cwd, env=overrides, shutdown=0, framing=framing, frame_limit=OUTPUT_LIMIT,
                       death_signal="SIGKILL", secrets=secrets)
    await load("supervisor.proc.child")  # off the event loop, the first time
    from supervisor.proc.child import open_child

    with trio.move_on_after(timeout):
        try:
            async with open_child(spec) as child:
                return await talk(child)
        except CorralError as exc:  # launch failed, or a line longer than the limit
            return ProbeFailed(reason=f"{name}: {exc.message}")
    return ProbeFailed(reason=f"{name} did not answer within {timeout:g}s", timed_out=True)


@functools.cache
def _nice() -> str | None:
    """coreutils' ``nice``, if the daemon's ``PATH`` has it (else background probes run as any)."""
    return shutil.which("nice")


def _said(child: ProcessChild) -> str:
    """The child's last non-blank stderr line (masked), cut to ``_SAID_LIMIT`` characters."""
    line = next((line.strip() for line in reversed(child.stderr_tail()) if line.strip()), "")
    return line[:_SAID_LIMIT]


def _name(argv: list[str]) -> str:
    return " ".join([os.path.basename(argv[0]), *argv[1:2]])


def _how(exit_code: int | None) -> str:
    return f"status {exit_code}" if exit_code is not None else "killed by a signal"
