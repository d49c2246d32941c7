"""The command line's grammar: every subcommand, its arguments and its handler, in help order.

``build_parser`` adds the commands in the order ``corral --help`` lists them; the handlers live
by subject (``daemon``, ``sessions``, ``services``, ``workspaces``, ``ui``) and each takes the
parsed ``argparse.Namespace``. ``--state-dir`` is accepted before and after the subcommand.
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable

from supervisor.cli import acp, mcpserver
from supervisor.cli.ui import add_ui_command
from supervisor.cli.usage import Parser
from supervisor.cli.version import add_version_flag
from supervisor.cli.workspaces import add_workspace_commands

__all__ = ["CommandAdder", "Handler", "build_parser", "resolve"]

Handler = Callable[[argparse.Namespace], int | None]
"""A subcommand's handler: takes the parsed arguments, returns the exit code (``None``: 0)."""

CommandAdder = Callable[[str, Handler | str, str], argparse.ArgumentParser]
"""Adds one subcommand (name, handler, help) to the parser and returns its parser. The handler
is a function, or ``"module:function"`` imported only when that command runs (``resolve``; a
module name with a leading dot is relative to ``supervisor.cli``), so parsing one command line
imports no other command's module: ``corral daemon`` loads neither the client library nor ACP."""


def resolve(handler: Handler | str) -> Handler:
    """The handler itself, importing its module if it was given as ``"module:function"``."""
    if not isinstance(handler, str):
        return handler
    module, _, name = handler.partition(":")
    function: Handler = getattr(importlib.import_module(module, __package__), name)
    return function


