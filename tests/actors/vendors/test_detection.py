"""The shared detection cache and detector, on virtual time with probes that spawn nothing."""

from __future__ import annotations

import trio
import trio.testing

from actors.vendors.detection import (
    DetectionCache,
    Detector,
    cache_key,
    judge_version,
    prewarm,
    probe_cli,
    with_models,
)
from actors.vendors import probe as probe_module
from actors.vendors.probe import ProbeFailed
from protocol.models import Detection, Features


class CountingProbe:
    """A probe that counts its calls, takes ``delay`` virtual seconds and finds ``/bin/x``."""

    def __init__(self, delay: float = 1.0) -> None:
        self.calls: list[tuple[str | None, str | None]] = []
        self.delay = delay

    async def __call__(self, binary: str | None, env: object) -> Detection:
        self.calls.append((binary, getattr(env, "get")("PATH")))
        await trio.sleep(self.delay)  # the probe's own (virtual) duration, not a wait for a condition
        return Detection(harness="x", available=True, path="/bin/x", version=str(len(self.calls)))


async def test_a_verdict_is_reused_for_exactly_the_ttl(autojump_clock: trio.testing.MockClock) -> None:
    probe = CountingProbe(delay=1.0)
    detector = Detector("x", probe, env={"PATH": "/bin"}, cache=DetectionCache(ttl=60.0))
    first = await detector.detect()
    assert trio.current_time() == 1.0
    await trio.sleep(59.9)  # virtual time: the verdict is 60 s old minus a tick
    assert await detector.detect() is first and len(probe.calls) == 1
    await trio.sleep(0.1)
    second = await detector.detect()
    assert second.version == "2" and len(probe.calls) == 2


async def test_concurrent_callers_share_one_probe(autojump_clock: trio.testing.MockClock) -> None:
    probe = CountingProbe(delay=5.0)
    detector = Detector("x", probe, env={"PATH": "/bin"})
    seen: list[Detection] = []

    async def ask() -> None:
        seen.append(await detector.detect())

    async with trio.open_nursery() as nursery:
        for _ in range(4):
            nursery.start_soon(ask)
    assert len(probe.calls) == 1 and all(found is seen[0] for found in seen)
    assert trio.current_time() == 5.0


async def test_one_cache_keys_on_harness_binary_and_the_env_that_matters(
        autojump_clock: trio.testing.MockClock) -> None:
    cache = DetectionCache()
    probe = CountingProbe()
    base = {"PATH": "/bin", "HOME": "/h", "NOISE": "1"}
    await Detector("x", probe, env=base, env_keys=["HOME"], cache=cache).detect()
    # Another detector of the same harness, binary and relevant env reads the same verdict ...
    await Detector("x", probe, env={**base, "NOISE": "2"}, env_keys=["HOME"], cache=cache).detect()
    assert len(probe.calls) == 1
    # ... but a different PATH, HOME, binary or harness is a different verdict.
    await Detector("x", probe, env={**base, "PATH": "/opt"}, env_keys=["HOME"], cache=cache).detect()
    await Detector("x", probe, env={**base, "HOME": "/g"}, env_keys=["HOME"], cache=cache).detect()
    await Detector("x", probe, binary="/opt/x", env=base, env_keys=["HOME"], cache=cache).detect()
    await Detector("y", probe, env=base, env_keys=["HOME"], cache=cache).detect()
    assert probe.calls == [(None, "/bin"), (None, "/opt"), (None, "/bin"), ("/opt/x", "/bin"),
                           (None, "/bin")]


def test_the_cache_key_holds_no_env_value() -> None:
    key = cache_key("claude", None, {"PATH": "/bin", "ANTHROPIC_API_KEY": "sk-secret"},
                    ["ANTHROPIC_API_KEY"])
    assert key[:2] == ("claude", None) and "sk-secret" not in repr(key)


async def test_invalidate_and_the_binary_of_the_last_verdict(autojump_clock: trio.testing.MockClock) -> None:
    probe = CountingProbe()
    cache = DetectionCache()
    detector = Detector("x", probe, env={"PATH": "/bin"}, cache=cache)
    assert detector.binary is None
    await detector.detect()
    assert detector.binary == "/bin/x"
    await trio.sleep(DetectionCache().ttl + 1)  # stale, but still what a launch defaults to
    assert detector.binary == "/bin/x"
    detector.invalidate()
    assert detector.binary is None
    await detector.detect()
    assert len(probe.calls) == 2


async def test_a_cancelled_probe_caches_nothing(autojump_clock: trio.testing.MockClock) -> None:
    probe = CountingProbe(delay=10.0)
    detector = Detector("x", probe, env={"PATH": "/bin"})
    with trio.move_on_after(1.0):
        await detector.detect()
    assert detector.binary is None
    assert (await detector.detect()).version == "2"


