"""The harnesses the daemon offers: every harness's driver by name, built from the configuration.

``drivers`` maps each harness to a factory (``LazyDrivers``: a driver's package is imported the
first time it is looked up). ``[harness.<name>]`` tables configure the vendor drivers;
``[providers.<name>]`` tables, the shipped price table and the user's ``prices.toml`` the native
one. The composition root (``actors.app``) hands the result to the session table; tools that only
list harnesses call it without the daemon's shared parts.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol, TypedDict

from actors.fake import FakeDriver
from actors.native.daemon.config import (
    PRICES_FILE,
    NativeConfig,
    decode_providers,
    load_prices,
    user_prices_path,
)
from actors.native.daemon.forkservice import ForkServer
from actors.session.config import SessionSettings, harness_defaults
from actors.session.drivers import LazyDrivers
from actors.vendors.acp.profiles import PROFILES
from actors.vendors.detection import DetectionCache
from actors.vendors.opencode.servers import OpenCodeServers

if TYPE_CHECKING:  # the native driver and its services load with the first native session
    from actors.native.daemon.asks import Services

__all__ = ["DriverSettings", "drivers"]

log = logging.getLogger("corral.daemon")


class DriverSettings(SessionSettings, Protocol):
    """What the drivers read of the root configuration (``actors.app.Config`` has it)."""

    @property
    def providers(self) -> Mapping[str, Mapping[str, Any]]: ...

    @property
    def native(self) -> NativeConfig: ...


class _VendorArgs(TypedDict):
    """What every vendor driver takes from the configuration (``drivers``)."""

    binary: str | None
    env: dict[str, str]
    home: str | None
    cache: DetectionCache


def drivers(config: DriverSettings, opencode: OpenCodeServers | None = None, *,
            forks: ForkServer | None = None,
            services: Callable[[], Services] | None = None,
            tracing: Callable[[], Any] | None = None) -> LazyDrivers:
    """Every harness by name, each driver built on first use (``LazyDrivers``: its package is
    imported then); ``[harness.<name>]`` tables configure the vendor drivers and
    ``[providers.<name>]`` tables (with the shipped price table and the user's
    ``prices.toml``) the native one, decoded when it is built (their warnings logged then).

    ``opencode`` is the daemon's ``opencode`` supervisor (shared servers); without one (tools
    that only list harnesses) OpenCode sessions get a private pool that is not running.
    ``forks`` is the daemon's native fork server; without one native workers are exec'd.
    ``services`` makes what answers the native workers' asks (MCP tools, diagnostics), called
    when the native driver is built; without it their asks are refused. ``tracing`` makes the
    telemetry its workers add their model calls' spans with (``None``: telemetry is off).
    """
    cache = DetectionCache()  # one for every vendor: harness.list and session.create read it

    def vendor(harness: str) -> _VendorArgs:
        # The binary, env and home every session of ``harness`` gets (``harness_defaults``):
        # its detection probes that binary with that env and home laid over the daemon's
        # environment, as the sessions' children get them.
        options, env = harness_defaults(config, harness)
        binary, home = options.get("binary"), options.get("home")
        return _VendorArgs(binary=binary if isinstance(binary, str) else None, env=env,
                           home=home if isinstance(home, str) else None, cache=cache)

    # Factories typed ``Any`` as the drivers were: not every driver matches ``Driver`` exactly.
    def claude() -> Any:
        from actors.vendors.claude import ClaudeDriver
        return ClaudeDriver(**vendor("claude"))

    def codex() -> Any:
        from actors.vendors.codex import CodexDriver
        return CodexDriver(**vendor("codex"))

    def acp(name: str) -> Any:
        from actors.vendors.acp import AcpDriver
        return AcpDriver(PROFILES[name], **vendor(name))

    def pi() -> Any:
        from actors.vendors.pi import PiDriver
        return PiDriver(**vendor("pi"))

    def native() -> Any:
        from actors.native.daemon.driver import NativeDriver
        providers, warnings = decode_providers(config.providers)
        prices, price_warnings = load_prices((PRICES_FILE, user_prices_path()))
        for warning in warnings + price_warnings:
            log.warning("config: %s", warning)
        driver = NativeDriver(providers=providers, prices=prices, forks=forks,
                              context=config.native.context(), compaction=config.native.compaction,
                              services=services() if services is not None else None)
        driver.tracing = tracing() if tracing is not None else None
        return driver

    def opencode_driver() -> Any:
        from actors.vendors.opencode import OpenCodeDriver
        return OpenCodeDriver(opencode or OpenCodeServers(None), **vendor("opencode"))

    return LazyDrivers({
        "fake": FakeDriver,
        "claude": claude,
        "codex": codex,
        "native": native,
        **{name: functools.partial(acp, name) for name in PROFILES},
        "pi": pi,
        "opencode": opencode_driver,
    })
