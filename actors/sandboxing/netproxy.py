"""A sandboxed session's network proxy (``net = "model"``): its allowlist, its supervisor, and
what the session's child requests learn of it.

One per session that needs one (``SessionProxy.for_session``): a ``ProxyServer``
(``supervisor.sandbox.proxy``) on ``<session dir>/proxy/proxy.sock``. Under bubblewrap it also
serves ``127.0.0.1:3128`` inside the session's own network namespace
(``supervisor.sandbox.sandboxnet``: made once, before the harness, and held here; every spawn of
the harness joins it, ``HarnessRequest.proxy_join``). Under Landlock, which has no network namespace — and for the
native agent, whose worker keeps the host's network under either backend — it listens on a
loopback TCP port too, the one port the Landlock rules let the harness (or the native agent's
bash commands) connect to; the proxy variables point straight at it. It runs under a one-child
``one_for_one`` supervisor in the session actor's nursery, started before the harness's, so the
first child generation finds it; a restart binds the same socket and port again and serves the
same namespace. Should it not bind at all (or the namespace not be made), or crash more than
``_INTENSITY`` times in ``_PERIOD`` seconds, the session is told with an ``error`` event
(``sandbox.proxy_failed``, class ``network``) and its harness's connections fail from then on
(without a namespace a bubblewrap harness does not start); the session itself goes on.

The allowlist is the harness's model endpoints (``modelhosts``) plus the session's
``allow_hosts``. A refused connection is ``announce``\\d as a ``sandbox`` event, rate-limited
per ``host:port`` (``refusals``: a loop of retries costs one event per window).
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Awaitable, Callable
from pathlib import Path

import msgspec
import trio

from actors.harness import Driver, HarnessRequest
from actors.sandboxing.modelhosts import model_hosts
from actors.sandboxing.refusals import Refusals
from protocol.errors import ActorGone, IntensityExceeded
from protocol.events import Error, Event
from supervisor.sandbox import BRIDGE_PORT
from supervisor.sandbox.allowlist import Allowlist
from supervisor.sandbox.proxy import ProxyServer
from supervisor.sandbox.sandboxnet import SandboxNet, make_net
from supervisor.tree import SupervisorSpec, supervise

__all__ = ["SessionProxy", "allowlist_for"]

log = logging.getLogger("corral.sandbox")

_INTENSITY = 5
_PERIOD = 60.0

Announce = Callable[[Event], Awaitable[None]]


def allowlist_for(request: HarnessRequest, harness: str, driver: Driver | None) -> Allowlist:
    """The model hosts of ``harness`` for ``request`` (its launch's argv and env included, when
    the driver can build it) and the sandbox's ``allow_hosts``."""
    argv: list[str] = []
    env = {**os.environ, **request.env}
    if driver is not None:
        try:
            launch = driver.launch(request)
            argv, env = list(launch.argv), {**env, **launch.env}
        except Exception:  # the spawn will report it; the allowlist does without the launch
            log.debug("no launch to read the model hosts of %s from", harness, exc_info=True)
    hosts = model_hosts(harness, model=request.model, options=request.options, env=env, argv=argv)
    extra = request.sandbox.allow_hosts if request.sandbox is not None else []
    return Allowlist.parse([*hosts, *extra])  # allow_hosts were checked at create (settings)


class SessionProxy:
    """The proxy of one session; ``supervise`` is the session's child, ``attach`` fills in a
    child request's ``proxy_socket`` (and, under Landlock, ``proxy_port``)."""

    def __init__(self, request: HarnessRequest, harness: str, driver: Driver | None, socket_path: Path,
                 announce: Announce, *, tcp: bool, namespaced: bool = False) -> None:
        self.session_id = request.session_id
        self._announce = announce
        self.refusals = Refusals(announce)
        self._allowing = (request, harness, driver)
        self.server = ProxyServer(Allowlist(), self.refusals.refused, socket_path=socket_path, tcp=tcp,
                                  name=f"{self.session_id} proxy")
        """Its allowlist is filled in by ``supervise`` (it may read Codex's config: a thread)."""
        self._namespaced = namespaced
        self.net: SandboxNet | None = None
        """The session's network namespace (bubblewrap), held while ``supervise`` runs."""

    @classmethod
    def for_session(cls, request: HarnessRequest, harness: str, driver: Driver | None,
                    announce: Announce) -> SessionProxy | None:
        """A proxy when the session is sandboxed with ``net = "model"``, else ``None``."""
        sandbox = request.sandbox
        if sandbox is None or sandbox.net != "model":
            return None
        socket_path = Path(request.work_dir).parent / "proxy" / "proxy.sock"
        # A TCP port too where the child shares the host's network: under Landlock, and for a
        # native worker, whose bash commands reach the proxy through Landlock's TCP rules.
        native = getattr(driver, "spawn", None) is not None
        tcp = sandbox.effective == "landlock" or native
        return cls(request, harness, driver, socket_path, announce, tcp=tcp,
                   namespaced=sandbox.effective == "bwrap" and not native)

    async def supervise(self, *, task_status: trio.TaskStatus[object] = trio.TASK_STATUS_IGNORED) -> None:
        """Run the proxy's supervisor until cancelled (ready once the proxy listens)."""
        directory = self.server.socket_path.parent if self.server.socket_path else None

        def prepare() -> Allowlist:
            if directory is not None:
                directory.mkdir(mode=0o700, exist_ok=True)
            return allowlist_for(*self._allowing)

        self.server.allowlist = await trio.to_thread.run_sync(prepare)
        if self._namespaced and directory is not None:
            try:
                self.net = await make_net(directory, BRIDGE_PORT, name=f"session:{self.session_id}")
            except OSError as exc:  # NetUnavailable: the harness cannot start confined, its spawn says so
                task_status.started(None)
                await self._failed(f"its network namespace cannot be made: {exc}", exc)
                return
            self.server.inside = self.net.listener
        async with trio.open_nursery() as nursery:
            await nursery.start(self.refusals.run)
            try:
                await supervise(SupervisorSpec(intensity=_INTENSITY, period=_PERIOD), [self.server.child_spec()],
                                name=f"{self.session_id} proxy", task_status=task_status)
            except IntensityExceeded as exc:
                await self._failed("it failed too often", exc)
            except OSError as exc:  # its first bind failed (it had not started): the session goes on
                task_status.started(None)
                await self._failed(f"it cannot listen: {exc.strerror or exc}", exc)
            finally:
                nursery.cancel_scope.cancel()
                if self.net is not None:
                    self.server.inside = None
                    self.net.close()
                    self.net = None

    def attach(self, request: HarnessRequest) -> HarnessRequest:
        """``request`` pointing at this proxy (``proxy_port``: the TCP port, under Landlock; a
        native worker's ``confinement`` gets it too, for its bash commands)."""
        confinement = request.confinement
        if confinement is not None:
            confinement = msgspec.structs.replace(confinement, proxy_port=self.server.tcp_port)
        return msgspec.structs.replace(request, proxy_socket=str(self.server.socket_path),
                                       proxy_port=self.server.tcp_port, confinement=confinement,
                                       proxy_join=self.net.join() if self.net is not None else [])

    async def _failed(self, why: str, exc: Exception) -> None:
        log.warning("session %s: its sandbox proxy is down: %s", self.session_id, exc)
        with contextlib.suppress(ActorGone):
            await self._announce(Error(
                code="sandbox.proxy_failed", error_class="network",
                message=f"the sandbox's network proxy is down ({why}): the harness cannot reach its "
                        "model until the session is resumed"))