def build_parser(extra: Callable[[CommandAdder], None] | None = None) -> argparse.ArgumentParser:
    """The whole command line; ``--state-dir`` is accepted before and after the subcommand.
    ``extra`` adds the application's commands."""
    common = Parser(add_help=False)
    # SUPPRESS: a subcommand that was not given --state-dir must not erase one given before it.
    common.add_argument("--state-dir", metavar="DIR", default=argparse.SUPPRESS,
                        help="the daemon's state directory (default: $CORRAL_STATE_DIR, "
                             "else $XDG_STATE_HOME/corral)")
    common.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                        help="show tracebacks (as CORRAL_DEBUG=1; a daemon started with it "
                             "logs them too)")
    parser = Parser(prog="corral", parents=[common],
                    description="Run coding-agent sessions under a local supervising daemon.")
    add_version_flag(parser)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    def command(name: str, handler: Handler | str, help: str) -> argparse.ArgumentParser:
        sub = commands.add_parser(name, parents=[common], help=help, description=help)
        sub.set_defaults(handler=handler)
        return sub

    for name, verb in (("daemon", "Run the daemon in the foreground."),
                       ("start", "Start the daemon in the background; return once it is ready.")):
        sub = command(name, f".daemon:{name}", verb)
        sub.add_argument("--port", type=int, help="TCP port (0: any free port; default: config)")
        sub.add_argument("--config", metavar="FILE", help="configuration file")
        sub.add_argument("--placement", choices=("local", "ray"),
                         help="where session children run (default: config [placement] backend)")
        sub.add_argument("--ray-address", metavar="ADDR",
                         help="with --placement ray: the cluster, auto, HOST:PORT or "
                              "ray://HOST:PORT (default: config [placement] address)")
        if name == "start":
            sub.add_argument("--wait", type=float, default=20.0, metavar="SECONDS",
                             help="how long to wait for the daemon to be ready (default 20)")
    command("stop", ".daemon:stop", "Stop the daemon gracefully.").add_argument(
        "--timeout", type=float, default=60.0, metavar="SECONDS",
        help="how long to wait for the daemon to exit (default 60)")
    command("status", ".daemon:status", "Show the daemon, its sessions and its children.").add_argument(
        "--json", action="store_true", help="print JSON")

    sub = command("new", ".sessions:new", "Create a session; prints its id alone on the first line.")
    sub.add_argument("--harness", required=True, help="harness name (see `corral harnesses`)")
    sub.add_argument("--cwd", help="working directory (default: the current one)")
    sub.add_argument("--model")
    sub.add_argument("--prompt", help="first prompt")
    sub.add_argument("--name")
    sub.add_argument("--permissions", choices=("ask", "auto_edit", "auto", "inherit"),
                     metavar="MODE", help="permission mode: ask, auto_edit, auto or inherit")
    sub.add_argument("--allow-tool", action="append", default=[], metavar="PATTERN",
                     help="tool-name pattern always allowed (repeatable)")
    sub.add_argument("--env", action="append", default=[], metavar="KEY=VALUE", type=_pair,
                     help="environment for the harness only (repeatable; never stored)")
    sub.add_argument("--option", action="append", default=[], metavar="KEY=VALUE", type=_pair,
                     help="harness option; VALUE is JSON or else a string (repeatable)")
    sub.add_argument("--goal", metavar="TEXT", help="native: an autonomous run toward TEXT (its "
                                                    "first prompt), until done or out of budget")
    sub.add_argument("--max-turns", type=int, metavar="N",
                     help="with --goal: the most turns the run takes (default 20)")
    sub.add_argument("--worktree", action="store_true",
                     help="run in a new git worktree of the repository that contains the cwd")
    sub.add_argument("--base", metavar="REF", help="with --worktree: the commit to branch from "
                                                   "(default: the current HEAD)")
    sub.add_argument("--branch", metavar="NAME", help="with --worktree: the new branch "
                                                      "(default: corral/<name or id>)")
    command("ls", ".sessions:ls", "List sessions.").add_argument("--json", action="store_true",
                                                      help="print JSON")
    sub = command("harnesses", ".services:harnesses", "List harnesses and whether they are available.")
    sub.add_argument("--models", action="store_true", help="add the models each harness offers")
    sub.add_argument("--json", action="store_true", help="print JSON (harness.list's detections)")
    command("nodes", ".services:nodes", "List the placement backend's nodes and their load.").add_argument(
        "--json", action="store_true", help="print JSON (placement.status's result)")
    sub = command("lsp", ".services:lsp", "Language servers: `corral lsp ls` lists them.")
    sub.add_argument("what", choices=("ls",), help="ls: one row per (workspace root, server)")
    sub.add_argument("--json", action="store_true", help="print JSON")

    sub = command("attach", ".sessions:attach", "Stream a session as text; Ctrl-C detaches.")
    sub.add_argument("id", metavar="ID")
    sub.add_argument("--from", dest="from_seq", type=int, default=1, metavar="N",
                     help="first seq to show (default 1: the whole history)")
    sub = command("send", ".sessions:send", "Send a prompt; prints how it was delivered.")
    sub.add_argument("id", metavar="ID")
    sub.add_argument("text", metavar="TEXT", nargs="+")
    command("interrupt", ".sessions:interrupt", "Interrupt the running turn.").add_argument("id", metavar="ID")
    sub = command("approve", ".sessions:approve", "Answer a permission request (allow by default).")
    sub.add_argument("id", metavar="ID")
    sub.add_argument("permission_id", metavar="PERMISSION_ID")
    answer = sub.add_mutually_exclusive_group()
    answer.add_argument("--deny", action="store_true", help="deny it")
    answer.add_argument("--always", action="store_true", help="allow it from now on")
    command("close", ".sessions:close", "Close a session.").add_argument("id", metavar="ID")
    sub = command("resume", ".sessions:resume", "Reopen a closed or failed session where its conversation left off.")
    sub.add_argument("id", metavar="ID")
    sub.add_argument("--env", action="append", default=[], metavar="KEY=VALUE", type=_pair,
                     help="environment for the harness only (repeatable; never stored)")
    sub = command("compact", ".sessions:compact", "Compact an idle native session's context now.")
    sub.add_argument("id", metavar="ID")
    sub.add_argument("--timeout", type=float, default=300.0, metavar="SECONDS",
                     help="how long to wait for the compaction (default 300)")
    add_workspace_commands(command)
    add_ui_command(command)
    sub = command("logs", ".sessions:logs", "Print a session's events.")
    sub.add_argument("id", metavar="ID")
    sub.add_argument("--from", dest="from_seq", type=int, default=1, metavar="N")
    sub.add_argument("--json", action="store_true", help="the event frames, one JSON object a line")
    sub.add_argument("--follow", "-f", action="store_true", help="keep following")
    sub = command("mcp", ".services:mcp", "The daemon's MCP servers: `mcp ls [--json]`, `mcp restart NAME`.")
    mcp = sub.add_subparsers(dest="mcp_command", metavar="ACTION", required=True)
    mcp_ls = mcp.add_parser("ls", parents=[common], help="List MCP servers: state, pid, tools.")
    mcp_ls.add_argument("--json", action="store_true", help="print JSON")
    mcp_restart = mcp.add_parser("restart", parents=[common], help="Restart an MCP server (a failed one too).")
    mcp_restart.add_argument("name", metavar="NAME")
    acp.add_arguments(command("acp", ".acp:acp", acp.HELP))
    mcpserver.add_arguments(command("mcp-server", ".mcpserver:mcp_server", mcpserver.HELP))
    sub = command("protocol", ".services:protocol", "Protocol tools (works without a daemon).")
    sub.add_argument("what", choices=("schema",), help="schema: the client protocol's JSON Schema")
    command("version", ".version:show", "Print the versions of corral, Python and its main libraries."
            ).add_argument("--json", action="store_true", help="print one JSON object")
    if extra is not None:
        extra(command)
    return parser


def _pair(item: str) -> tuple[str, str]:
    key, sep, value = item.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"want KEY=VALUE, not {item!r}")
    return key, value
