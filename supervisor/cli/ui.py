"""``corral ui [--open]``: a one-time login link to the browser UI of the running daemon.

The daemon mints the code (``ui.login_code``, over the token-authenticated connection); the URL
is printed alone on the first line of stdout, with a note on stderr that it works once, within
a minute. ``--open`` hands it to the desktop's browser too (``webbrowser``).
"""

from __future__ import annotations

import argparse
import sys
import webbrowser
from collections.abc import Callable

import trio

from protocol.messages import LoginCodeResult, UiLoginCode
from supervisor.statedir import resolve_state_dir

__all__ = ["add_ui_command"]

Command = Callable[[str, Callable[[argparse.Namespace], int | None], str], argparse.ArgumentParser]


def add_ui_command(command: Command) -> None:
    """Register ``ui`` on the command line."""
    sub = command("ui", _ui, "Print a one-time login URL of the browser UI (valid 60 s, single use).")
    sub.add_argument("--open", action="store_true", help="open it in the default browser too")


def _ui(args: argparse.Namespace) -> None:
    # Only this command needs the client library.
    from supervisor.client import open_client

    async def mint() -> LoginCodeResult:
        async with open_client(resolve_state_dir(getattr(args, "state_dir", None))) as client:
            result = await client.request(UiLoginCode(id=0))
        if not isinstance(result, LoginCodeResult):
            raise TypeError(f"ui.login_code answered {type(result).__name__}")
        return result

    login = trio.run(mint)
    print(login.url, flush=True)
    print(f"(the link works once, within {login.expires_in:g} s; run `corral ui` again for another)",
          file=sys.stderr)
    if args.open:
        webbrowser.open(login.url)
