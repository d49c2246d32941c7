"""Detection shared by every vendor: one TTL cache of verdicts, and the detector each driver holds.

A vendor's detection is a pure-ish ``probe(binary, env) -> Detection`` in its own ``detect``
module (find the binary, ``actors.vendors.probe`` for its version and models, the version floor,
the login state). What is the same for all of them lives here:

* ``DetectionCache``: the daemon's one cache of verdicts, keyed by ``(harness, binary, digest of
  the env that matters)``: the configured binary name or path, and a hash of the variables the
  vendor's detection reads (``PATH``, its config-home and key variables; hashed so the key holds
  no secret). A verdict is reused for ``ttl`` seconds of the trio clock; concurrent callers of
  one key share one probe. ``actors.harnesses`` builds one and gives it to every vendor driver, so
  ``harness.list`` and the availability check of ``session.create`` read the same verdicts.
* ``Detector``: what a driver holds: its probe, binary, env keys and the cache; the probe sees
  the daemon's environment with the env every child of the harness gets from the vendor and the
  configuration (``actors.vendors.options.configured_env``: the vendor's fixed variables, such
  as an ACP profile's, ``[harness.<name>] env``, and ``[harness.<name>] home`` in the vendor's
  home variables) laid over it by ``child_env``, exactly as the harness's session children
  get it, and the key
  covers every configured variable (a change of the configuration is a new verdict); ``detect()`` is
  the cached verdict, its models filled in from a live session when the CLI listed none
  (an ACP agent that needs a login to open a session outside one, an OpenCode whose
  ``opencode models`` failed); ``binary`` is the path the last verdict found (launches default to it).
* ``prewarm``: a temporary child of the daemon that, a few seconds after it is ready, detects
  every harness once with its probes at low CPU priority (``probe.in_background``), so the
  first ``harness.list`` answers from the cache instead of probing every CLI (~7 s).
"""

from __future__ import annotations

import hashlib
import os
import shutil
from collections.abc import Awaitable, Callable, Iterable, Mapping

import msgspec
import trio

from protocol.models import Detection
from supervisor.proc.identity import child_env

from .probe import ProbeFailed, in_background, parse_version, probe_version

__all__ = ["DEFAULT_TTL", "CacheKey", "DetectionCache", "Detector", "Probe", "cache_key", "find_binary",
           "judge_version", "prewarm", "probe_cli", "with_models"]

DEFAULT_TTL = 300.0
"""Seconds a verdict is reused: a probe spawns processes, and installs and logins are rare."""

CacheKey = tuple[str, str | None, str]
"""``(harness, configured binary or None, hex digest of the env that matters)``."""

Probe = Callable[[str | None, Mapping[str, str]], Awaitable[Detection]]
"""A vendor's uncached detection: ``probe(binary, env)``; never raises for a missing binary."""


