"""The ``corral`` command line: run the daemon, and drive sessions through the client library.

Every command takes ``--state-dir`` before or after its name and honours
``CORRAL_STATE_DIR``. Output meant for scripts goes to stdout (``new`` prints the session id
alone on the first line; ``--json`` variants print JSON); errors are one line on stderr,
``corral: MESSAGE``, never a traceback (set ``CORRAL_DEBUG=1`` to see one for a bug). Exit
codes: 0 success, 1 failure, 2 usage error, 130 interrupted (``attach`` and ``logs
--follow`` detach on Ctrl-C with 0).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import traceback
from collections.abc import Callable, Sequence
from contextlib import aclosing
from pathlib import Path
from typing import Any, NamedTuple, NoReturn

import msgspec
import trio
from msgspec import Struct

from protocol.errors import CorralError, ProtocolError
from protocol.events import Compaction, Decision, Error, Event
from protocol.messages import LspList, LspListResult, SessionCreate, SessionResult
from protocol.models import McpServerInfo, Permissions, SessionInfo, WorkspaceSpec
from protocol.schema import client_protocol_schema

from supervisor.cli.attach import attach, follow_frames
from supervisor.client.api import RawEventFrame, open_client
from supervisor.cli.daemonctl import DaemonRunner, run_foreground, start, status_report, stop
from supervisor.cli.render import Renderer, compaction_line, harness_rows
from supervisor.excgroup import lone_exception
from supervisor.cli.ui import add_ui_command
from supervisor.cli.workspaces import add_workspace_commands, ask
from supervisor.statedir import resolve_state_dir

__all__ = ["CommandAdder", "DaemonEntry", "build_parser", "main"]

CommandAdder = Callable[[str, Callable[[argparse.Namespace], int | None], str],
                        argparse.ArgumentParser]
"""Adds one subcommand (name, handler, help) to the parser and returns its parser."""


class DaemonEntry(NamedTuple):
    """How to run a daemon: in this process (``run``) and as ``python -m module`` (``corral start``);
    ``config`` is the root Struct of its configuration file; ``local`` the application's own
    daemon-less commands."""

    run: DaemonRunner
    module: str
    config: type[Struct]
    extra: Callable[[CommandAdder], None] | None = None
    """Adds the application's own commands (``corral run``, ``corral probe``) to the parser."""


def main(argv: Sequence[str] | None = None, *, daemon: DaemonEntry) -> int:
    """Run one command; returns the exit code (the console script exits with it)."""
    args = build_parser(daemon.extra).parse_args(argv)
    args.daemon_entry = daemon
    handler: Callable[[argparse.Namespace], int | None] = args.handler
    try:
        return handler(args) or 0
    except Exception as exc:  # noqa: BLE001 - the one place that turns anything into one line
        return _report(exc)
    except (KeyboardInterrupt, BaseExceptionGroup) as exc:
        return _report(exc)


