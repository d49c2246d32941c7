"""A session's instruction context: what is active now, and the prompt it makes. Pure but for
the directory reads ``Discovery`` does the first time a touched path needs them.

``Instructions`` starts from ``Discovery.snapshot``; ``touch(path)`` (a path a tool worked on)
activates nested directory files and matching conditional rules, and says whether anything
changed. ``assemble`` builds the text for the system instruction:

* sources sort least- to most-specific (``Source.rank``);
* parts (files and their imports) are de-duplicated by real path and by content hash: the first
  occurrence in that order is kept, so the same file imported twice, or a ``CLAUDE.md`` that is
  a symlink to (or a copy of) ``AGENTS.md``, appears once;
* if the result exceeds ``max_bytes``, whole sources are evicted least-specific first until it
  fits, each with a ``context.budget_evicted`` warning (so the instructions closest to the
  work survive);
* the active sources' tool policies make the ``PolicySet`` (evicted ones still count: dropping
  text to save room must not lift a restriction).

Each assembly's warnings are new ones only: a warning already reported is not repeated.
"""

from __future__ import annotations

from pathlib import Path

import msgspec

from .discover import Discovery, Source, matches
from .documents import ContextWarning
from .policy import PolicySet

__all__ = ["Assembled", "Instructions"]


class Assembled(msgspec.Struct, frozen=True, kw_only=True):
    """The instruction text, the files in it (most specific last), and the policies."""

    text: str
    included: tuple[str, ...]
    evicted: tuple[str, ...]


class Instructions:
    """See the module docstring."""

    def __init__(self, discovery: Discovery) -> None:
        self.discovery = discovery
        active, self._waiting = discovery.snapshot()
        self._active: dict[str, Source] = {s.path: s for s in active}
        self._reported: set[ContextWarning] = set()
        self._assembled: Assembled | None = None

    @property
    def active(self) -> list[Source]:
        """The active sources, least specific first."""
        return sorted(self._active.values(), key=lambda s: s.rank)

    @property
    def policy(self) -> PolicySet:
        """The tool policies of every active source."""
        return PolicySet(s.policy for s in self.active)

    def touch(self, path: str) -> bool:
        """A tool worked on ``path`` (relative to the cwd); ``True`` if that activated files."""
        touched = Path(path)
        added = [s for s in self.discovery.nested(touched) if s.path not in self._active]
        relative = self.discovery.relative(touched)
        woken = [s for s in self._waiting if matches(s.globs, relative)]
        self._waiting = [s for s in self._waiting if s not in woken]
        for source in (*added, *woken):
            self._active[source.path] = source
        if added or woken:
            self._assembled = None
        return bool(added or woken)

    def assemble(self) -> tuple[Assembled, list[ContextWarning]]:
        """The prompt text now, and the warnings not reported before."""
        if self._assembled is None:
            self._assembled = self._build()
        fresh = [w for w in self.discovery.warnings if w not in self._reported]
        self._reported.update(fresh)
        return self._assembled, fresh

    def _build(self) -> Assembled:
        sources = self.active
        seen_real: set[str] = set()
        seen_digest: set[str] = set()
        blocks: list[tuple[Source, str]] = []
        for source in sources:
            texts: list[str] = []
            for part in source.document.parts:
                if part.real in seen_real or part.digest in seen_digest:
                    continue
                seen_real.add(part.real)
                seen_digest.add(part.digest)
                if part.text:
                    texts.append(part.text)
            if texts:
                blocks.append((source, "\n\n".join(texts)))
        budget = self.discovery.settings.max_bytes
        sizes = [len(_block(s, t).encode()) for s, t in blocks]
        evicted: list[str] = []
        while blocks and sum(sizes) > budget:
            source, _ = blocks.pop(0)
            size = sizes.pop(0)
            evicted.append(source.label)
            self.discovery.warnings.append(ContextWarning(
                code="context.budget_evicted", path=source.path,
                message=f"{source.label} ({size} bytes) left out: the instructions exceed "
                        f"their budget of {budget} bytes (least specific files go first)"))
        return Assembled(text="\n\n".join(_block(s, t) for s, t in blocks),
                         included=tuple(s.label for s, _ in blocks), evicted=tuple(evicted))


def _block(source: Source, text: str) -> str:
    return f"# Instructions from {source.label}\n\n{text}"
