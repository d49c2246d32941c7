"""``corral mcp-server``: corral's tools as an MCP server on this process's stdin/stdout.

For ``claude mcp add corral -- corral mcp-server``, Codex's ``[mcp_servers.corral]`` and any
other MCP client. Each tool call is a client of the running daemon (``supervisor.mcpserver``);
the daemon is started first when none answers, as ``corral start`` would. stdout carries MCP
messages only: logs and the start-up line go to stderr.
"""

from __future__ import annotations

import argparse
import logging
import sys
from typing import TYPE_CHECKING

import trio

from protocol.errors import CorralError

from supervisor.cli import daemonctl
from supervisor.statedir import resolve_state_dir

if TYPE_CHECKING:
    from supervisor.cli.commands import DaemonEntry

__all__ = ["HELP", "add_arguments", "mcp_server"]

HELP = "Serve corral's tools over MCP on stdin/stdout (`claude mcp add corral -- corral mcp-server`)."

log = logging.getLogger("corral.mcpserver")


def add_arguments(sub: argparse.ArgumentParser) -> None:
    sub.add_argument("--config", metavar="FILE", help="configuration file of a daemon it starts")


def mcp_server(args: argparse.Namespace) -> int:
    from supervisor.client import open_client  # with this command only, not every command line
    from supervisor.mcpserver.server import serve_stdio  # the MCP SDK: this command only

    entry: DaemonEntry = args.daemon_entry
    root = resolve_state_dir(getattr(args, "state_dir", None))
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING,
                        format="corral mcp-server: %(levelname)s %(name)s: %(message)s")

    async def run() -> None:
        try:
            await daemonctl.start(root, entry.module, port=None, config=args.config, wait=30.0,
                                  out=sys.stderr)
        except CorralError as exc:  # the tools say daemon_not_running until one runs
            log.warning("could not start the daemon: %s", exc.message)
        await serve_stdio(lambda name: open_client(root, name=name))

    trio.run(run)
    return 0