async def test_models_a_session_reported_join_an_available_verdict(
        autojump_clock: trio.testing.MockClock) -> None:
    detector = Detector("x", CountingProbe(), env={"PATH": "/bin"})
    detector.models = ["p/m"]
    assert (await detector.detect()).features.models == ["p/m"]


async def test_a_slow_models_probe_runs_only_when_asked_and_its_verdict_serves_while_fresh(
        autojump_clock: trio.testing.MockClock) -> None:
    plain, listing = CountingProbe(delay=1.0), CountingProbe(delay=10.0)
    cache = DetectionCache(ttl=60.0)
    detector = Detector("x", plain, env={"PATH": "/bin"}, cache=cache, models_probe=listing)
    assert (await detector.detect()).version == "1" and listing.calls == []
    assert trio.current_time() == 1.0  # harness.list did not wait for the models
    listed = await detector.detect(models=True)
    assert len(listing.calls) == 1 and trio.current_time() == 11.0
    assert await detector.detect() is listed and len(plain.calls) == 1  # the richer verdict, fresh
    await trio.sleep(60.0)  # both verdicts are stale now
    assert (await detector.detect()).version == "2" and len(listing.calls) == 1
    detector.invalidate()  # drops the models verdict too
    assert detector.binary is None


def test_judge_version_against_the_floor() -> None:
    base = Detection(harness="x", available=False, min_version="1.2.0")
    assert judge_version(base, "/x", "x 1.10.0").available
    old = judge_version(base, "/x", "x 1.1.9")
    assert (old.available, old.version, old.reason) == (False, "x 1.1.9", "x 1.1.9 is older than 1.2.0")
    slow = judge_version(base, "/x", ProbeFailed(reason="x --version did not answer within 1s", timed_out=True))
    assert (slow.available, slow.path, slow.reason) == (False, "/x", "x --version did not answer within 1s")
    assert "cannot read a version" in (judge_version(base, "/x", "nightly").reason or "")


def test_a_failed_models_probe_keeps_the_cli_available_and_says_why() -> None:
    found = Detection(harness="x", available=True, features=Features(models=["a"]))
    failed = with_models(found, ProbeFailed(reason="x models did not answer within 2s", timed_out=True))
    assert failed.available and failed.features.models == ["a"]
    assert failed.reason == "models not listed: x models did not answer within 2s"
    assert with_models(found, ["b", "c"]).features.models == ["b", "c"]


async def test_the_version_and_models_probes_run_at_once(autojump_clock: trio.testing.MockClock) -> None:
    base = Detection(harness="x", available=False, min_version="1.0.0")

    async def version(path: str) -> str:
        await trio.sleep(5)
        return "x 1.2.3"

    async def models(path: str) -> list[str]:
        await trio.sleep(4)
        return ["m"]

    found = await probe_cli(base, "/x", {}, name="x", version_timeout=9, version=version, models=models)
    assert (found.available, found.features.models, trio.current_time()) == (True, ["m"], 5.0)


async def test_an_unusable_cli_does_not_wait_for_its_models(autojump_clock: trio.testing.MockClock) -> None:
    base = Detection(harness="x", available=False, min_version="2.0.0")
    cancelled: list[bool] = []

    async def version(path: str) -> str:
        await trio.sleep(1)
        return "x 1.2.3"

    async def models(path: str) -> list[str]:
        try:
            await trio.sleep(100)
        except trio.Cancelled:
            cancelled.append(True)
            raise
        return ["m"]

    found = await probe_cli(base, "/x", {}, name="x", version_timeout=9, version=version, models=models)
    assert (found.available, found.reason, found.features.models) == (False, "x 1.2.3 is older than 2.0.0", [])
    assert trio.current_time() == 1.0 and cancelled == [True]
    missing = await probe_cli(base, None, {}, name="xx", version_timeout=9, version=version, models=models)
    assert (missing.available, missing.reason, trio.current_time()) == (False, "xx not found", 1.0)


async def test_prewarm_detects_once_after_its_delay_with_its_probes_in_the_background(
        autojump_clock: trio.testing.MockClock) -> None:
    background: list[bool] = []

    class Recording(CountingProbe):
        async def __call__(self, binary: str | None, env: object) -> Detection:
            background.append(probe_module._BACKGROUND.get())
            return await super().__call__(binary, env)

    probe = Recording(delay=1.0)
    detector = Detector("x", probe, env={"PATH": "/bin"}, cache=DetectionCache(ttl=300.0))
    async with trio.open_nursery() as nursery:
        await nursery.start(prewarm, detector.detect, 3.0)
        await trio.sleep(2.9)
        assert probe.calls == []
    assert trio.current_time() == 4.0  # probed at 3 s, for 1 s; then the child ended
    assert background == [True]
    await trio.sleep(10)  # a client's first harness.list, 14 s after the start, probes nothing
    assert (await detector.detect()).version == "1" and len(probe.calls) == 1
    assert trio.current_time() == 14.0
    await trio.sleep(300)  # stale: a client's own probe is not a background one
    await detector.detect()
    assert background == [True, False]
