"""Fixtures for end-to-end tests: a real daemon process on a private state directory."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from .daemonproc import DaemonProc, start_daemon, stop_daemon


@pytest.fixture
async def daemon(tmp_path: Path) -> AsyncIterator[DaemonProc]:
    """A daemon with default configuration on an ephemeral port; stopped (gracefully) after the test."""
    proc = await start_daemon(tmp_path / "state")
    try:
        yield proc
    finally:
        await stop_daemon(proc)


@pytest.fixture(params=["local", pytest.param("ray", marks=[pytest.mark.slow, pytest.mark.ray])])
async def placed_daemon(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[DaemonProc]:
    """The daemon of the conformance tests, once per placement backend: ``local``, and ``ray``
    with every child on a node of the shared loopback cluster (``tests.raycluster``). A module
    runs its ``daemon`` tests on both by taking this fixture as its ``daemon``."""
    if request.param == "local":
        proc = await start_daemon(tmp_path / "state")
        timeout = 30.0
    else:
        cluster = request.getfixturevalue("ray_cluster")
        config = tmp_path / "corral.toml"
        config.write_text(f'[placement]\nbackend = "ray"\naddress = "{cluster.address}"\n'
                          'heartbeat_timeout = 3.0\n')
        proc = await start_daemon(tmp_path / "state", config=str(config), timeout=180)
        timeout = 60.0
    try:
        yield proc
    finally:
        await stop_daemon(proc, timeout=timeout)
