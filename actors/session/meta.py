"""A session's metadata file, ``sessions/<id>/meta.json``: what the daemon lists after a restart.

Secrets never reach the disk: ``env`` given at ``session.create`` is kept as its keys only, and
so are the ``env`` and ``headers`` of MCP servers (headers carry bearer tokens as often as env
carries API keys). Writes are atomic: a temporary file is written, fsynced and renamed over
``meta.json``, then the directory is fsynced, so a crash leaves the old file or the new one,
never a torn one. Unknown fields are ignored on read, so a newer daemon's file still loads.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec

from actors.session.logfile import failed
from supervisor.atomic import atomic_write
from protocol.errors import StorageFailed
from protocol.events import SessionState
from protocol.messages import SessionCreate
from protocol.models import McpServer, Permissions
from protocol.sandbox import SandboxInfo

__all__ = [
    "META_NAME",
    "SessionMeta",
    "StoredMcpServer",
    "list_sessions",
    "meta_from_create",
    "read_meta",
    "write_meta",
]

META_NAME = "meta.json"
"""The metadata file's name inside a session directory."""


class StoredMcpServer(msgspec.Struct, kw_only=True, frozen=True):
    """An MCP server as persisted: ``env`` and ``headers`` reduced to their (sorted) keys."""

    name: str
    command: str | None = None
    args: list[str] = []
    env_keys: list[str] = []
    url: str | None = None
    header_keys: list[str] = []

    @classmethod
    def from_server(cls, server: McpServer) -> StoredMcpServer:
        """Drop the secret values of ``server``."""
        return cls(
            name=server.name,
            command=server.command,
            args=list(server.args),
            env_keys=sorted(server.env),
            url=server.url,
            header_keys=sorted(server.headers),
        )

    def with_secrets(self, env: dict[str, str]) -> McpServer:
        """The server as stored, its secret values (never stored) looked up in the resume's env."""
        return McpServer(name=self.name, command=self.command, args=list(self.args), url=self.url,
                         env={k: env[k] for k in self.env_keys if k in env},
                         headers={k: env[k] for k in self.header_keys if k in env})


class SessionMeta(msgspec.Struct, kw_only=True, frozen=True):
    """Everything about a session but its events; ``created_at`` is the wire's ISO form."""

    id: str
    harness: str
    cwd: str
    created_at: str
    state: SessionState
    name: str | None = None
    model: str | None = None
    permissions: Permissions = Permissions()
    env_keys: list[str] = []
    mcp_servers: list[StoredMcpServer] = []
    options: dict[str, Any] = {}
    vendor_session_id: str | None = None
    restarts: int = 0
    closed_reason: str | None = None
    sandbox: SandboxInfo | None = None
    """The session's sandbox as resolved at creation (``effective`` is re-checked on resume)."""


def meta_from_create(
    session_id: str, request: SessionCreate, *, created_at: str, state: SessionState = "starting",
    sandbox: SandboxInfo | None = None,
) -> SessionMeta:
    """The metadata of a new session, with every secret value of ``request`` left out."""
    return SessionMeta(
        id=session_id,
        harness=request.harness,
        cwd=request.cwd,
        created_at=created_at,
        state=state,
        name=request.name,
        model=request.model,
        permissions=request.permissions or Permissions(),
        env_keys=sorted(request.env or {}),
        mcp_servers=[StoredMcpServer.from_server(s) for s in request.mcp_servers or []],
        options=dict(request.options or {}),
        sandbox=sandbox,
    )


def write_meta(directory: Path, meta: SessionMeta) -> None:
    """Atomically replace ``directory/meta.json`` (mode 0600; the directory is made 0700 if new).

    Blocking (two fsyncs). Raises ``StorageFailed``; the old file is then intact and no
    temporary file is left behind.
    """
    path = directory / META_NAME
    data = msgspec.json.format(_ENCODER.encode(meta), indent=2) + b"\n"
    try:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        atomic_write(path, data)
    except OSError as exc:
        raise failed(f"cannot write {path}", path, exc) from exc


def read_meta(directory: Path) -> SessionMeta:
    """Read ``directory/meta.json``; raises ``StorageFailed`` if it is missing, unreadable or corrupt."""
    path = directory / META_NAME
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise failed(f"cannot read {path}", path, exc) from exc
    try:
        return _DECODER.decode(data)
    except msgspec.DecodeError as exc:
        raise StorageFailed(f"{path} is corrupt: {exc}", data={"path": str(path)}) from exc


def list_sessions(sessions_dir: Path) -> list[tuple[Path, SessionMeta | Exception]]:
    """Every session directory under ``sessions_dir`` (sorted by name) with its metadata.

    A directory whose ``meta.json`` cannot be read, or names another session id, comes with the
    ``StorageFailed`` instead, so one bad session never hides the others. A missing
    ``sessions_dir`` is an empty list; an unreadable one raises ``StorageFailed``.
    """
    try:
        directories = sorted(
            entry for entry in sessions_dir.iterdir() if entry.is_dir() and not entry.name.startswith(".")
        )
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise failed(f"cannot list {sessions_dir}", sessions_dir, exc) from exc
    found: list[tuple[Path, SessionMeta | Exception]] = []
    for directory in directories:
        try:
            meta = read_meta(directory)
        except StorageFailed as exc:
            found.append((directory, exc))
            continue
        if meta.id != directory.name:
            mismatch = StorageFailed(
                f"{directory / META_NAME} names session {meta.id!r}, not {directory.name!r}",
                data={"path": str(directory / META_NAME)},
            )
            found.append((directory, mismatch))
        else:
            found.append((directory, meta))
    return found


_ENCODER = msgspec.json.Encoder()
_DECODER = msgspec.json.Decoder(SessionMeta)
