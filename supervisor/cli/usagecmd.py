"""``corral usage``: tokens, turns, errors and cost of every session, as a table or ``--json``.

With a daemon running on the state directory the figures come from it (``usage.summary``), so
they are priced with the table the daemon loaded; with none, the application's ``offline``
function reads the state directory itself (with the price table as it is on disk now). Both
read the same logs, so either way the figures are the same.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path

import msgspec
import trio

from protocol.errors import DaemonNotRunning, ProtocolError
from protocol.messages import USAGE_GROUPINGS, UsageFigures, UsageSummary, UsageSummaryResult

from supervisor.statedir import resolve_state_dir

__all__ = ["HELP", "Offline", "add_arguments", "show"]

HELP = ("Tokens, turns, errors and cost of every session, closed ones too (works without a "
        "daemon).")

Offline = Callable[[Path, UsageSummary], UsageSummaryResult]
"""The summary of a state directory read in this process (when no daemon runs there)."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``--since``, ``--by`` and ``--json``."""
    parser.add_argument("--since", metavar="WHEN",
                        help="only turns from then on: 7d, 12h, 30m ago, or a UTC date or time "
                             "(2026-12-01)")
    parser.add_argument("--by", choices=USAGE_GROUPINGS,
                        help="one row per harness, model, session or (UTC) day")
    parser.add_argument("--json", action="store_true",
                        help="print {totals, groups} as usage.summary answers it")


def show(args: argparse.Namespace, offline: Offline) -> None:
    """Print the summary ``args`` ask for, from the daemon or else from ``offline``."""
    root = resolve_state_dir(getattr(args, "state_dir", None))
    request = UsageSummary(id=0, since=args.since, by=args.by)
    summary = trio.run(_ask, root, request) or offline(root, request)
    if args.json:
        print(json.dumps(msgspec.to_builtins(summary)))
    else:
        _table(summary, args.by)


async def _ask(root: Path, request: UsageSummary) -> UsageSummaryResult | None:
    """The daemon's answer; None when no daemon runs (or it went away before answering)."""
    from supervisor.client import open_client  # only for a command that talks to a daemon

    try:
        async with open_client(root, name="corral-usage") as client:
            result = await client.request(request)
    except DaemonNotRunning:
        return None
    if not isinstance(result, UsageSummaryResult):
        raise ProtocolError(f"usage.summary answered a {type(result).__name__}")
    return result


def _table(summary: UsageSummaryResult, by: str | None) -> None:
    """One right-aligned row per group and a ``total`` row; dollars to a hundredth of a cent."""
    rows = [[(by or "").upper(), "TURNS", "ERRORS", "INPUT", "OUTPUT", "CACHE READ",
             "CACHE WRITE", "COST", "ESTIMATED", "UNPRICED"]]
    rows += [_row(group.key, group) for group in summary.groups]
    rows.append(_row("total", summary.totals))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        cells = [row[0].ljust(widths[0])]
        cells += [cell.rjust(width) for cell, width in zip(row[1:], widths[1:], strict=True)]
        print("  ".join(cells).rstrip())


def _row(key: str, figures: UsageFigures) -> list[str]:
    return [key, str(figures.turns), str(figures.errors), f"{figures.input_tokens:,}",
            f"{figures.output_tokens:,}", f"{figures.cache_read_tokens:,}",
            f"{figures.cache_write_tokens:,}", f"${figures.cost_usd:.4f}",
            f"${figures.estimated_cost_usd:.4f}", str(figures.unpriced_turns)]
