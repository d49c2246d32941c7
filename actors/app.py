"""The composition root: configuration, harness drivers, the root supervisor's application
children, and the request handlers the daemon serves. The console script ``corral`` points here.

This is the one module that sees every layer: it hands ``supervisor.server`` an application
(``App``) and ``supervisor.cli`` the way to run a daemon, so neither imports ``actors``. The
root of the configuration (``Config``) is here too: it gathers each owner's section, the
server's ``[daemon]`` among them, which no other module of ``actors`` may import.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import secrets
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

import msgspec
import trio
from msgspec import Struct

from actors import defaults
from actors.fake import FakeDriver
from actors.harness import HarnessRequest
from actors.lsp import LanguageServers
from actors.lsp.config import LspConfig
from actors.mcp.config import McpConfig
from actors.native.config import (
    PRICES_FILE,
    NativeConfig,
    decode_providers,
    load_prices,
    user_prices_path,
)
from actors.native.driver import NATIVE_ROOT, NativeDriver
from actors.native import skillscmd
from actors.native.forkservice import ForkServer
from actors.native.runcli import add_commands as add_native_commands
from actors.native.translate import autonomy as native_autonomy
from actors.native.services import DaemonServices
from actors.session.actor import Session
from actors.session.config import HarnessConfig, SessionsConfig, harness_defaults
from actors.session.sessions import SessionTable
from actors.vendors.acp import PROFILES, AcpDriver
from actors.vendors.claude import ClaudeDriver
from actors.vendors.codex import CodexDriver
from actors.vendors.detection import DetectionCache
from actors.vendors.opencode import OpenCodeDriver, OpenCodeServers
from actors.vendors.pi import PiDriver
from actors.workspace import Workspaces, WorkspacesConfig
from protocol.errors import CorralError, SessionBusy, UnknownMethod
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
    McpList,
    McpListResult,
    McpRestart,
    McpServerResult,
    SessionClose,
    SessionCompact,
    SessionCreate,
    SessionGet,
    SessionInterrupt,
    SessionList,
    SessionListResult,
    SessionPermission,
    SessionPrompt,
    SessionResult,
    SessionResume,
    SessionSetModel,
    WorkspaceCommit,
    WorkspaceDiff,
    WorkspaceDiscard,
    WorkspaceMerge,
)
from protocol.models import SessionInfo, WorkspaceSpec
from supervisor import __version__
from supervisor.cli import commands
from supervisor.config import LoadedConfig, load_config
from supervisor.mcpserver.front import McpFront
from supervisor.proc.config import ChildrenConfig
from supervisor.server import Host, run_daemon
from supervisor.server.config import DaemonConfig
from supervisor.server.connection import FeedLike
from supervisor.server.gate import PATH as GATE_PATH
from supervisor.server.gate import Gate
from supervisor.statedir import DaemonFile, StateDir
from supervisor.tree import ChildSpec, ChildType, RestartType

if TYPE_CHECKING:
    from actors.mcp.wiring import McpParts

__all__ = ["App", "Config", "drivers", "main", "serve"]

log = logging.getLogger("corral.daemon")

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
    providers: dict[str, dict[str, Any]] = {}
    """``[providers.NAME]`` tables of the native harness, as read; ``actors.native.config``
    decodes them (with warnings that name the key) when the driver is built."""
    native: NativeConfig = NativeConfig()
    mcp: McpConfig = McpConfig()
    lsp: LspConfig = LspConfig()
    workspaces: WorkspacesConfig = WorkspacesConfig()


def main(argv: Sequence[str] | None = None) -> int:
    """The ``corral`` console script."""
    entry = commands.DaemonEntry(run=serve, module=DAEMON_MODULE, config=Config, extra=_commands,
                                 components=("google-adk", "mcp"))
    return commands.main(argv, daemon=entry)


def _commands(command: commands.CommandAdder) -> None:
    """The application's own commands, run in the CLI's process: run, probe, skills, defaults."""
    add_native_commands(command, _providers)
    skillscmd.add_arguments(command("skills", _skills, skillscmd.HELP))
    command("defaults", _defaults, "Print a default file shipped with corral, to read or copy "
            "(works without a daemon).").add_argument(
        "what", choices=tuple(defaults.FILES),
        help="config: every configuration key at its default; schema: the configuration's JSON "
             "Schema; prices: the model price table")


def _defaults(args: argparse.Namespace) -> None:
    """``corral defaults NAME``: the packaged file, byte for byte."""
    sys.stdout.write(defaults.read(defaults.FILES[args.what]))


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


class _VendorArgs(TypedDict):
    """What every vendor driver takes from the configuration (``drivers``)."""

    binary: str | None
    env: dict[str, str]
    home: str | None
    cache: DetectionCache


def drivers(config: Config, opencode: OpenCodeServers | None = None, *,
            forks: ForkServer | None = None) -> dict[str, Any]:
    """Every harness by name; ``[harness.<name>]`` tables configure the vendor drivers and
    ``[providers.<name>]`` tables (with the shipped price table and the user's ``prices.toml``)
    the native one.

    ``opencode`` is the daemon's ``opencode`` supervisor (shared servers); without one (tools
    that only list harnesses) OpenCode sessions get a private pool that is not running.
    ``forks`` is the daemon's native fork server; without one native workers are exec'd.
    """
    providers, warnings = decode_providers(config.providers)
    prices, price_warnings = load_prices((PRICES_FILE, user_prices_path()))
    for warning in warnings + price_warnings:
        log.warning("config: %s", warning)
    cache = DetectionCache()  # one for every vendor: harness.list and session.create read it

    def vendor(harness: str) -> _VendorArgs:
        # The binary, env and home every session of ``harness`` gets (``harness_defaults``):
        # its detection probes that binary with that env and home laid over the daemon's
        # environment, as the sessions' children get them.
        options, env = harness_defaults(config, harness)
        binary, home = options.get("binary"), options.get("home")
        return _VendorArgs(binary=binary if isinstance(binary, str) else None, env=env,
                           home=home if isinstance(home, str) else None, cache=cache)

    return {
        "fake": FakeDriver(),
        "claude": ClaudeDriver(**vendor("claude")),
        "codex": CodexDriver(**vendor("codex")),
        "native": NativeDriver(providers=providers, prices=prices, forks=forks,
                               context=config.native.context(),
                               compaction=config.native.compaction),
        **{name: AcpDriver(profile, **vendor(name)) for name, profile in PROFILES.items()},
        "pi": PiDriver(**vendor("pi")),
        "opencode": OpenCodeDriver(opencode or OpenCodeServers(None), **vendor("opencode")),
    }


class App:
    """The application the daemon serves: the sessions and the requests about them."""

    def __init__(self, host: Host, loaded: LoadedConfig[Config]) -> None:
        self.host = host
        self.loaded = loaded
        self.config: Config = loaded.config
        self.opencode = OpenCodeServers(host.ledger)
        self.forks = ForkServer(host.state.root, host.ledger, cwd=str(NATIVE_ROOT))
        self.workspaces = Workspaces(host.state.root, self.config.workspaces, host.ledger)
        # After each turn's result a session with a worktree recounts its changed files.
        self.sessions = SessionTable(host.state.root, self.config, host.ledger,
                                     drivers(self.config, self.opencode, forks=self.forks),
                                     after_result=self.workspaces.after_result)
        self.lsp = LanguageServers(self.config.lsp, host.ledger, client_version=__version__)
        from actors.mcp.wiring import mcp_parts  # the MCP SDK (a second of imports) loads with
        # the daemon, not with every CLI command that imports this module for Config and main
        self.mcp: McpParts = mcp_parts(loaded, host.ledger, _mcp_gate(self.config))
        # corral's own tools over MCP at /mcp on the daemon's port (the SDK loads on first use)
        self.mcp_front = McpFront(host.state.root, lambda: host.port,
                                  extra_origins=self.config.daemon.allowed_origins)
        host.routes["/mcp"] = self.mcp_front.splice
        native = self.sessions.drivers.get("native")
        if isinstance(native, NativeDriver):  # native workers reach MCP and LSP through us
            native.services = DaemonServices(mcp=self.mcp.registry, lsp=self.lsp,
                                             session=self._live_request)

    def boot(self, host: Host) -> None:
        for warning in [*self.loaded.warnings, *(w.message for w in self.lsp.warnings)]:
            log.warning("config: %s", warning)
        self.workspaces.load()
        revived = self.sessions.boot()
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
        return [reconcile, *self.mcp.children(), lsp, opencode, self.forks.child_spec("native"),
                ChildSpec(id="sessions", start=self.sessions.run, type=ChildType.SUPERVISOR,
                          shutdown=self.config.daemon.shutdown_timeout + 5),
                ChildSpec(id="mcp-http", start=self.mcp_front.run, shutdown=3.0)]

    async def handle(self, request: ClientRequest, connection_id: str) -> msgspec.Struct:
        if isinstance(request, SessionCreate) and request.prompt is None:
            request = _goal_as_prompt(request)
        match request:
            case DaemonStatus():
                return DaemonStatusResult(
                    version=__version__, pid=os.getpid(), uptime_s=self.host.uptime,
                    sessions=len(self.sessions.infos()), clients=self.host.clients,
                    children=self.host.children(), supervisors=self.host.supervisors(),
                    connections=self.host.roster.infos())
            case DaemonShutdown():
                self.host.stop()
                return Empty()
            case HarnessList(models=models):
                return HarnessListResult(harnesses=await self.sessions.detections(models=models))
            case SessionCreate(workspace=WorkspaceSpec()):
                return SessionResult(session=await self._create_in_workspace(request))
            case SessionCreate():
                shared, key = await self.mcp.prepare(request)
                try:
                    info = await self.sessions.create(shared)
                except BaseException:
                    self.mcp.adopt(key, None)
                    raise
                self.mcp.adopt(key, info.id)
                return SessionResult(session=info)
            case SessionList():
                return SessionListResult(sessions=[self.workspaces.describe(i) for i in self.sessions.infos()])
            case LspList():
                return LspListResult(servers=self.lsp.infos())
            case SessionResume():
                return SessionResult(session=await self.sessions.resume(request))
            case SessionGet(session_id=sid):
                return SessionResult(session=self.workspaces.describe(self.sessions.get(sid).info()))
            case WorkspaceDiff(session_id=sid, stat=stat):
                self.sessions.get(sid)
                return await self.workspaces.diff(sid, stat=stat)
            case WorkspaceCommit(session_id=sid, message=message):
                self.sessions.get(sid)
                return await self.workspaces.commit(sid, message)
            case WorkspaceMerge(session_id=sid, strategy=strategy):
                ended = not isinstance(self.sessions.get(sid), Session)
                merged = await self.workspaces.merge(sid, strategy, ended=ended)
                await self.sessions.announce(sid, self.workspaces.event(sid, "merged"))
                return merged
            case WorkspaceDiscard(session_id=sid, force=force):
                await self._discard(sid, force=force, by=connection_id)
                return Empty()
            case McpList():
                return McpListResult(servers=self.mcp.registry.infos())
            case McpRestart(name=name):
                return McpServerResult(server=await self.mcp.registry.restart(name))
            case SessionClose(session_id=sid) if not isinstance(self.sessions.get(sid), Session):
                return Empty()  # closing an ended session is a no-op
            case (SessionPrompt(session_id=sid) | SessionInterrupt(session_id=sid)
                  | SessionPermission(session_id=sid) | SessionSetModel(session_id=sid)
                  | SessionCompact(session_id=sid) | SessionClose(session_id=sid)):
                result: msgspec.Struct = await self.sessions.live_session(sid).call(
                    request, connection_id, by_name=self.host.roster.name(connection_id))
                if isinstance(request, SessionClose):
                    self.mcp.release(sid)
                return result
        raise UnknownMethod(f"{type(request).__name__} is not served here")

    def feed(self, session_id: str) -> FeedLike:
        return self.sessions.get(session_id).feed

    def _live_request(self, session_id: str) -> HarnessRequest | None:
        """A live session's request (its cwd and MCP servers), for the native workers' asks."""
        session = self.sessions.live.get(session_id)
        return session.core.request if session is not None else None

    # --- workspaces: the seam until the session table calls them itself --------------------

    async def _create_in_workspace(self, request: SessionCreate) -> SessionInfo:
        """``session.create`` with a ``workspace``: the worktree first, then the session in it.

        The session id is chosen here so the worktree is made for it; a session that cannot
        be created takes its worktree with it. The first prompt waits for the ``workspace``
        event, so that event comes before the turn in the session's log.
        """
        session_id = f"s-{secrets.token_hex(6)}"
        record = await self.workspaces.place(session_id, request.workspace or _NO_WORKSPACE,
                                             cwd=request.cwd, label=request.name)
        if record is None:  # mode "none": today's behaviour
            return await self.sessions.create(request, session_id=session_id)
        plain = msgspec.structs.replace(request, cwd=record.cwd, workspace=None, prompt=None)
        try:
            await self.sessions.create(plain, session_id=session_id)
            await self.workspaces.bind(record)
        except BaseException:
            with trio.CancelScope(shield=True):
                with contextlib.suppress(CorralError):  # it may not exist, or be closed already
                    await self.sessions.live_session(session_id).close("session")
                await self.workspaces.release(record)
            raise
        await self.sessions.announce(session_id, self.workspaces.event(session_id, "created"))
        found = self.sessions.get(session_id)
        if request.prompt and isinstance(found, Session):
            await found.prompt(request.prompt, "session")
        return self.workspaces.describe(found.info())

    async def _discard(self, session_id: str, *, force: bool, by: str) -> None:
        """``workspace.discard``: an open session is ``session_busy`` unless ``force`` closes it."""
        found = self.sessions.get(session_id)
        record = self.workspaces.owned(session_id)  # ``unsupported`` before anything is closed
        if isinstance(found, Session):
            if not force:
                raise SessionBusy(f"session {session_id} is {found.state}: close it first, or "
                                  "discard with force to close it and discard its worktree")
            await found.close(by)
        await self.workspaces.discard(session_id)
        if not (record.removed and record.state == "discarded"):  # a second discard is a no-op
            await self.sessions.announce(session_id, self.workspaces.event(session_id, "discarded"))


_NO_WORKSPACE = WorkspaceSpec()


def _goal_as_prompt(request: SessionCreate) -> SessionCreate:
    """A native autonomous session created without a prompt starts with its goal (the first
    user message of the run); a bad ``options.autonomous`` is refused here."""
    if request.harness != "native" or not request.options:
        return request
    settings = native_autonomy(request.options)
    return request if settings is None else msgspec.structs.replace(request, prompt=settings.goal)


def _mcp_gate(config: Config) -> Any:
    """The shared MCP endpoint's Host and Origin checks: the websocket's ``Gate`` rules (a
    loopback Host; no Origin, or the endpoint's own, or one allow-listed in ``[daemon]``)."""

    def refuse(port: int, host: str, headers: Sequence[tuple[bytes, bytes]]) -> str | None:
        return Gate(port, config.daemon.allowed_origins).refusal(GATE_PATH, host, headers, unix=False)

    return refuse


if __name__ == "__main__":
    sys.exit(main())
