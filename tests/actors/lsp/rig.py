"""A ``LanguageServers`` running in the test's trio loop, and the fake server's configuration."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import psutil
import trio

from actors.lsp.config import LspConfig, LspServerConfig
from actors.lsp.service import LanguageServers
from supervisor.ledger.store import Ledger

FAKE = str(Path(__file__).resolve().parents[2] / "fakes" / "lsp_server.py")


def fake_config(*flags: str, log: Path | None = None, builtins: bool = False,
                **lsp: Any) -> LspConfig:
    """An ``[lsp]`` section with the fake server on ``.fk`` files (and the built-ins off)."""
    argv = [sys.executable, FAKE, *flags, *(["--log", str(log)] if log else [])]
    servers = {"fake": LspServerConfig(command=argv, extensions=[".fk"], language_id="fake",
                                       settings={"fake": {"answer": 42}})}
    if not builtins:
        servers |= {sid: LspServerConfig(enabled=False)
                    for sid in ("ruff", "pyright", "typescript", "gopls", "clangd")}
    lsp.setdefault("request_timeout", 5.0)
    lsp.setdefault("startup_timeout", 10.0)
    lsp.setdefault("shutdown_timeout", 2.0)
    return LspConfig(servers=servers, **lsp)


@asynccontextmanager
async def running(config: LspConfig, ledger: Ledger | None = None) -> AsyncIterator[LanguageServers]:
    """Run the ``lsp`` supervisor; on the way out stop it and check no server process is left."""
    lsp = LanguageServers(config, ledger)
    pids: set[int] = set()
    async with trio.open_nursery() as nursery:
        await nursery.start(lsp.run)
        try:
            yield lsp
        finally:
            pids = {a.pid for a in lsp.actors() if a.pid is not None}
            family = {p.pid for pid in pids for p in _family(pid)}
            nursery.cancel_scope.cancel()
    assert lsp.infos() == []
    assert not [pid for pid in pids | family if psutil.pid_exists(pid) and not _zombie(pid)]


def log_entries(log: Path) -> list[dict[str, Any]]:
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text().splitlines()]


def _family(pid: int) -> list[psutil.Process]:
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []


def _zombie(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True
