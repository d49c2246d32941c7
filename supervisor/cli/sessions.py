"""The session commands: ``new``, ``ls``, ``attach``, ``send``, ``interrupt``, ``approve``,
``close``, ``resume``, ``compact`` and ``logs``.

Each handler takes the parsed arguments, makes its requests through the client library and
prints the answer: ``new`` the session id alone on the first line, ``ls``/``logs`` a table or
the events (``--json``: JSON), ``compact`` the ``compaction`` event it waited for. ``attach``
and ``logs --follow`` detach on Ctrl-C.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from contextlib import aclosing
from pathlib import Path
from typing import Any

import msgspec
import trio

from protocol.errors import CorralError, ProtocolError, SessionClosed
from protocol.events import Compaction, Decision, Error, Event
from protocol.messages import SessionCreate, SessionResult
from protocol.models import Permissions, SessionInfo, WorkspaceSpec

from supervisor.cli.attach import attach as attach_session
from supervisor.cli.attach import follow_frames
from supervisor.cli.render import Renderer, compaction_line
from supervisor.cli.tables import session_rows, table
from supervisor.cli.usage import usage_error
from supervisor.client import Client, open_client
from supervisor.client.subscription import RawEventFrame
from supervisor.statedir import resolve_state_dir

__all__ = ["approve", "attach", "close", "compact", "interrupt", "logs", "ls", "new", "resume",
           "send"]


def new(args: argparse.Namespace) -> None:
    permissions = None
    if args.permissions or args.allow_tool:
        permissions = Permissions(mode=args.permissions or "ask", allow_tools=args.allow_tool)
    if (args.base or args.branch) and not args.worktree:
        usage_error("--base and --branch need --worktree")
    workspace = WorkspaceSpec(mode="worktree", base=args.base, branch=args.branch) if args.worktree else None
    options = {key: _json_or_text(value) for key, value in args.option}
    if args.max_turns is not None and args.goal is None:
        usage_error("--max-turns needs --goal")
    if args.goal is not None:
        autonomous = dict(options.get("autonomous") or {}, goal=args.goal)
        if args.max_turns is not None:
            autonomous["max_turns"] = args.max_turns
        options["autonomous"] = autonomous
    if args.sandbox is not None or args.net is not None:
        sandbox = dict(options.get("sandbox") or {})
        sandbox.update({key: value for key, value in (("mode", args.sandbox), ("net", args.net))
                        if value is not None})
        options["sandbox"] = sandbox
    request = SessionCreate(
        id=0, harness=args.harness, cwd=str(Path(args.cwd or os.getcwd()).absolute()), name=args.name,
        model=args.model, prompt=args.prompt, permissions=permissions, env=dict(args.env) or None,
        options=options or None, workspace=workspace)
    created = _create(_state(args), request)
    print(created.session.id, flush=True)
    for warning in created.warnings:  # created all the same, but likely to fail
        print(f"corral: warning: {warning.message}", file=sys.stderr, flush=True)


WARMING_NOTICE_AFTER = 1.0
"""Seconds ``new`` waits for ``session.create`` before it asks whether the harness warms up."""


def _create(state_dir: Path, request: SessionCreate) -> SessionResult:
    """``session.create``; while it waits for its harness to warm up (``daemon.status``
    ``warming``: the native fork server's first start), one line on stderr says so."""
    async def run() -> object:
        async with open_client(state_dir) as client, trio.open_nursery() as nursery:
            nursery.start_soon(_tell_if_warming, client, request.harness)
            try:
                return await client.request(request)
            except CorralError as exc:  # raised outside the nursery: one error, not a group
                return exc
            finally:
                nursery.cancel_scope.cancel()

    result = trio.run(run)
    if isinstance(result, CorralError):
        raise result
    if not isinstance(result, SessionResult):
        raise ProtocolError(f"session.create answered a {type(result).__name__}")
    return result


async def _tell_if_warming(client: Client, harness: str) -> None:
    """After ``WARMING_NOTICE_AFTER`` s, and each second after it, ask whether ``harness`` warms
    up; say so once on stderr if it does. Cancelled when the create answers."""
    while True:
        await trio.sleep(WARMING_NOTICE_AFTER)
        try:
            warming = (await client.status()).warming
        except CorralError:  # the create's own answer says what went wrong
            return
        if harness in warming:
            print(f"corral: warming up the {harness} agent (first session after start) …",
                  file=sys.stderr, flush=True)
            return


def ls(args: argparse.Namespace) -> None:
    async def fetch() -> list[SessionInfo]:
        async with open_client(_state(args)) as client:
            return await client.sessions()

    sessions = trio.run(fetch)
    if args.json:
        print(msgspec.json.encode(sessions).decode())
    elif sessions:
        table(session_rows(sessions))
    else:
        print("no sessions")


def attach(args: argparse.Namespace) -> None:
    terminal = sys.stdout.isatty()
    color = terminal and not os.environ.get("NO_COLOR")
    try:
        trio.run(lambda: attach_session(_state(args), args.id, args.from_seq, out=sys.stdout,
                                err=sys.stderr, interactive=sys.stdin.isatty(), color=color,
                                terminal=terminal))
    except KeyboardInterrupt:
        pass  # Ctrl-C before SIGINT was handled: detaching all the same


def send(args: argparse.Namespace) -> None:
    async def send() -> str:
        async with open_client(_state(args)) as client:
            try:
                return await client.prompt(args.id, " ".join(args.text))
            except SessionClosed as exc:
                # An ended session takes no prompt, but resume brings it back where it left off
                # (not so for "the daemon is shutting down", also session_closed: ask its state).
                if (await client.get(args.id)).state not in ("closed", "failed"):
                    raise
                raise SessionClosed(f"{exc.message}; `corral resume {args.id}` reopens it "
                                    "where its conversation left off") from exc

    print(trio.run(send))


def interrupt(args: argparse.Namespace) -> None:
    async def interrupt() -> None:
        async with open_client(_state(args)) as client:
            await client.interrupt(args.id)

    trio.run(interrupt)


def approve(args: argparse.Namespace) -> None:
    decision: Decision = "deny" if args.deny else "allow_always" if args.always else "allow"

    async def approve() -> None:
        async with open_client(_state(args)) as client:
            await client.permission(args.id, args.permission_id, decision)

    trio.run(approve)


def close(args: argparse.Namespace) -> None:
    async def close() -> None:
        async with open_client(_state(args)) as client:
            await client.close(args.id)

    trio.run(close)


def resume(args: argparse.Namespace) -> None:
    async def resume() -> SessionInfo:
        async with open_client(_state(args)) as client:
            return await client.resume(args.id, env=dict(args.env) or None)

    info = trio.run(resume)
    print(f"{info.id} {info.state}")


def compact(args: argparse.Namespace) -> int:
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


def logs(args: argparse.Namespace) -> None:
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


def _state(args: argparse.Namespace) -> Path:
    return resolve_state_dir(getattr(args, "state_dir", None))


def _json_or_text(value: str) -> Any:
    try:
        return json.loads(value)
    except json.JSONDecodeError:
        return value
