"""Shared fixtures: every test runs under trio (``trio_mode``); time is virtual where the logic is ours."""

from __future__ import annotations

import pytest
import trio.testing


@pytest.fixture
def autojump_clock() -> trio.testing.MockClock:
    """A clock that jumps to the next deadline as soon as every task is blocked."""
    return trio.testing.MockClock(autojump_threshold=0)


from tests.raycluster import ray_cluster as ray_cluster  # noqa: E402  (a session-scoped fixture)
