"""The composition root: configuration, harness drivers, the root supervisor's application
children, and the request handlers the daemon serves. The console script ``corral`` points here.

This is the one module that sees every layer: it hands ``supervisor.server`` an application
(``App``) and ``supervisor.cli`` the way to run a daemon, so neither imports ``actors``.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import msgspec
import trio

from actors.fake import FakeDriver
from actors.lsp import LanguageServers, load_lsp_config
from actors.session.actor import Session
from actors.session.registry import Sessions
from actors.vendors.claude import ClaudeDriver
from actors.vendors.codex import CodexDriver
from actors.vendors.opencode import OpenCodeDriver, OpenCodeServers
from actors.vendors.pi import PiDriver
from protocol.errors import UnknownMethod
from protocol.messages import (
    ClientRequest,
    DaemonShutdown,
    DaemonStatus,
    DaemonStatusResult,
    Empty,
    HarnessList,
    HarnessListResult,
    LspList,
    LspListResult,
    SessionClose,
    SessionCreate,
    SessionGet,
    SessionInterrupt,
    SessionList,
    SessionListResult,
    SessionPermission,
    SessionPrompt,
    SessionResult,
    SessionSetModel,
)
from supervisor import __version__
from supervisor.cli import commands
from supervisor.config import Config, HarnessConfig, LoadedConfig
from supervisor.server import Host, run_daemon
from supervisor.server.connection import FeedLike
from supervisor.statedir import DaemonFile, StateDir
from supervisor.tree import ChildSpec, ChildType

__all__ = ["App", "drivers", "main", "serve"]

log = logging.getLogger("corral.daemon")

DAEMON_MODULE = "actors.app"
"""What ``corral start`` runs as ``python -m`` to start a daemon in the background."""


def main(argv: Sequence[str] | None = None) -> int:
    """The ``corral`` console script."""
    return commands.main(argv, daemon=commands.DaemonEntry(run=serve, module=DAEMON_MODULE))


async def serve(state_root: Path, loaded: LoadedConfig, *, port: int | None = None,
                task_status: trio.TaskStatus[DaemonFile] = trio.TASK_STATUS_IGNORED) -> None:
    """Run a daemon with every actor kind on ``state_root`` until it is stopped."""
    state = StateDir(state_root)
    state.ensure()
    host = Host(state, loaded.config.daemon)
    app = App(host, loaded)
    await run_daemon(state, loaded.config.daemon, app, host, port=port, task_status=task_status)


def drivers(config: Config, opencode: OpenCodeServers | None = None) -> dict[str, Any]:
    """Every harness by name; ``[harness.<name>]`` tables configure the vendor drivers.

    ``opencode`` is the daemon's ``opencode`` supervisor (shared servers); without one (tools
    that only list harnesses) OpenCode sessions get a private pool that is not running.
    """
    claude = config.harness.get("claude", HarnessConfig())
    codex = config.harness.get("codex", HarnessConfig())
    pi = config.harness.get("pi", HarnessConfig())
    oc = config.harness.get("opencode", HarnessConfig())
    return {
        "fake": FakeDriver(),
        "claude": ClaudeDriver(binary=_expand(claude.binary)),
        "codex": CodexDriver(binary=_expand(codex.binary)),
        "pi": PiDriver(binary=_expand(pi.binary)),
        "opencode": OpenCodeDriver(opencode or OpenCodeServers(None), binary=_expand(oc.binary)),
    }


class App:
    """The application the daemon serves: the sessions and the requests about them."""

    def __init__(self, host: Host, loaded: LoadedConfig) -> None:
        self.host = host
        self.loaded = loaded
        self.config: Config = loaded.config
        self.opencode = OpenCodeServers(host.ledger)
        self.sessions = Sessions(host.state.root, self.config, host.ledger,
                                 drivers(self.config, self.opencode))
        lsp_config, self.lsp_warnings = load_lsp_config(loaded.source)
        self.lsp = LanguageServers(lsp_config, host.ledger, client_version=__version__)

    def boot(self, host: Host) -> None:
        for warning in self.loaded.warnings:
            if warning != _LSP_UNKNOWN:
                log.warning("config: %s", warning)
        for warning in [*self.lsp_warnings, *(w.message for w in self.lsp.warnings)]:
            log.warning("config: %s", warning)
        revived = self.sessions.boot()
        if revived:
            log.info("closed %d session(s) left open by a crashed daemon", len(revived))

    def children(self) -> Sequence[ChildSpec]:
        # lsp before sessions, so that it stops after them: a closing session may still ask.
        lsp = ChildSpec(id="lsp", start=self.lsp.run, type=ChildType.SUPERVISOR,
                        shutdown=self.lsp.config.shutdown_timeout + 5)
        # opencode before sessions too: OpenCode sessions hold leases on its shared servers.
        opencode = ChildSpec(id="opencode", start=self.opencode.run, type=ChildType.SUPERVISOR,
                             shutdown=self.opencode.settings.shutdown + 10)
        return [lsp, opencode,
                ChildSpec(id="sessions", start=self.sessions.run, type=ChildType.SUPERVISOR,
                          shutdown=self.config.daemon.shutdown_timeout + 5)]

    async def handle(self, request: ClientRequest, connection_id: str) -> msgspec.Struct:
        match request:
            case DaemonStatus():
                return DaemonStatusResult(
                    version=__version__, pid=os.getpid(), uptime_s=self.host.uptime,
                    sessions=len(self.sessions.infos()), clients=self.host.clients,
                    children=self.host.children(), supervisors=self.host.supervisors())
            case DaemonShutdown():
                self.host.stop()
                return Empty()
            case HarnessList():
                return HarnessListResult(harnesses=await self.sessions.detections())
            case SessionCreate():
                return SessionResult(session=await self.sessions.create(request))
            case SessionList():
                return SessionListResult(sessions=self.sessions.infos())
            case LspList():
                return LspListResult(servers=self.lsp.infos())
            case SessionGet(session_id=sid):
                return SessionResult(session=self.sessions.get(sid).info())
            case SessionClose(session_id=sid) if not isinstance(self.sessions.get(sid), Session):
                return Empty()  # closing an ended session is a no-op
            case (SessionPrompt(session_id=sid) | SessionInterrupt(session_id=sid)
                  | SessionPermission(session_id=sid) | SessionSetModel(session_id=sid)
                  | SessionClose(session_id=sid)):
                result: msgspec.Struct = await self.sessions.live_session(sid).call(request, connection_id)
                return result
        raise UnknownMethod(f"{type(request).__name__} is not served here")

    def feed(self, session_id: str) -> FeedLike:
        return self.sessions.get(session_id).feed


_LSP_UNKNOWN = "unknown key 'lsp' ignored"
"""The generic loader does not know ``[lsp]`` (read by ``load_lsp_config``) until the config root does."""


def _expand(path: str | None) -> str | None:
    return os.path.expanduser(path) if path else None


if __name__ == "__main__":
    sys.exit(main())
