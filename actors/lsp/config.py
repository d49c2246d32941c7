"""The ``[lsp]`` section and its ``[lsp.servers.ID]`` tables, and the servers they resolve to.

Five servers are built in (``servers.BUILTIN``): ``ruff``, ``pyright``, ``typescript``,
``gopls``, ``clangd``. A ``[lsp.servers.ID]`` table whose ID is built in overrides the keys it
sets and keeps the others (``enabled = false`` turns the server off); any other ID declares a new
server and needs ``command`` and ``extensions``. Example::

    [lsp]
    settle_timeout = 2.0

    [lsp.servers.pyright]
    command = ["/opt/node_modules/.bin/pyright-langserver", "--stdio"]

    [lsp.servers.pylsp]
    command = ["pylsp"]
    extensions = [".py"]
    language_id = "python"
"""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
from msgspec import Meta, Struct

from actors.lsp.servers import BUILTIN, ServerDef

__all__ = ["LspConfig", "LspServerConfig", "resolve_servers"]

_Seconds = Annotated[float, Meta(gt=0)]
_Count = Annotated[int, Meta(ge=0)]
_Capacity = Annotated[int, Meta(ge=1)]


class LspServerConfig(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A ``[lsp.servers.ID]`` table; a key left out keeps the built-in value (if any)."""

    enabled: bool = True
    command: list[str] | None = None  # argv; the program is looked up on PATH
    extensions: list[str] | None = None  # e.g. [".py", ".pyi"]
    language_id: str | None = None  # the LSP languageId for every extension (default: per ext)
    root_markers: list[str] | None = None  # files or directories that mark a workspace root
    initialization_options: dict[str, Any] | None = None
    settings: dict[str, Any] | None = None  # answers to workspace/configuration, by section
    env: dict[str, str] = {}
    settle: _Seconds | None = None  # quiet time that settles a publish without a version


class LspConfig(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Section ``[lsp]``: language servers that check files the native agent writes."""

    enabled: bool = True
    settle_timeout: _Seconds = 1.5  # wait for a warm server's diagnostics after a write
    startup_timeout: _Seconds = 10.0  # extra wait for a cold server: start-up and first analysis
    request_timeout: _Seconds = 10.0  # a server that answers nothing this long is killed
    shutdown_timeout: _Seconds = 3.0  # shutdown/exit, then SIGTERM, then SIGKILL to the group
    idle_timeout: _Seconds = 600.0  # a server nobody asked anything this long is stopped
    restart_intensity: _Count = 3  # at most this many restarts of one server ...
    restart_period: _Seconds = 60.0  # ... within this many seconds; then it is `failed`
    max_documents: _Capacity = 64  # documents open per server (least recently used closed)
    servers: dict[str, LspServerConfig] = {}


def resolve_servers(config: LspConfig) -> tuple[list[ServerDef], list[str]]:
    """The enabled servers (built-ins merged with their tables, then new ones) and a warning for
    each table that cannot define a server."""
    if not config.enabled:
        return [], []
    warnings: list[str] = []
    out: list[ServerDef] = []
    for sid, base in BUILTIN.items():
        table = config.servers.get(sid)
        if table is None:
            out.append(base)
        elif table.enabled:
            out.append(_merge(base, table))
    for sid, table in config.servers.items():
        if sid in BUILTIN or not table.enabled:
            continue
        if not table.command or not table.extensions:
            warnings.append(f"lsp.servers.{sid}: a new server needs `command` and `extensions`; ignored")
            continue
        base = ServerDef(id=sid, command=(table.command[0],), languages={})
        out.append(_merge(base, table))
    return out, warnings


def _merge(base: ServerDef, table: LspServerConfig) -> ServerDef:
    languages = dict(base.languages)
    if table.extensions is not None:
        languages = {_ext(e): table.language_id or base.languages.get(_ext(e)) or _ext(e)[1:]
                     for e in table.extensions}
    elif table.language_id is not None:
        languages = dict.fromkeys(languages, table.language_id)
    return msgspec.structs.replace(
        base,
        command=tuple(table.command) if table.command else base.command,
        languages=languages,
        root_markers=tuple(table.root_markers) if table.root_markers is not None else base.root_markers,
        initialization_options=(table.initialization_options
                                if table.initialization_options is not None
                                else base.initialization_options),
        settings=table.settings if table.settings is not None else base.settings,
        env={**base.env, **table.env},
        settle=table.settle if table.settle is not None else base.settle,
    )


def _ext(extension: str) -> str:
    return extension if extension.startswith(".") else f".{extension}"
