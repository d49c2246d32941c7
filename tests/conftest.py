"""Shared fixtures: every test runs under trio (``trio_mode``); time is virtual where the logic is ours."""

from __future__ import annotations

import os

import pytest
import trio.testing



@pytest.fixture
def autojump_clock() -> trio.testing.MockClock:
    """A clock that jumps to the next deadline as soon as every task is blocked."""
    return trio.testing.MockClock(autojump_threshold=0)


from tests.raycluster import ray_cluster as ray_cluster  # noqa: E402  (a session-scoped fixture)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark every test on the shared Ray cluster ``ray``, and leave them out of a parallel
    (xdist) run that holds other tests too: the README's test command runs them after it, in a
    pytest of their own (``pytest -m ray``). A Ray cluster's processes are descendants of the
    process that starts it, so the other tests of its worker would find strays, and two
    workers would run two clusters on two cores beside everything else."""
    for item in items:
        if "ray_cluster" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.ray)
    if "PYTEST_XDIST_WORKER" not in os.environ:
        return
    ray = [item for item in items if item.get_closest_marker("ray") is not None]
    if ray and len(ray) < len(items):
        config.hook.pytest_deselected(items=ray)
        items[:] = [item for item in items if item.get_closest_marker("ray") is None]
