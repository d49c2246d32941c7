"""Finding a running daemon: ``daemon.json`` and ``token`` in the state directory, then a stream to it."""

from __future__ import annotations

from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

import trio

from protocol.errors import DaemonNotRunning

from supervisor.statedir import DaemonFile, StateDir, resolve_state_dir

__all__ = ["connect_stream", "discover", "not_running"]


def discover(state_dir: Path | str | None = None) -> tuple[StateDir, DaemonFile, str]:
    """The state directory, its ``daemon.json`` and token; ``DaemonNotRunning`` when either is missing."""
    state = StateDir(resolve_state_dir(state_dir))
    info = state.read_daemon_file()
    try:
        token = state.token_path.read_text().strip() if info is not None else ""
    except FileNotFoundError:
        info = None
    if info is None:
        raise not_running(state.root)
    return state, info, token


async def connect_stream(root: Path, info: DaemonFile,
                         transport: Literal["unix", "tcp"]) -> tuple[trio.abc.Stream, str, str]:
    """A stream to the daemon with the Host header and path to upgrade with; a refused or missing endpoint is ``DaemonNotRunning``."""
    try:
        if transport == "unix":
            return await trio.open_unix_socket(info.socket), "localhost", "/v1"
        url = urlsplit(info.url)
        stream = await trio.open_tcp_stream(url.hostname or "127.0.0.1", url.port or 80)
        return stream, url.netloc, url.path or "/v1"
    except OSError:
        raise not_running(root) from None


def not_running(root: Path) -> DaemonNotRunning:
    """The error every client reports when no daemon answers for ``root``."""
    return DaemonNotRunning(f"the daemon is not running (state dir {root}); start it with `corral start`",
                            data={"state_dir": str(root)})
