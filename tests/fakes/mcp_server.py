"""A real MCP server written with the ``mcp`` SDK, for tests: stdio by default, ``--http`` for
streamable HTTP (it prints ``PORT <n>`` on stdout once it listens).

Tools: ``echo(text)``; ``pid()`` (its own pid); ``crash()`` (SIGKILLs itself mid-call);
``hang(tag)`` (never answers; records ``cancelled-<tag>`` in ``$MCP_FAKE_DIR`` when MCP's
cancellation reaches it); ``grow()`` (adds a tool ``extra`` and announces ``list_changed`` in
both protocol eras); ``big(n)`` (n bytes of text). A resource ``fake://readme`` and a prompt
``greet`` exist so that the caches have something to hold.

``$MCP_FAKE_DIR``, when set, gets a ``start-<pid>`` file per start. ``--exit-at-start`` exits
with status 3 before speaking (a crash loop); ``--slow-start S`` sleeps S seconds first.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from pathlib import Path

if __name__ == "__main__" and "--exit-at-start" in sys.argv:  # a crash loop: die before the slow imports
    if os.environ.get("MCP_FAKE_DIR"):
        (Path(os.environ["MCP_FAKE_DIR"]) / f"start-{os.getpid()}").write_text("")
    sys.exit(3)

import anyio
from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("corral-fake")
_DIR = Path(os.environ["MCP_FAKE_DIR"]) if os.environ.get("MCP_FAKE_DIR") else None


def _mark(name: str) -> None:
    if _DIR is not None:
        (_DIR / name).write_text(str(os.getpid()))


@server.tool()
def echo(text: str) -> str:
    """Echo the text back."""
    return text


@server.tool()
def pid() -> int:
    """The server's own process id."""
    return os.getpid()


@server.tool()
def crash() -> str:
    """Die by SIGKILL in the middle of the call."""
    os.kill(os.getpid(), signal.SIGKILL)
    return "unreachable"


@server.tool()
async def hang(tag: str) -> str:
    """Never answer; note the cancellation when it comes."""
    try:
        await anyio.sleep_forever()
    except anyio.get_cancelled_exc_class():
        _mark(f"cancelled-{tag}")
        raise
    return "unreachable"


@server.tool()
async def grow(ctx: Context) -> str:
    """Add the tool ``extra`` and tell the client its tool list changed."""

    def extra() -> str:
        """A tool that appeared later."""
        return "extra"

    server.add_tool(extra, name="extra")
    await ctx.notify_tools_changed()  # 2026-07-28: subscriptions/listen streams
    await ctx.session.send_tool_list_changed()  # 2025-11-25: a notification on the session
    return "grown"


@server.tool()
def big(n: int) -> str:
    """``n`` bytes of text."""
    return "x" * n


@server.resource("fake://readme")
def readme() -> str:
    """A small text resource."""
    return "read me"


@server.prompt()
def greet(name: str) -> str:
    """A greeting prompt."""
    return f"Hello, {name}"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--http", action="store_true")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--exit-at-start", action="store_true")
    parser.add_argument("--slow-start", type=float, default=0.0)
    args = parser.parse_args()
    _mark(f"start-{os.getpid()}")
    if args.slow_start:
        time.sleep(args.slow_start)
    if args.http:
        _serve_http(args.port)
    else:
        server.run()


def _serve_http(port: int) -> None:
    import socket

    import uvicorn

    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    print(f"PORT {sock.getsockname()[1]}", flush=True)
    app = server.streamable_http_app()
    config = uvicorn.Config(app, log_level="warning")
    anyio.run(uvicorn.Server(config).serve, [sock])


if __name__ == "__main__":
    main()
