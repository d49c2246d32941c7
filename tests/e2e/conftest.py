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
