"""The daemon's commands: ``corral daemon``, ``start``, ``stop``, ``status``.

Each handler takes the parsed arguments and calls the lifetime functions of ``daemonctl``;
``status`` prints the report as text (``--json``: as JSON). The daemon to run comes from the
``DaemonEntry`` that ``commands.main`` puts on the arguments.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec
import trio

from protocol.models import ChildProcess, SessionInfo

from supervisor.cli import daemonctl
from supervisor.cli.tables import child_rows, duration, session_rows, table
from supervisor.statedir import resolve_state_dir

if TYPE_CHECKING:
    from supervisor.cli.commands import DaemonEntry

__all__ = ["daemon", "start", "status", "stop"]


def daemon(args: argparse.Namespace) -> int:
    entry: DaemonEntry = args.daemon_entry
    daemonctl.run_foreground(_state(args), entry.run, entry.config, port=args.port, config=args.config,
                             placement=_placement(args))
    return 0


def start(args: argparse.Namespace) -> None:
    trio.run(lambda: daemonctl.start(_state(args), args.daemon_entry.module, port=args.port,
                                        config=args.config, wait=args.wait, out=sys.stdout,
                                        placement=_placement(args)))


def stop(args: argparse.Namespace) -> None:
    trio.run(lambda: daemonctl.stop(_state(args), timeout=args.timeout, out=sys.stdout, err=sys.stderr))


def status(args: argparse.Namespace) -> None:
    report = trio.run(daemonctl.status_report, _state(args))
    if args.json:
        print(json.dumps(report, indent=2))
        return
    status: dict[str, Any] = report["status"]  # type: ignore[assignment]
    daemon: dict[str, Any] = report["daemon"] or {}  # type: ignore[assignment]
    print(f"corral {status['version']} · pid {status['pid']} · up {duration(status['uptime_s'])}"
          f" · {status['clients']} client(s)")
    print(f"state dir {report['state_dir']}")
    print(f"listening {daemon.get('url', '?')} and {daemon.get('socket', '?')}")
    names = [c["name"] for c in status.get("connections", [])]
    if names:  # who is attached, as each client named itself (this command among them)
        print(f"connected {', '.join(names)}")
    sessions = msgspec.convert(report["sessions"], list[SessionInfo])
    print(f"\nsessions ({len(sessions)})")
    if sessions:
        table(session_rows(sessions))
    children = status["children"]
    print(f"\nchildren ({len(children)})")
    if children:
        table(child_rows(msgspec.convert(children, list[ChildProcess])))


def _placement(args: argparse.Namespace) -> daemonctl.PlacementFlags:
    return daemonctl.PlacementFlags(backend=args.placement, address=args.ray_address)


def _state(args: argparse.Namespace) -> Path:
    return resolve_state_dir(getattr(args, "state_dir", None))