def build_parser(extra: Callable[[CommandAdder], None] | None = None) -> argparse.ArgumentParser:
    """The whole command line; ``--state-dir`` is accepted before and after the subcommand.
    ``extra`` adds the application's commands."""
    common = _Parser(add_help=False)
    # SUPPRESS: a subcommand that was not given --state-dir must not erase one given before it.
    common.add_argument("--state-dir", metavar="DIR", default=argparse.SUPPRESS,
                        help="the daemon's state directory (default: $CORRAL_STATE_DIR, "
                             "else $XDG_STATE_HOME/corral)")
    parser = _Parser(prog="corral", parents=[common],
                     description="Run coding-agent sessions under a local supervising daemon.")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    def command(name: str, handler: Callable[[argparse.Namespace], int | None],
                help: str) -> argparse.ArgumentParser:
        sub = commands.add_parser(name, parents=[common], help=help, description=help)
        sub.set_defaults(handler=handler)
        return sub

    for name, verb in (("daemon", "Run the daemon in the foreground."),
                       ("start", "Start the daemon in the background; return once it is ready.")):
        sub = command(name, _daemon if name == "daemon" else _start, verb)
        sub.add_argument("--port", type=int, help="TCP port (0: any free port; default: config)")
        sub.add_argument("--config", metavar="FILE", help="configuration file")
        if name == "start":
            sub.add_argument("--wait", type=float, default=20.0, metavar="SECONDS",
                             help="how long to wait for the daemon to be ready (default 20)")
    command("stop", _stop, "Stop the daemon gracefully.").add_argument(
        "--timeout", type=float, default=60.0, metavar="SECONDS",
        help="how long to wait for the daemon to exit (default 60)")
    command("status", _status, "Show the daemon, its sessions and its children.").add_argument(
        "--json", action="store_true", help="print JSON")

    sub = command("new", _new, "Create a session; prints its id alone on the first line.")
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
    command("ls", _ls, "List sessions.").add_argument("--json", action="store_true",
                                                      help="print JSON")
    command("harnesses", _harnesses, "List harnesses and whether they are available.").add_argument(
        "--models", action="store_true", help="add the models each harness offers")
    sub = command("lsp", _lsp, "Language servers: `corral lsp ls` lists them.")
    sub.add_argument("what", choices=("ls",), help="ls: one row per (workspace root, server)")
    sub.add_argument("--json", action="store_true", help="print JSON")

    sub = command("attach", _attach, "Stream a session as text; Ctrl-C detaches.")
    sub.add_argument("id", metavar="ID")
    sub.add_argument("--from", dest="from_seq", type=int, default=1, metavar="N",
                     help="first seq to show (default 1: the whole history)")
    sub = command("send", _send, "Send a prompt; prints how it was delivered.")
    sub.add_argument("id", metavar="ID")
    sub.add_argument("text", metavar="TEXT", nargs="+")
    command("interrupt", _interrupt, "Interrupt the running turn.").add_argument("id", metavar="ID")
    sub = command("approve", _approve, "Answer a permission request (allow by default).")
    sub.add_argument("id", metavar="ID")
    sub.add_argument("permission_id", metavar="PERMISSION_ID")
    answer = sub.add_mutually_exclusive_group()
    answer.add_argument("--deny", action="store_true", help="deny it")
    answer.add_argument("--always", action="store_true", help="allow it from now on")
    command("close", _close, "Close a session.").add_argument("id", metavar="ID")
    sub = command("resume", _resume, "Reopen a closed or failed session where its conversation left off.")
    sub.add_argument("id", metavar="ID")
    sub.add_argument("--env", action="append", default=[], metavar="KEY=VALUE", type=_pair,
                     help="environment for the harness only (repeatable; never stored)")
    sub = command("compact", _compact, "Compact an idle native session's context now.")
    sub.add_argument("id", metavar="ID")
    sub.add_argument("--timeout", type=float, default=300.0, metavar="SECONDS",
                     help="how long to wait for the compaction (default 300)")
    add_workspace_commands(command)
    add_ui_command(command)
    sub = command("logs", _logs, "Print a session's events.")
    sub.add_argument("id", metavar="ID")
    sub.add_argument("--from", dest="from_seq", type=int, default=1, metavar="N")
    sub.add_argument("--json", action="store_true", help="the event frames, one JSON object a line")
    sub.add_argument("--follow", "-f", action="store_true", help="keep following")
    sub = command("mcp", _mcp, "The daemon's MCP servers: `mcp ls [--json]`, `mcp restart NAME`.")
    mcp = sub.add_subparsers(dest="mcp_command", metavar="ACTION", required=True)
    mcp_ls = mcp.add_parser("ls", parents=[common], help="List MCP servers: state, pid, tools.")
    mcp_ls.add_argument("--json", action="store_true", help="print JSON")
    mcp_restart = mcp.add_parser("restart", parents=[common], help="Restart an MCP server (a failed one too).")
    mcp_restart.add_argument("name", metavar="NAME")
    sub = command("protocol", _protocol, "Protocol tools (works without a daemon).")
    sub.add_argument("what", choices=("schema",), help="schema: the client protocol's JSON Schema")
    if extra is not None:
        extra(command)
    return parser


