"""The composition root: configuration, the root supervisor's application children, and the
application the daemon serves. The console script ``corral`` points here. The harnesses' drivers
are made in ``actors.harnesses``; the client requests other than the daemon's own are routed in
``actors.router``.

This is the one module that sees every layer: it hands ``supervisor.server`` an application
(``App``) and ``supervisor.cli`` the way to run a daemon, so neither imports ``actors``. The
root of the configuration (``Config``) is here too: it gathers each owner's section, the
server's ``[daemon]`` among them, which no other module of ``actors`` may import.
"""

from __future__ import annotations

import argparse
import functools
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec
import trio
from msgspec import Struct

from actors import defaults
from actors.harness import HarnessRequest
from actors.harnesses import drivers
from actors.lsp import LanguageServers
from actors.lsp.config import LspConfig
from actors.mcp.config import McpConfig
from actors.mcp.wiring import McpParts, mcp_parts
from actors.native.cli import skillscmd
from actors.native.cli.runcli import add_commands as add_native_commands
from actors.native.daemon.config import (
    PRICES_FILE,
    NativeConfig,
    decode_providers,
    load_prices,
    user_prices_path,
)
from actors.native.daemon.forkservice import ForkServer
from actors.native.daemon.install import NATIVE_ROOT, adk_installed
from actors.notify.config import NotifyTarget
from actors.router import Router
from actors.sandboxing.config import SandboxConfig
from actors.session.config import HarnessConfig, HarnessesConfig, SessionsConfig
from actors.session.sessions import SessionTable
from actors.usage.report import local_summary
from actors.usage.service import UsageService
from actors.telemetry.config import TelemetryConfig
from actors.telemetry.service import Telemetry
from actors.vendors.detection import prewarm
from actors.vendors.opencode.servers import OpenCodeServers
from actors.workspace import Workspaces, WorkspacesConfig
from actors.workspace.requests import WorktreeRequests
from protocol.errors import ConfigInvalid
from protocol.messages import (
    ClientRequest,
    DaemonShutdown,
    DaemonStatus,
    DaemonStatusResult,
    Empty,
)
from protocol.models import ChildProcess
from supervisor import __version__
from supervisor.acp.config import AcpConfig
from supervisor.cli import commands, usagecmd
from supervisor.config import LoadedConfig, load_config
from supervisor.mcpserver.front import McpFront
from supervisor.placement.backend import LocalPlacement, PlacementBackend
from supervisor.placement.config import PlacementConfig
from supervisor.proc.config import ChildrenConfig
from supervisor.server import Host, run_daemon
from supervisor.server.config import DaemonConfig
from supervisor.server.connection import FeedLike
from supervisor.server.gate import PATH as GATE_PATH
from supervisor.server.gate import Gate
from supervisor.server.metrics import PATH as METRICS_PATH
from supervisor.server.metrics import MetricsRoute
from supervisor.statedir import DaemonFile, StateDir, resolve_state_dir
from supervisor.tree import ChildSpec, ChildType, RestartType

if TYPE_CHECKING:  # the native driver and its services load with the first native session
    from actors.native.daemon.asks import Services

__all__ = ["App", "Config", "main", "serve"]

log = logging.getLogger("corral.daemon")

PREWARM_DELAY = 3.0
"""Seconds after the daemon's children start (it is ready a moment later) before the background
warm-ups begin (``[native] prewarm``: the fork server; ``[harnesses] prewarm``: detection), so
they never compete with the start itself or with a first request."""

DAEMON_MODULE = "actors.app"
"""What ``corral start`` runs as ``python -m`` to start a daemon in the background."""


