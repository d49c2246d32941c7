"""The harness drivers of the session table, each built on first use.

A driver's package brings its translator, launch builder and detection: tens of milliseconds of
imports for each of a dozen harnesses, which a daemon with no session (or sessions of one
harness) should not pay at start, nor a CLI command that only reads the configuration.
``LazyDrivers`` maps each harness name to a factory and builds the driver the first time it is
looked up; ``load`` and ``load_all`` build in a worker thread, so the event loop never waits on
those imports. A plain mapping of built drivers (tests) works wherever ``LazyDrivers`` does.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping

import trio

from actors.harness import Driver
from protocol.models import Detection

__all__ = ["LazyDrivers", "detect_all", "driver_of", "load_all"]


class LazyDrivers(Mapping[str, Driver]):
    """Drivers by harness name, each made by its factory on the first look-up (then kept)."""

    def __init__(self, factories: Mapping[str, Callable[[], Driver]]) -> None:
        self._factories = dict(factories)
        self._built: dict[str, Driver] = {}
        self._lock = threading.Lock()  # a look-up on the loop and a ``load`` in a thread

    def __getitem__(self, name: str) -> Driver:
        driver = self._built.get(name)
        if driver is not None:
            return driver
        factory = self._factories[name]  # KeyError for a harness we do not offer
        with self._lock:
            driver = self._built.get(name)
            if driver is None:
                driver = self._built[name] = factory()
        return driver

    def __iter__(self) -> Iterator[str]:
        return iter(self._factories)

    def __len__(self) -> int:
        return len(self._factories)

    def built(self, name: str) -> bool:
        """Whether ``name``'s driver exists already (a look-up then costs nothing)."""
        return name in self._built

    async def load(self, name: str) -> Driver | None:
        """``name``'s driver, built in a worker thread if it is not yet; ``None`` if unknown."""
        if name not in self._factories:
            return None
        if name in self._built:
            return self._built[name]
        return await trio.to_thread.run_sync(self.__getitem__, name)


async def driver_of(drivers: Mapping[str, Driver], name: str) -> Driver | None:
    """``drivers.get(name)``, built off the event loop when ``drivers`` is lazy."""
    if isinstance(drivers, LazyDrivers):
        return await drivers.load(name)
    return drivers.get(name)


async def load_all(drivers: Mapping[str, Driver]) -> None:
    """Build every driver not built yet (in one worker thread) before they are all used."""
    if isinstance(drivers, LazyDrivers) and not all(drivers.built(name) for name in drivers):
        await trio.to_thread.run_sync(lambda: [drivers[name] for name in drivers])


async def detect_all(drivers: Mapping[str, Driver], *, models: bool = False) -> list[Detection]:
    """Every harness's detection, probed at once (the vendor drivers cache their verdicts
    in the daemon's one detection cache, ``actors.vendors.detection``); ``models`` runs the
    slow models probes too."""
    found: dict[str, Detection] = {}
    await load_all(drivers)

    async def detect(name: str, driver: Driver) -> None:
        found[name] = await driver.detect(models=models)

    async with trio.open_nursery() as nursery:
        for name, driver in drivers.items():
            nursery.start_soon(detect, name, driver)
    return [found[name] for name in sorted(found)]