async def prewarm(detect: Callable[[], Awaitable[object]], delay: float, *,
                  task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
    """A temporary child's start function: ready at once; ``delay`` seconds later, ``detect()``
    (every harness, into the daemon's cache) with its probes in the background; then it ends.
    Cancellation (the daemon stops) kills the probes and caches nothing of theirs."""
    task_status.started()
    await trio.sleep(delay)
    with in_background():
        await detect()


def cache_key(harness: str, binary: str | None, env: Mapping[str, str], keys: Iterable[str]) -> CacheKey:
    """The cache key of one detection: ``PATH`` and ``keys`` of ``env``, hashed."""
    digest = hashlib.sha256()
    for name in sorted({"PATH", *keys}):
        digest.update(f"{name}\0{env.get(name, '')}\0".encode("utf-8", "surrogateescape"))
    return harness, binary, digest.hexdigest()


async def probe_cli(base: Detection, path: str | None, env: Mapping[str, str], *, name: str,
                    version_timeout: float,
                    version: Callable[[str], Awaitable[str | ProbeFailed]] | None = None,
                    models: Callable[[str], Awaitable[list[str] | ProbeFailed]] | None = None,
                    ) -> Detection:
    """The usual detection of a CLI at ``path`` (``None``: ``name`` was not found): its version
    (``path --version``, or ``version(path)``) judged against the floor and, if it is usable,
    its models (``models(path)``, optional: see ``with_models``). Both probes run at once (a
    slow CLI pays its start-up once, not twice); the models of an unusable CLI are dropped.
    Cancellation kills the probes."""
    if path is None:
        return msgspec.structs.replace(base, reason=f"{name} not found")
    listed: list[list[str] | ProbeFailed] = []

    async def list_models(models: Callable[[str], Awaitable[list[str] | ProbeFailed]]) -> None:
        listed.append(await models(path))

    async with trio.open_nursery() as nursery:
        if models is not None:
            nursery.start_soon(list_models, models)
        found = await (version(path) if version is not None else
                       probe_version(path, env, timeout=version_timeout))
        verdict = judge_version(base, path, found)
        if not verdict.available:
            nursery.cancel_scope.cancel()
    return with_models(verdict, listed[0]) if verdict.available and listed else verdict


def find_binary(binary: str | None, default: str, env: Mapping[str, str]) -> str | None:
    """``binary`` (else ``default``) as an executable path: a path is taken as it is, a bare
    name is looked up on ``env``'s ``PATH``; ``None`` when there is no such executable."""
    name = os.path.expanduser(binary or default)
    if os.sep in name:
        return name if os.path.isfile(name) and os.access(name, os.X_OK) else None
    return shutil.which(name, path=env.get("PATH", ""))


def judge_version(base: Detection, path: str, version: str | ProbeFailed) -> Detection:
    """``base`` (harness, features, floor in ``min_version``, login) judged on a version probe:
    ``available`` with ``path`` and ``version``, or not, with the reason (a failed or timed-out
    probe, an unreadable version, a version below the floor)."""
    if isinstance(version, ProbeFailed):
        return msgspec.structs.replace(base, path=path, reason=version.reason)
    number = parse_version(version)
    if number is None:
        return msgspec.structs.replace(base, path=path, reason=f"cannot read a version from {version!r}")
    floor = parse_version(base.min_version) if base.min_version else None
    if floor is not None and number < floor:
        return msgspec.structs.replace(
            base, path=path, version=version, available=False,
            reason=f"{base.harness} {'.'.join(map(str, number))} is older than {base.min_version}")
    return msgspec.structs.replace(base, path=path, version=version, available=True, reason=None)


def with_models(verdict: Detection, models: list[str] | ProbeFailed) -> Detection:
    """``verdict`` with ``features.models`` from a models probe. The probe is optional: one that
    failed or timed out leaves the verdict as it was (an installed CLI stays available) and
    says why in ``reason``."""
    if isinstance(models, ProbeFailed):
        return msgspec.structs.replace(verdict, reason=f"models not listed: {models.reason}")
    features = msgspec.structs.replace(verdict.features, models=models)
    return msgspec.structs.replace(verdict, features=features)


class DetectionCache:
    """Verdicts by ``CacheKey``, each reused for ``ttl`` seconds (trio clock)."""

    def __init__(self, ttl: float = DEFAULT_TTL) -> None:
        self.ttl = ttl
        self._verdicts: dict[CacheKey, tuple[float, Detection]] = {}
        self._locks: dict[CacheKey, trio.Lock] = {}

    async def get(self, key: CacheKey, probe: Callable[[], Awaitable[Detection]]) -> Detection:
        """The fresh verdict for ``key``, or ``await probe()`` (stored). Concurrent callers of
        one key wait for the one probe. Cancellation: a cancelled probe stores nothing."""
        lock = self._locks.setdefault(key, trio.Lock())
        async with lock:
            found = self.peek(key)
            if found is not None:
                return found
            verdict = await probe()
            self._verdicts[key] = (trio.current_time() + self.ttl, verdict)
            return verdict

    def peek(self, key: CacheKey) -> Detection | None:
        """The verdict for ``key`` if it is still fresh, without probing."""
        entry = self._verdicts.get(key)
        if entry is None or trio.current_time() >= entry[0]:
            return None
        return entry[1]

    def last(self, key: CacheKey) -> Detection | None:
        """The latest verdict for ``key``, fresh or not (what a launch may default to)."""
        entry = self._verdicts.get(key)
        return entry[1] if entry is not None else None

    def invalidate(self, harness: str | None = None) -> None:
        """Forget the verdicts of ``harness`` (all when ``None``): after an install or a login."""
        for key in [k for k in self._verdicts if harness is None or k[0] == harness]:
            del self._verdicts[key]


class Detector:
    """One harness's detection through a ``DetectionCache`` (a private one if none is given).

    The probe sees the daemon's environment, read at each call, with ``overlay`` (the
    harness's ``configured_env``: its fixed env, ``[harness.<name>] env`` and ``home``) laid over it as on the harness's session children
    (``child_env``); or, if ``env`` is given (tests), exactly ``env``. ``env_keys`` are the
    variables, beside ``PATH`` and those of ``overlay``, that change the verdict.
    """

    def __init__(self, harness: str, probe: Probe, *, binary: str | None = None,
                 env: Mapping[str, str] | None = None, overlay: Mapping[str, str] | None = None,
                 env_keys: Iterable[str] = (), cache: DetectionCache | None = None,
                 models_probe: Probe | None = None) -> None:
        if env is not None and overlay:
            raise ValueError("a Detector takes a whole env or an overlay of the daemon's, not both")
        self.harness = harness
        self.models: list[str] = []
        """Models a live session reported (ACP, OpenCode); shown while the verdict is available
        and its own probe listed none."""
        self._probe = probe
        self._models_probe = models_probe
        """The probe that also lists models, for a CLI that is slow to list them (it has to
        open a session or load every provider): run only when asked (``detect(models=True)``)."""
        self._binary = binary
        self._env = env
        self._overlay = dict(overlay or {})
        self._env_keys = (*env_keys, *self._overlay)
        self._cache = cache if cache is not None else DetectionCache()

    @property
    def binary(self) -> str | None:
        """The executable the latest verdict found, if any."""
        key = self._key(self._environ())
        found = self._cache.last(key) or self._cache.last(_with_models(key))
        return found.path if found is not None else None

    def invalidate(self) -> None:
        """Forget this harness's verdicts (after an install, a login or a logout)."""
        self._cache.invalidate(self.harness)

    async def detect(self, *, models: bool = False) -> Detection:
        """The cached verdict, or a fresh probe (bounded by the probe's own timeouts).

        With a slow models probe, ``models`` runs it (its verdict is cached under a key of its
        own); without, a fresh verdict of it is still preferred to the plain one.
        Cancellation: cancelling the caller kills the probe's children; nothing is cached.
        """
        env = self._environ()
        key = self._key(env)
        listed = self._models_probe
        if listed is not None:
            models_key = _with_models(key)
            if models:
                return self._with_session_models(
                    await self._cache.get(models_key, lambda: listed(self._binary, env)))
            fresh = self._cache.peek(models_key)
            if fresh is not None:
                return self._with_session_models(fresh)
        return self._with_session_models(await self._cache.get(key, lambda: self._probe(self._binary, env)))

    def _with_session_models(self, verdict: Detection) -> Detection:
        if self.models and verdict.available and not verdict.features.models:
            # an available verdict's only reason is a failed models probe: the models are here now
            features = msgspec.structs.replace(verdict.features, models=list(self.models))
            return msgspec.structs.replace(verdict, features=features, reason=None)
        return verdict

    def _environ(self) -> Mapping[str, str]:
        return child_env(self._overlay, {}) if self._env is None else self._env

    def _key(self, env: Mapping[str, str]) -> CacheKey:
        return cache_key(self.harness, self._binary, env, self._env_keys)


def _with_models(key: CacheKey) -> CacheKey:
    """The key of the verdict a slow models probe gave (``invalidate`` of the harness drops it too)."""
    return key[0], key[1], f"{key[2]}+models"
