"""Shared fixtures: every test runs under trio (``trio_mode``); time is virtual where the logic is ours."""

from __future__ import annotations

import os

import pytest
import trio.testing

RAY_SUITE = "CORRAL_RAY_SUITE"
"""Set (to 1) in the pytest process ``tests/test_ray_suite.py`` starts for the Ray tests."""
RAY_SUITE_TEST = "tests/test_ray_suite.py::test_the_ray_tests_pass_in_a_process_of_their_own"


@pytest.fixture
def autojump_clock() -> trio.testing.MockClock:
    """A clock that jumps to the next deadline as soon as every task is blocked."""
    return trio.testing.MockClock(autojump_threshold=0)


from tests.raycluster import ray_cluster as ray_cluster  # noqa: E402  (a session-scoped fixture)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark every test on the shared Ray cluster ``ray``; where the run also holds the Ray suite's
    runner (a whole-suite run), leave them to it. A Ray cluster's processes are descendants of
    the process that starts it, and the other tests of that worker check that no stray
    descendant of theirs is left: the Ray tests run in a pytest process of their own."""
    for item in items:
        if "ray_cluster" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.ray)
    if os.environ.get(RAY_SUITE) == "1" or not any(i.nodeid == RAY_SUITE_TEST for i in items):
        return
    ray = [item for item in items if item.get_closest_marker("ray") is not None]
    if ray:
        config.hook.pytest_deselected(items=ray)
        items[:] = [item for item in items if item.get_closest_marker("ray") is None]
