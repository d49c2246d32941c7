"""The state directory: where it is, its lock, its token and ``daemon.json``.

``daemon.json`` is written (atomically) only once the daemon listens, so its presence means
"ready"; it is removed on a clean shutdown. One daemon per directory: ``daemon.lock`` is held
with ``flock`` for the daemon's lifetime and names the holder's pid.
"""

from __future__ import annotations

import fcntl
import os
import secrets
from collections.abc import Mapping
from pathlib import Path

import msgspec

from protocol.errors import DaemonRunning

from supervisor.atomic import atomic_write


class DaemonFile(msgspec.Struct, frozen=True, kw_only=True):
    """The contents of ``daemon.json``: how clients find a running daemon."""

    pid: int
    url: str
    socket: str
    version: str
    started_at: str


def resolve_state_dir(explicit: str | os.PathLike[str] | None = None,
                      environ: Mapping[str, str] | None = None) -> Path:
    """``--state-dir``, else ``$CORRAL_STATE_DIR``, else ``$XDG_STATE_HOME/corral``, else ``~/.local/state/corral``."""
    env = os.environ if environ is None else environ
    if explicit:
        return Path(explicit).expanduser().absolute()
    if env.get("CORRAL_STATE_DIR"):
        return Path(env["CORRAL_STATE_DIR"]).expanduser().absolute()
    base = env.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base).expanduser().absolute() / "corral"


class StateDir:
    """Paths of one state directory and the operations on its small files."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.lock_path = root / "daemon.lock"
        self.token_path = root / "token"
        self.daemon_path = root / "daemon.json"
        self.socket_path = root / "corral.sock"
        self.log_path = root / "daemon.log"
        self._lock_fd: int | None = None

    def ensure(self) -> None:
        """Create the directory (mode 0700) if missing."""
        self.root.mkdir(parents=True, exist_ok=True, mode=0o700)

    def acquire_lock(self) -> None:
        """Hold ``daemon.lock`` until ``release_lock``; ``DaemonRunning`` names the holder."""
        fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 64).decode(errors="replace").strip() or "unknown"
            os.close(fd)
            raise DaemonRunning(f"another daemon (pid {holder}) holds {self.root}",
                                data={"pid": holder}) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        self._lock_fd = fd

    def release_lock(self) -> None:
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None

    def token(self) -> str:
        """The token (created, mode 0600, if missing)."""
        try:
            return self.token_path.read_text().strip()
        except FileNotFoundError:
            token = secrets.token_urlsafe(32)
            fd = os.open(self.token_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as handle:
                handle.write(token + "\n")
            return token

    def write_daemon_file(self, info: DaemonFile) -> None:
        atomic_write(self.daemon_path, msgspec.json.encode(info) + b"\n")

    def read_daemon_file(self) -> DaemonFile | None:
        try:
            return msgspec.json.decode(self.daemon_path.read_bytes(), type=DaemonFile)
        except (FileNotFoundError, msgspec.DecodeError):
            return None

    def remove_daemon_file(self) -> None:
        self.daemon_path.unlink(missing_ok=True)
