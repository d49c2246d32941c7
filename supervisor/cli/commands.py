"""The ``corral`` command line: run the daemon, and drive sessions through the client library.

Every command takes ``--state-dir`` before or after its name and honours
``CORRAL_STATE_DIR``. Output meant for scripts goes to stdout (``new`` prints the session id
alone on the first line; ``--json`` variants print JSON); errors are one line on stderr,
``corral: MESSAGE``, never a traceback (``--debug`` or ``CORRAL_DEBUG=1`` shows one). Exit
codes: 0 success, 1 failure, 2 usage error, 130 interrupted (``attach`` and ``logs
--follow`` detach on Ctrl-C with 0).

This module is the entry (``main``); the grammar is ``parser.build_parser``, and the handlers
live by subject: ``daemon``, ``sessions``, ``services``, ``workspaces``, ``ui``.
"""

from __future__ import annotations

import os
import sys
import traceback
from collections.abc import Callable, Sequence
from typing import NamedTuple

from msgspec import Struct

from protocol.errors import CorralError

from supervisor.cli.daemonctl import DaemonRunner
from supervisor.cli.parser import CommandAdder, build_parser, resolve
from supervisor.excgroup import lone_exception
from supervisor.logformat import DEBUG_ENV, debugging

__all__ = ["CommandAdder", "DaemonEntry", "build_parser", "main"]


class DaemonEntry(NamedTuple):
    """How to run a daemon: in this process (``run``) and as ``python -m module`` (``corral start``);
    ``config`` is the root Struct of its configuration file; ``local`` the application's own
    daemon-less commands."""

    run: DaemonRunner
    module: str
    config: type[Struct]
    extra: Callable[[CommandAdder], None] | None = None
    """Adds the application's own commands (``corral run``, ``corral probe``) to the parser."""
    components: tuple[str, ...] = ()
    """Distributions whose versions ``corral version`` lists after corral, Python and trio."""


def main(argv: Sequence[str] | None = None, *, daemon: DaemonEntry) -> int:
    """Run one command; returns the exit code (the console script exits with it)."""
    args = build_parser(daemon.extra).parse_args(argv)
    args.daemon_entry = daemon
    if getattr(args, "debug", False):
        os.environ[DEBUG_ENV] = "1"  # for this process, and the daemon `start` spawns
    try:
        return resolve(args.handler)(args) or 0
    except Exception as exc:  # noqa: BLE001 - the one place that turns anything into one line
        return _report(exc)
    except (KeyboardInterrupt, BaseExceptionGroup) as exc:
        return _report(exc)


def _report(exc: BaseException) -> int:
    """One line on stderr for a failure (1); an interrupt is 130; a closed stdout is quiet."""
    if isinstance(exc, BaseExceptionGroup):
        exc = lone_exception(exc)
    if isinstance(exc, KeyboardInterrupt):
        return 130
    if isinstance(exc, BrokenPipeError):
        _quiet_stdout()
        return 1
    if isinstance(exc, CorralError):
        message = exc.message
    elif isinstance(exc, OSError):
        message = str(exc)
    else:
        message = f"internal error: {type(exc).__name__}: {exc}"
    if debugging():
        traceback.print_exception(exc)
    print(f"corral: {' '.join(message.split())}", file=sys.stderr)
    return 1


def _quiet_stdout() -> None:
    """After a closed pipe (``corral logs | head``), keep Python from complaining at exit."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