class Config(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The whole configuration; ``Config()`` is the default that runs with no file at all."""

    # actors/defaults/corral.toml (config/corral.toml) spells it out and schema.json is its
    # JSON Schema (tests keep both in sync); supervisor.config.load_config(Config, path) reads
    # a file. The docstrings of the sections are their descriptions in the schema.

    daemon: DaemonConfig = DaemonConfig()
    sessions: SessionsConfig = SessionsConfig()
    children: ChildrenConfig = ChildrenConfig()
    harness: dict[str, HarnessConfig] = {}
    harnesses: HarnessesConfig = HarnessesConfig()
    providers: dict[str, dict[str, Any]] = {}
    """``[providers.NAME]`` tables of the native harness, as read; ``actors.native.daemon.config``
    decodes them (with warnings that name the key) when the driver is built."""
    native: NativeConfig = NativeConfig()
    mcp: McpConfig = McpConfig()
    lsp: LspConfig = LspConfig()
    workspaces: WorkspacesConfig = WorkspacesConfig()
    acp: AcpConfig = AcpConfig()
    placement: PlacementConfig = PlacementConfig()
    notify: list[NotifyTarget] = []
    """``[[notify]]`` tables: webhooks posted a session's permission requests, finished turns
    and failures (``actors.notify``)."""
    sandbox: SandboxConfig = SandboxConfig()
    telemetry: TelemetryConfig = TelemetryConfig()


def main(argv: Sequence[str] | None = None) -> int:
    """The ``corral`` console script."""
    entry = commands.DaemonEntry(run=serve, module=DAEMON_MODULE, config=Config, extra=_commands,
                                 components=("google-adk", "mcp"))
    return commands.main(argv, daemon=entry)


def _commands(command: commands.CommandAdder) -> None:
    """The application's own commands, run in the CLI's process: run, probe, skills, usage,
    defaults."""
    add_native_commands(command, _providers)
    skillscmd.add_arguments(command("skills", _skills, skillscmd.HELP))
    usagecmd.add_arguments(command("usage", _usage, usagecmd.HELP))
    notify = command("notify", _notify, "Notifications: `corral notify test` "
                     "posts a test notification to every [[notify]] URL (no daemon needed).")
    notify.add_argument("what", choices=("test",), help="test: post one test notification to each")
    notify.add_argument("--config", metavar="FILE", help="configuration file")
    command("defaults", _defaults, "Print a default file shipped with corral, to read or copy "
            "(works without a daemon).").add_argument(
        "what", choices=tuple(defaults.FILES),
        help="config: every configuration key at its default; schema: the configuration's JSON "
             "Schema; prices: the model price table")


def _defaults(args: argparse.Namespace) -> None:
    """``corral defaults NAME``: the packaged file, byte for byte."""
    sys.stdout.write(defaults.read(defaults.FILES[args.what]))


def _usage(args: argparse.Namespace) -> None:
    """``corral usage``: the daemon's figures, else the state directory's read here."""
    usagecmd.show(args, local_summary)
def _notify(args: argparse.Namespace) -> int:
    """``corral notify test``: with the ``[[notify]]`` tables of the configuration file."""
    from actors.notify import cli

    loaded = load_config(Config, args.config)
    refused = [w for w in loaded.warnings if w.startswith(("bad value for 'notify", "unknown key 'notify"))]
    running = StateDir(resolve_state_dir(getattr(args, "state_dir", None))).read_daemon_file()
    page = cli.page_url(running.url if running else None, loaded.config.daemon.port)
    return cli.run(loaded.config.notify, refused, page, out=sys.stdout, err=sys.stderr)


def _skills(args: argparse.Namespace) -> int:
    """``corral skills``: with the ``[native]`` section of the configuration file."""
    loaded = load_config(Config, args.config)
    for warning in loaded.warnings:
        print(f"corral: config: {warning}", file=sys.stderr)
    return skillscmd.run(skillscmd.cwd_of(args), loaded.config.native.context(), os.environ,
                         as_json=args.json, out=sys.stdout, err=sys.stderr)


def _providers(path: str | None) -> dict[str, Any]:
    """The decoded ``[providers]`` tables of the config file (``corral run``/``probe``)."""
    tables, warnings = decode_providers(load_config(Config, path).config.providers)
    for warning in warnings:
        log.warning("config: %s", warning)
    return dict(tables)


async def serve(state_root: Path, loaded: LoadedConfig[Config], *, port: int | None = None,
                task_status: trio.TaskStatus[DaemonFile] = trio.TASK_STATUS_IGNORED) -> None:
    """Run a daemon with every actor kind on ``state_root`` until it is stopped."""
    state = StateDir(state_root)
    await trio.to_thread.run_sync(state.ensure)
    host = Host(state, loaded.config.daemon)
    app = App(host, loaded)
    await run_daemon(state, loaded.config.daemon, app, host, port=port, task_status=task_status)


class App:
    """The application the daemon serves: the sessions and the requests about them."""

    def __init__(self, host: Host, loaded: LoadedConfig[Config]) -> None:
        self.host = host
        self.loaded = loaded
        self.config: Config = loaded.config
        self.opencode = OpenCodeServers(host.ledger)
        # A native provider is usable with the default config (the built-in ones) once
        # google-adk is installed: then the fork server warms up before the first session.
        usable = self.config.native.prewarm and adk_installed()
        self.forks = ForkServer(host.state.root, host.ledger, cwd=str(NATIVE_ROOT),
                                prewarm=PREWARM_DELAY if usable else None)
        self.workspaces = Workspaces(host.state.root, self.config.workspaces, host.ledger)
        # Only a configured ``[[notify]]`` loads the notifier (and its HTTP client).
        self.notifier = _notifier(self.config, host)
        # Metrics from every session's events (and spans, when an OTLP endpoint is configured).
        self.telemetry = Telemetry(self.config.telemetry, os.environ)
        # After each turn's result a session with a worktree recounts its changed files.
        self.sessions = SessionTable(host.state.root, self.config, host.ledger,
                                     drivers(self.config, self.opencode, forks=self.forks,
                                             services=self._native_services,
                                             tracing=self.telemetry.native_tracing),
                                     after_result=self.workspaces.after_result,
                                     watch=self.notifier.watch if self.notifier else None,
                                     observer=self.telemetry.observer)
        self.sessions.sandbox_masks = [str(host.state.root), str(self.workspaces.root)]
        self.worktrees = WorktreeRequests(self.workspaces, self.sessions)
        self.usage = UsageService(host.state.root,
                                  lambda: load_prices((PRICES_FILE, user_prices_path()))[0])
        self.lsp = LanguageServers(self.config.lsp, host.ledger, client_version=__version__)
        self.mcp: McpParts = mcp_parts(loaded, host.ledger, _mcp_gate(self.config))
        # corral's own tools over MCP at /mcp on the daemon's port (the SDK loads on first use)
        self.mcp_front = McpFront(host.state.root, lambda: host.port,
                                  extra_origins=self.config.daemon.allowed_origins)
        host.routes["/mcp"] = self.mcp_front.splice
        self.placement = _placement(self.config.placement, host, self.sessions)
        self.router = Router(sessions=self.sessions, workspaces=self.workspaces, worktrees=self.worktrees,
                             mcp=self.mcp, lsp=self.lsp, usage=self.usage, placement=self.placement,
                             by_name=host.roster.name)
        host.delivery = self.telemetry.metrics.delivery.observe
        host.routes[METRICS_PATH] = MetricsRoute(
            self.telemetry.registry, lambda: host.port, host.state.token,
            public=self.config.telemetry.metrics_public, extra_origins=self.config.daemon.allowed_origins)

    def boot(self, host: Host) -> None:
        for warning in [*self.loaded.warnings, *(w.message for w in self.lsp.warnings)]:
            log.warning("config: %s", warning)
        self.workspaces.load()
        revived = self.sessions.boot()
        for info in self.sessions.infos():  # the sessions a previous daemon left, in the gauge
            self.telemetry.observer.seed(info.id, info.harness, info.state)
        if revived:
            log.info("closed %d session(s) left open by a crashed daemon", len(revived))

    def children(self) -> Sequence[ChildSpec]:
        # MCP and LSP first: sessions (which use them) stop before they do.
        lsp = ChildSpec(id="lsp", start=self.lsp.run, type=ChildType.SUPERVISOR,
                        shutdown=self.lsp.config.shutdown_timeout + 5)
        # opencode before sessions too: OpenCode sessions hold leases on its shared servers.
        opencode = ChildSpec(id="opencode", start=self.opencode.run, type=ChildType.SUPERVISOR,
                             shutdown=self.opencode.settings.shutdown + 10)
        # The native fork server before sessions too: a restarting native session forks from it.
        # The workspaces' boot reconcile runs first and is done before anything listens.
        reconcile = ChildSpec(id="workspaces", start=self.workspaces.run, restart=RestartType.TEMPORARY)
        # Last, so it stops first: the background detection of every harness.
        detection = ([ChildSpec(id="prewarm-detection", restart=RestartType.TEMPORARY,
                                start=functools.partial(prewarm, self.sessions.detections,
                                                        PREWARM_DELAY))]
                     if self.config.harnesses.prewarm else [])
        # The notifier before sessions: it stops after them, so it reads their last events.
        notify = ([ChildSpec(id="notify", start=self.notifier.run, shutdown=1.0)]
                  if self.notifier is not None else [])
        # The Ray gateway before sessions too: sessions stop (their children closed) before it
        # ends every node agent.
        engine = getattr(self.placement, "engine", None)  # the ray backend's gateway
        placement = [ChildSpec(id="placement", start=engine.run, shutdown=20.0)] if engine else []
        # Telemetry first, so it stops last: the sessions' last spans are exported at the stop.
        return [*self.telemetry.children(), reconcile, *self.mcp.children(), lsp, opencode,
                self.forks.child_spec("native"), *notify, *placement,
                ChildSpec(id="sessions", start=self.sessions.run, type=ChildType.SUPERVISOR,
                          shutdown=self.config.daemon.shutdown_timeout + 5),
                ChildSpec(id="mcp-http", start=self.mcp_front.run, shutdown=3.0), *detection]

    async def handle(self, request: ClientRequest, connection_id: str) -> msgspec.Struct:
        match request:
            case DaemonStatus():
                return DaemonStatusResult(
                    version=__version__, pid=os.getpid(), uptime_s=self.host.uptime,
                    sessions=len(self.sessions.infos()), clients=self.host.clients,
                    children=[*self.host.children(), *self._remote_children()],
                    supervisors=self.host.supervisors(),
                    connections=self.host.roster.infos(),
                    warming=["native"] if self.forks.warming else [])
            case DaemonShutdown():
                self.host.stop()
                return Empty()
        return await self.router.handle(request, connection_id)

    def feed(self, session_id: str) -> FeedLike:
        return self.sessions.get(session_id).feed

    def _remote_children(self) -> list[ChildProcess]:
        """The children a placement backend runs on other nodes (none on ``local``)."""
        children = getattr(self.placement, "children", None)
        return list(children()) if children is not None else []
    def _native_services(self) -> Services:
        """What answers the native workers' asks: they reach MCP and LSP through us (built with
        the native driver, on its first use)."""
        from actors.native.daemon.services import DaemonServices
        return DaemonServices(mcp=self.mcp.registry, lsp=self.lsp, session=self._live_request)

    def _live_request(self, session_id: str) -> HarnessRequest | None:
        """A live session's request (its cwd and MCP servers), for the native workers' asks."""
        session = self.sessions.live.get(session_id)
        return session.core.request if session is not None else None


def _placement(config: PlacementConfig, host: Host, sessions: SessionTable) -> PlacementBackend:
    """The backend ``[placement] backend`` names (``local``: this machine, one node; ``ray``:
    the nodes of a Ray cluster, through a gateway process: the daemon never imports Ray)."""
    if config.backend == "ray":
        from supervisor.placement.ray.backend import RayBackend

        backend = RayBackend(config, host.state.root, host.ledger)
        sessions.opener = backend.open  # every harness's child is opened on a node
        return backend
    if config.backend != "local":
        raise ConfigInvalid(f"[placement] backend {config.backend!r} is not available in this build")

    def open_sessions() -> int:  # a closed session may linger in ``live`` a moment
        return sum(1 for s in sessions.live.values() if s.info().state not in ("closed", "failed"))

    return LocalPlacement(children=lambda: len(host.children()), sessions=open_sessions)


def _notifier(config: Config, host: Host) -> Any:
    """The notifier actor of ``[[notify]]``, or None (then nothing of it is imported)."""
    if not config.notify:
        return None
    from actors.notify.delivery import Notifier

    return Notifier(config.notify, lambda session_id: f"http://127.0.0.1:{host.port}/#{session_id}")


def _mcp_gate(config: Config) -> Any:
    """The shared MCP endpoint's Host and Origin checks: the websocket's ``Gate`` rules (a
    loopback Host; no Origin, or the endpoint's own, or one allow-listed in ``[daemon]``)."""

    def refuse(port: int, host: str, headers: Sequence[tuple[bytes, bytes]]) -> str | None:
        return Gate(port, config.daemon.allowed_origins).refusal(GATE_PATH, host, headers, unix=False)

    return refuse


if __name__ == "__main__":
    sys.exit(main())
