"""The usage summary of a whole state directory, read from its session directories.

Used by the daemon (``usage.summary``, in a worker thread) and by ``corral usage`` when no
daemon runs; both read the same files (each session's ``meta.json`` and, through the usage
index, its ``events.jsonl``), so closed sessions count as much as open ones. Blocking.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from pathlib import Path

from actors.native.daemon.config import PRICES_FILE, load_prices, user_prices_path
from actors.session.meta import SessionMeta, list_sessions
from actors.usage.index import IndexedUsage, load_usage
from actors.usage.summary import UNKNOWN, SessionUsage, parse_by, parse_since, summarise
from protocol.messages import UsageSummary, UsageSummaryResult
from protocol.price import Price

__all__ = ["local_summary", "summarise_state"]


def summarise_state(state_root: Path, prices: Mapping[str, Price], *, since: str | None,
                    by: str | None, now: float) -> UsageSummaryResult:
    """``usage.summary`` over ``state_root/sessions``. ``BadRequest`` for a bad ``since`` or
    ``by`` (checked before any file is read). A session whose log cannot be read is left out;
    one whose ``meta.json`` cannot be read counts under harness ``unknown``."""
    start = parse_since(since, now)
    grouping = parse_by(by)
    return summarise(_sessions(state_root / "sessions"), prices, since=start, by=grouping)


def local_summary(state_root: Path, request: UsageSummary) -> UsageSummaryResult:
    """``corral usage`` with no daemon running: ``request`` answered here, at the price tables
    on disk now (the shipped one and the user's ``prices.toml``; a bad entry is left out)."""
    prices, _ = load_prices((PRICES_FILE, user_prices_path()))
    return summarise_state(state_root, prices, since=request.since, by=request.by, now=time.time())


def _sessions(root: Path) -> Iterator[SessionUsage]:
    for directory, meta in list_sessions(root):
        try:
            usage: IndexedUsage = load_usage(directory)
        except OSError:
            continue
        if isinstance(meta, SessionMeta):
            yield SessionUsage(meta.id, meta.harness, meta.model, usage)
        else:
            yield SessionUsage(directory.name, UNKNOWN, None, usage)
