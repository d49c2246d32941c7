"""``corral acp``: run corral as an ACP agent on this process's stdin/stdout (for editors).

stdout carries ACP messages only: the handler keeps the real stdout for the protocol and points
file descriptor 1 (and ``sys.stdout``) at stderr, so nothing else can write there; logs go to
stderr. The daemon is started first when none answers, as ``corral start`` would.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from typing import TYPE_CHECKING

import trio

from supervisor.acp.config import AcpConfig
from supervisor.cli import daemonctl
from supervisor.config import load_config
from supervisor.statedir import resolve_state_dir

if TYPE_CHECKING:
    from supervisor.cli.commands import DaemonEntry

__all__ = ["HELP", "acp", "add_arguments"]

HELP = "Run corral as an ACP agent on stdin/stdout (an editor starts it)."


def add_arguments(sub: argparse.ArgumentParser) -> None:
    sub.add_argument("--harness", help="harness of new sessions (default: [acp] harness, else "
                                       "claude when available, else native)")
    sub.add_argument("--model", help="model of new sessions (default: the harness's)")
    sub.add_argument("--permission-mode", choices=("ask", "auto_edit", "auto", "inherit"),
                     default="ask", metavar="MODE",
                     help="permission mode of new sessions: ask (default), auto_edit, auto, inherit")
    sub.add_argument("--config", metavar="FILE",
                     help="configuration file (for [acp], and for a daemon it starts)")


def acp(args: argparse.Namespace) -> int:
    # The ACP shell: only this command loads it.
    from supervisor.acp import AcpOptions, serve

    entry: DaemonEntry = args.daemon_entry
    root = resolve_state_dir(getattr(args, "state_dir", None))
    loaded = load_config(entry.config, args.config)
    section = getattr(loaded.config, "acp", AcpConfig())
    protocol_out = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    logging.basicConfig(stream=sys.stderr, level=logging.INFO,
                        format="corral acp: %(levelname)s %(name)s: %(message)s")
    for warning in loaded.warnings:
        logging.getLogger("corral.acp").warning("config: %s", warning)

    async def ensure_daemon() -> None:
        await daemonctl.start(root, entry.module, port=None, config=args.config, wait=30.0,
                              out=sys.stderr)

    options = AcpOptions(state_dir=root, ensure_daemon=ensure_daemon,
                         harness=args.harness or section.harness or None, model=args.model,
                         permission_mode=args.permission_mode)

    async def run() -> None:
        stdin = trio.lowlevel.FdStream(os.dup(0))
        stdout = trio.lowlevel.FdStream(protocol_out)
        async with stdin, stdout:
            await serve(options, stdin, stdout)

    trio.run(run)
    return 0