class _Parser(argparse.ArgumentParser):
    """Usage errors are one line on stderr and exit code 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see `{self.prog} --help`)\n")


# --- commands --------------------------------------------------------------------------------


def _state(args: argparse.Namespace) -> Path:
    return resolve_state_dir(getattr(args, "state_dir", None))


def _daemon(args: argparse.Namespace) -> int:
    entry: DaemonEntry = args.daemon_entry
    run_foreground(_state(args), entry.run, entry.config, port=args.port, config=args.config)
    return 0


def _start(args: argparse.Namespace) -> None:
    trio.run(lambda: start(_state(args), args.daemon_entry.module, port=args.port, config=args.config, wait=args.wait,
                              out=sys.stdout))


def _stop(args: argparse.Namespace) -> None:
    trio.run(lambda: stop(_state(args), timeout=args.timeout, out=sys.stdout, err=sys.stderr))


def _status(args: argparse.Namespace) -> None:
    report = trio.run(status_report, _state(args))
    if args.json:
        print(json.dumps(report, indent=2))
        return
    status: dict[str, Any] = report["status"]  # type: ignore[assignment]
    daemon: dict[str, Any] = report["daemon"] or {}  # type: ignore[assignment]
    print(f"corral {status['version']} · pid {status['pid']} · up {_duration(status['uptime_s'])}"
          f" · {status['clients']} client(s)")
    print(f"state dir {report['state_dir']}")
    print(f"listening {daemon.get('url', '?')} and {daemon.get('socket', '?')}")
    sessions = msgspec.convert(report["sessions"], list[SessionInfo])
    print(f"\nsessions ({len(sessions)})")
    if sessions:
        _table(_session_rows(sessions))
    children = status["children"]
    print(f"\nchildren ({len(children)})")
    if children:
        _table([["KEY", "KIND", "PID"], *([c["key"], c["kind"], str(c["pid"])] for c in children)])


def _new(args: argparse.Namespace) -> None:
    permissions = None
    if args.permissions or args.allow_tool:
        permissions = Permissions(mode=args.permissions or "ask", allow_tools=args.allow_tool)
    if (args.base or args.branch) and not args.worktree:
        build_parser().error("--base and --branch need --worktree")
    workspace = WorkspaceSpec(mode="worktree", base=args.base, branch=args.branch) if args.worktree else None
    options = {key: _json_or_text(value) for key, value in args.option}
    if args.max_turns is not None and args.goal is None:
        build_parser().error("--max-turns needs --goal")
    if args.goal is not None:
        autonomous = dict(options.get("autonomous") or {}, goal=args.goal)
        if args.max_turns is not None:
            autonomous["max_turns"] = args.max_turns
        options["autonomous"] = autonomous
    request = SessionCreate(
        id=0, harness=args.harness, cwd=str(Path(args.cwd or os.getcwd()).absolute()), name=args.name,
        model=args.model, prompt=args.prompt, permissions=permissions, env=dict(args.env) or None,
        options=options or None, workspace=workspace)
    print(ask(_state(args), request, SessionResult).session.id, flush=True)


def _ls(args: argparse.Namespace) -> None:
    async def fetch() -> list[SessionInfo]:
        async with open_client(_state(args)) as client:
            return await client.sessions()

    sessions = trio.run(fetch)
    if args.json:
        print(msgspec.json.encode(sessions).decode())
    elif sessions:
        _table(_session_rows(sessions))
    else:
        print("no sessions")


def _harnesses(args: argparse.Namespace) -> None:
    async def fetch() -> list[Any]:
        async with open_client(_state(args)) as client:
            if args.models:
                print("asking each CLI for its models (an ACP agent opens a throwaway session: "
                      "up to 20 s)…", file=sys.stderr)
            return await client.harnesses(models=args.models)

    _table(harness_rows(trio.run(fetch), models=args.models))


def _lsp(args: argparse.Namespace) -> None:
    async def fetch() -> LspListResult:
        async with open_client(_state(args)) as client:
            result = await client.request(LspList(id=0))
        if not isinstance(result, LspListResult):
            raise ProtocolError(f"lsp.list answered a {type(result).__name__}")
        return result

    servers = trio.run(fetch).servers
    if args.json:
        print(msgspec.json.encode(servers).decode())
    elif servers:
        _table([["SERVER", "STATE", "PID", "RESTARTS", "ROOT"],
                *([s.server, s.state, str(s.pid or "-"), str(s.restarts), s.root] for s in servers)])
    else:
        print("no language servers")


def _mcp(args: argparse.Namespace) -> int:
    async def run() -> list[McpServerInfo]:
        async with open_client(_state(args)) as client:
            if args.mcp_command == "restart":
                return [await client.mcp_restart(args.name)]
            return await client.mcp_servers()

    servers = trio.run(run)
    if args.mcp_command == "ls" and args.json:
        print(msgspec.json.encode(servers).decode())
    elif servers:
        rows = [["NAME", "STATE", "PID", "RESTARTS", "TOOLS", "LAST ERROR"]]
        rows += [[s.name, s.state, str(s.pid or "-"), str(s.restarts), str(len(s.tools)),
                  s.last_error or "-"] for s in servers]
        _table(rows)
    else:
        print("no MCP servers")
    if args.mcp_command == "restart" and servers[0].state != "running":
        print(f"corral: MCP server {args.name} is {servers[0].state}: {servers[0].last_error or '-'}",
              file=sys.stderr)
        return 1
    return 0


def _attach(args: argparse.Namespace) -> None:
    terminal = sys.stdout.isatty()
    color = terminal and not os.environ.get("NO_COLOR")
    try:
        trio.run(lambda: attach(_state(args), args.id, args.from_seq, out=sys.stdout,
                                err=sys.stderr, interactive=sys.stdin.isatty(), color=color,
                                terminal=terminal))
    except KeyboardInterrupt:
        pass  # Ctrl-C before SIGINT was handled: detaching all the same


def _send(args: argparse.Namespace) -> None:
    async def send() -> str:
        async with open_client(_state(args)) as client:
            return await client.prompt(args.id, " ".join(args.text))

    print(trio.run(send))


def _interrupt(args: argparse.Namespace) -> None:
    async def interrupt() -> None:
        async with open_client(_state(args)) as client:
            await client.interrupt(args.id)

    trio.run(interrupt)


def _approve(args: argparse.Namespace) -> None:
    decision: Decision = "deny" if args.deny else "allow_always" if args.always else "allow"

    async def approve() -> None:
        async with open_client(_state(args)) as client:
            await client.permission(args.id, args.permission_id, decision)

    trio.run(approve)


def _close(args: argparse.Namespace) -> None:
    async def close() -> None:
        async with open_client(_state(args)) as client:
            await client.close(args.id)

    trio.run(close)


def _resume(args: argparse.Namespace) -> None:
    async def resume() -> SessionInfo:
        async with open_client(_state(args)) as client:
            return await client.resume(args.id, env=dict(args.env) or None)

    info = trio.run(resume)
    print(f"{info.id} {info.state}")


def _compact(args: argparse.Namespace) -> int:
    """Ask for the compaction, then print its ``compaction`` event (1 if an error came first)."""
    async def compact() -> Event | None:
        async with open_client(_state(args)) as client:
            last = (await client.get(args.id)).last_seq
            await client.compact(args.id)
            with trio.move_on_after(args.timeout):
                async with aclosing(client.events(args.id, last + 1)) as frames:
                    async for frame in frames:
                        if isinstance(frame.event, (Compaction, Error)):
                            return frame.event
        return None

    event = trio.run(compact)
    if isinstance(event, Compaction):
        print(compaction_line(event).removeprefix("· "))
        return 0
    message = (f"{event.code}: {event.message}" if isinstance(event, Error)
               else f"no compaction within {args.timeout:g} s")
    print(f"corral: {message}", file=sys.stderr)
    return 1


def _logs(args: argparse.Namespace) -> None:
    renderer = Renderer(sys.stdout, color=sys.stdout.isatty() and not os.environ.get("NO_COLOR"))

    def show(item: RawEventFrame, caught_up: bool = False) -> bool:
        if args.json:
            sys.stdout.write(item.raw + "\n")
            sys.stdout.flush()
        elif item.frame is not None:
            renderer.render(item.frame.event)
        return False

    async def logs() -> None:
        if args.follow:
            await follow_frames(_state(args), args.id, args.from_seq, show, err=sys.stderr)
            return
        async with open_client(_state(args)) as client:
            async with aclosing(client.raw_events(args.id, args.from_seq, follow=False)) as items:
                async for item in items:
                    show(item)

    try:
        trio.run(logs)
    except KeyboardInterrupt:
        if not args.follow:
            raise
    renderer.finish()


def _protocol(args: argparse.Namespace) -> None:
    print(json.dumps(client_protocol_schema(), indent=2))


# --- helpers ---------------------------------------------------------------------------------


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
    if os.environ.get("CORRAL_DEBUG"):
        traceback.print_exception(exc)
    print(f"corral: {' '.join(message.split())}", file=sys.stderr)
    return 1


def _quiet_stdout() -> None:
    """After a closed pipe (``corral logs | head``), keep Python from complaining at exit."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())


def _session_rows(sessions: list[SessionInfo]) -> list[list[str]]:
    """One row per session; BRANCH and CHANGED (files) columns when any session has a worktree."""
    rows = [["ID", "HARNESS", "STATE", "SEQ", "CREATED", "NAME"]]
    rows += [[s.id, s.harness, s.state, str(s.last_seq), s.created_at, s.name or "-"]
             for s in sessions]
    if any(s.workspace is not None for s in sessions):
        rows[0] += ["BRANCH", "CHANGED"]
        for row, s in zip(rows[1:], sessions):
            space = s.workspace
            row += ["-", "-"] if space is None else [
                space.branch if space.state == "active" else f"{space.branch} ({space.state})",
                str(space.changed_files)]
    return rows


def _table(rows: list[list[str]]) -> None:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip())


def _duration(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h {minutes:02d}m" if hours else f"{minutes}m {secs:02d}s" if minutes else f"{secs}s"


def _pair(item: str) -> tuple[str, str]:
    key, sep, value = item.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"want KEY=VALUE, not {item!r}")
    return key, value


def _json_or_text(value: str) -> Any:
    try:
        return json.loads(value)
    except json.JSONDecodeError:
        return value
