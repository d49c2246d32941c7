"""Harness drivers built on first use (``actors.session.drivers``)."""

from __future__ import annotations

import threading
from typing import Any

from actors.fake import FakeDriver
from actors.session.drivers import LazyDrivers, driver_of, load_all


def _counting(made: list[str]) -> dict[str, Any]:
    def factory(name: str) -> Any:
        def make() -> FakeDriver:
            made.append(f"{name}@{threading.current_thread().name}")
            return FakeDriver()
        return make
    return {"a": factory("a"), "b": factory("b")}


async def test_a_driver_is_built_once_on_first_use_and_off_the_event_loop() -> None:
    made: list[str] = []
    drivers = LazyDrivers(_counting(made))
    assert sorted(drivers) == ["a", "b"] and len(drivers) == 2 and made == []  # names cost nothing
    first = await driver_of(drivers, "a")
    assert isinstance(first, FakeDriver) and len(made) == 1
    assert made[0].split("@")[1] != threading.current_thread().name  # built in a worker thread
    assert await driver_of(drivers, "a") is first and drivers["a"] is first and len(made) == 1
    assert drivers.built("a") and not drivers.built("b")
    assert await driver_of(drivers, "nope") is None and drivers.get("nope") is None


async def test_load_all_builds_the_rest_and_plain_mappings_still_work() -> None:
    made: list[str] = []
    drivers = LazyDrivers(_counting(made))
    drivers["b"]  # a plain look-up builds inline
    await load_all(drivers)
    assert sorted(m.split("@")[0] for m in made) == ["a", "b"] and all(drivers.built(n) for n in drivers)
    plain = {"fake": FakeDriver()}
    assert await driver_of(plain, "fake") is plain["fake"]
    await load_all(plain)  # nothing to build
