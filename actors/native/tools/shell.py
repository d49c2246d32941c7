"""The bash tool: one fresh shell per call, in its own process group, bounded in time and output.

``/bin/bash -c COMMAND`` (``/bin/sh`` where there is no bash) runs in the workspace root with
stdin at /dev/null and ``start_new_session``, so the shell and everything it starts share one
process group that can be signalled at once. The group is stopped (SIGTERM, ``bash_kill_grace``,
then SIGKILL to the group and to every descendant seen before the TERM, which catches those
that left the group) when:

* the timeout passes (the model's ``timeout``, default ``bash_timeout``, at most
  ``bash_max_timeout``): the result is a ``timeout`` error with the output so far;
* the awaiting asyncio task is cancelled (an interrupt), even while the shell is still being
  started: the group is stopped, then the ``CancelledError`` propagates (a second cancellation
  during the grace skips to SIGKILL);
* the shell has exited but something it started in the background still holds its output
  pipes after ``bash_drain_grace`` (``cmd &``): otherwise the call could never finish.
  A background job that redirected its output is left running.

stdout and stderr are read as they come and kept as head + tail (``HeadTail``).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Awaitable

import psutil

from .bounded import HeadTail
from .errors import ToolErrorCode
from .invoke import guarded
from .outcome import ToolOutcome
from .params import BashParams
from .workspace import Workspace

_POLL = 0.02


async def bash(ws: Workspace, params: BashParams) -> ToolOutcome:
    """Run ``command``; never raises except ``asyncio.CancelledError`` (after the group is killed)."""
    return await guarded(ws, lambda: _bash(ws, params))


async def _bash(ws: Workspace, params: BashParams) -> ToolOutcome:
    limits = ws.limits
    asked = params.timeout or limits.bash_timeout
    timeout = min(asked, limits.bash_max_timeout)
    notes = [f"[timeout lowered from {asked:g} s to the maximum of {timeout:g} s]"] if asked > timeout else []
    keep = max(limits.call_output_bytes // 4, 1)
    capture = _Capture(HeadTail(keep, keep), HeadTail(keep, keep))
    starting = asyncio.ensure_future(asyncio.get_running_loop().subprocess_exec(
        lambda: capture, _shell(), "-c", params.command, cwd=ws.root, env=ws.env,
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
        preexec_fn=ws.confine,
    ))
    try:
        transport, _ = await asyncio.shield(starting)
    except asyncio.CancelledError:
        # The shell may already run (and have started others) while asyncio connects its pipes;
        # asyncio would kill the shell alone. Let the start finish, then stop the whole group.
        with contextlib.suppress(Exception):
            transport, _ = await starting
            try:
                await _stop_group(transport, capture, limits.bash_kill_grace)
            finally:
                transport.close()
        raise
    timed_out = False
    try:
        try:
            async with asyncio.timeout(timeout):
                await capture.exited.wait()
                drained = await _within(capture.drained.wait(), limits.bash_drain_grace)
        except TimeoutError:
            timed_out, drained = True, False
        if not drained:
            if not timed_out:
                notes.append("[background processes still holding the output were killed]")
            await _stop_group(transport, capture, limits.bash_kill_grace)
            await _within(capture.drained.wait(), limits.bash_kill_grace)
    except BaseException:
        await _stop_group(transport, capture, limits.bash_kill_grace)
        raise
    finally:
        transport.close()
    return _outcome(capture, transport.get_returncode(), notes, timeout if timed_out else None)


def _shell() -> str:
    return "/bin/bash" if os.access("/bin/bash", os.X_OK) else "/bin/sh"


class _Capture(asyncio.SubprocessProtocol):
    """Feeds stdout/stderr into bounded sinks; flags the shell's exit and the pipes' EOF apart.

    (``asyncio.subprocess.Process.wait`` will not do: on Python 3.11 it also waits for the
    pipes to close, which a background job can hold open for ever.)
    """

    def __init__(self, out: HeadTail, err: HeadTail) -> None:
        self.sinks = {1: out, 2: err}
        self.open_pipes = {1, 2}
        self.exited = asyncio.Event()
        self.drained = asyncio.Event()
        self.shell: psutil.Process | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # Taken now, while the pid surely names our shell; psutil checks it against reuse later.
        if isinstance(transport, asyncio.SubprocessTransport):
            with contextlib.suppress(psutil.Error):
                self.shell = psutil.Process(transport.get_pid())

    def pipe_data_received(self, fd: int, data: bytes) -> None:
        self.sinks[fd].write(data)

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        self.open_pipes.discard(fd)
        if not self.open_pipes:
            self.drained.set()

    def process_exited(self) -> None:
        self.exited.set()


async def _within(waiting: Awaitable[object], seconds: float) -> bool:
    """Whether ``waiting`` finished within ``seconds`` (it is cancelled if not)."""
    try:
        async with asyncio.timeout(seconds):
            await waiting
    except TimeoutError:
        return False
    return True


async def _stop_group(transport: asyncio.SubprocessTransport, capture: _Capture, grace: float) -> None:
    """SIGTERM the group, wait up to ``grace`` for it to end, then SIGKILL what is left."""
    pgid = transport.get_pid()  # start_new_session: the shell leads its own group
    stragglers: list[psutil.Process] = []
    with contextlib.suppress(psutil.Error):
        if capture.shell is not None and capture.shell.is_running():
            stragglers = capture.shell.children(recursive=True)
    _signal_group(pgid, signal.SIGTERM)
    try:
        deadline = time.monotonic() + grace
        while _any_running(capture, stragglers) and time.monotonic() < deadline:
            await asyncio.sleep(_POLL)
    finally:
        _signal_group(pgid, signal.SIGKILL)
        for child in stragglers:
            with contextlib.suppress(psutil.Error):
                child.kill()  # psutil refuses if the pid now names another process
    await _within(capture.exited.wait(), grace)  # so the exit status is known


def _any_running(capture: _Capture, stragglers: list[psutil.Process]) -> bool:
    """Whether the shell or a descendant seen before the TERM still runs (zombies do not)."""
    if not capture.exited.is_set():
        return True
    for child in stragglers:
        with contextlib.suppress(psutil.Error):
            if child.is_running() and child.status() != psutil.STATUS_ZOMBIE:
                return True
    return False


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def _outcome(capture: _Capture, code: int | None, notes: list[str], timed_out: float | None) -> ToolOutcome:
    out, err = capture.sinks[1], capture.sinks[2]
    parts = list(notes)
    if out.total:
        parts.append(out.text().rstrip("\n"))
    if err.total:
        parts.append("[stderr]\n" + err.text().rstrip("\n"))
    if not out.total and not err.total:
        parts.append("(no output)")
    if timed_out is not None:
        parts.append(f"[killed: the command ran past its {timed_out:g} s timeout]")
        error: ToolErrorCode | None = ToolErrorCode.TIMEOUT
    elif code is not None and code < 0:
        parts.append(f"[killed by signal {signal.Signals(-code).name}]")
        error = ToolErrorCode.NONZERO_EXIT
    else:
        parts.append(f"[exit code {code}]")
        error = ToolErrorCode.NONZERO_EXIT if code else None
    return ToolOutcome(
        text="\n".join(parts), is_error=error is not None, code=error, exit_code=code,
        truncated=bool(out.elided or err.elided),
    )
