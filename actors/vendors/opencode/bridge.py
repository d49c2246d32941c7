"""``python -m actors.vendors.opencode.bridge -- OPENCODE serve …``: one OpenCode session as a
stdio child, for a placement backend that runs session children on other machines.

On the daemon's machine an OpenCode session is no process of its own: it attaches to a shared
``opencode serve`` over loopback HTTP (``transport``). A node of a cluster is not on the daemon's
loopback, and what a placement backend carries is a child's stdin and stdout. So on a node the
session's child is this bridge: it runs *its own* ``opencode serve`` (the argv after ``--``, in
its cwd, with its environment: the server's launch, ``launch.build_launch``) as the daemon's
``opencode`` supervisor would (``server.OpenCodeServer``), attaches one ``transport.ServerChild``
to it and puts that child's two directions on its pipes:

* stdin: the translator's ``wire.Call`` lines, as ``ServerChild.send`` takes them;
* stdout: what ``ServerChild.frames`` yields (the session's events and the calls' answers, deltas
  already joined), one length-prefixed frame each (``protocol.framing.LengthPrefixFramer``: an
  HTTP body may hold newlines).

So the translator in the daemon reads the same frames from a node as from a local server, and
clients see the same events. The end of stdin is the session's close: the queued calls finish
(bounded), the server is stopped and the bridge exits 0. When the server dies under it, the
bridge ends as the server did (the same signal, or exit code), which a local session reports as
its child's exit too; the session restarts and resumes by its OpenCode session id.

One server per session, not one per launch fingerprint: sharing would need a node-wide service
outside the session's child. Stdout carries frames only: descriptor 1 is moved aside at start and
stray prints go to stderr.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import sys

import trio

from actors.harness import Launch
from protocol.errors import ChildExited, CorralError
from protocol.framing import LengthPrefixFramer, NdjsonFramer
from supervisor.proc.spec import ExitStatus

from .server import OpenCodeServer, ServerSettings
from .transport import ServerChild

__all__ = ["MODULE", "main"]

MODULE = "actors.vendors.opencode.bridge"

log = logging.getLogger("corral.opencode.bridge")

_READ = 1 << 16
_ATTACH_TIMEOUT = 90.0
_SERVER_SHUTDOWN = 1.0
"""The server's close grace: ``opencode serve`` ignores the end of its stdin and stops on
SIGTERM (in 0.1 s here), which comes after half of it; the bridge's own close waits for it."""


def main(argv: list[str] | None = None) -> int:
    """Run the bridge until stdin ends or the server dies; the exit code (see the docstring)."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["--"]:
        args = args[1:]
    if not args:
        sys.stderr.write(f"usage: python -m {MODULE} -- OPENCODE serve [ARGS...]\n")
        return 2
    frames_out = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr,
                        format="%(levelname)s %(name)s: %(message)s")
    try:
        status = trio.run(_bridge, args, 0, frames_out)
    except Exception as exc:  # noqa: BLE001 (the server did not start: one line, for the session)
        sys.stderr.write(f"opencode bridge: {_first(exc)}\n")
        return 1
    return _end_as(status)


def _first(exc: BaseException) -> str:
    """The message of the first error ``exc`` holds (a nursery wraps it in a group)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc.message if isinstance(exc, CorralError) else f"{type(exc).__name__}: {exc}"


async def _bridge(argv: list[str], in_fd: int, out_fd: int) -> ExitStatus | None:
    """Serve one session; the server's status when it died under the session, else ``None``."""
    settings = ServerSettings(shutdown=_SERVER_SHUTDOWN)
    # The environment is this process's own: the server inherits it (the launch's env).
    server = OpenCodeServer("bridge", Launch(argv=argv, env={}, cwd=os.getcwd()), ledger=None,
                            settings=settings)
    closing = trio.Event()
    async with trio.open_nursery() as nursery:
        await nursery.start(_serve, server)
        attachment = await server.attach(_ATTACH_TIMEOUT)
        child = ServerChild(attachment)
        nursery.start_soon(child.work)
        nursery.start_soon(_calls, trio.lowlevel.FdStream(in_fd), child, closing, settings.frame_limit)
        framer = LengthPrefixFramer(settings.frame_limit)
        out = trio.lowlevel.FdStream(out_fd)
        try:
            async for frame in child.frames():
                await out.send_all(framer.encode(frame))
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            log.warning("stdout is closed: the session is gone")
        nursery.cancel_scope.cancel()  # stops the server (its close sequence is shielded)
    return None if closing.is_set() else attachment.ended


async def _serve(server: OpenCodeServer, *,
                 task_status: trio.TaskStatus[OpenCodeServer] = trio.TASK_STATUS_IGNORED) -> None:
    """One generation of the server, no restart: the session's supervisor restarts the bridge
    (a new placement, maybe another node). Its end reaches the session through its attachment."""
    with contextlib.suppress(ChildExited):
        await server.run(task_status=task_status)


async def _calls(stdin: trio.lowlevel.FdStream, child: ServerChild, closing: trio.Event,
                 limit: int) -> None:
    """Hand each stdin line to the child; at the end of stdin, close it (its calls drain)."""
    framer = NdjsonFramer(limit)
    try:
        while True:
            data = await stdin.receive_some(_READ)
            if not data:
                break
            framer.receive_data(data)
            for line in framer.frames():
                if line.strip():
                    await child.send(line)
    except CorralError as exc:  # garbage on stdin, or the server went: the session is over
        log.warning("stdin: %s", exc.message)
    except ValueError as exc:
        log.warning("stdin: %s", exc)
    closing.set()
    await child.close()


def _end_as(status: ExitStatus | None) -> int:
    """Exit as the server did: its signal (sent to this process) or its exit code; 0 for none."""
    if status is None:
        return 0
    if status.signal is not None:
        number = getattr(signal.Signals, status.signal, None)
        if number is not None:
            sys.stderr.flush()
            with contextlib.suppress(OSError, ValueError):  # SIGKILL and SIGSTOP have no handler
                signal.signal(number, signal.SIG_DFL)
            os.kill(os.getpid(), number)
        return 1
    return status.exit_code if status.exit_code is not None else 1


if __name__ == "__main__":
    sys.exit(main())
