"""``corral usage``: tokens, turns, errors and cost of every session, as a table or ``--json``.

With a daemon running on the state directory the figures come from it (``usage.summary``), so
they are priced with the table the daemon loaded; with none the command reads the state
directory itself, with the price table as it is on disk now. Both read the same logs and keep
the same index beside them (``actors.usage.index``), so either way the answer is the same.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import msgspec
import trio

from actors.native.daemon.config import PRICES_FILE, load_prices, user_prices_path
from actors.usage.report import summarise_state
from protocol.errors import DaemonNotRunning, ProtocolError
from protocol.messages import UsageFigures, UsageSummary, UsageSummaryResult
from supervisor.client import open_client
from supervisor.statedir import resolve_state_dir

__all__ = ["main"]

def main(args: argparse.Namespace) -> None:
    """Print the summary ``args`` ask for (``cliargs`` declares them)."""
    root = resolve_state_dir(getattr(args, "state_dir", None))
    request = UsageSummary(id=0, since=args.since, by=args.by)

    async def ask() -> UsageSummaryResult | None:
        try:
            async with open_client(root, name="corral-usage") as client:
                result = await client.request(request)
        except DaemonNotRunning:
            return None
        if not isinstance(result, UsageSummaryResult):
            raise ProtocolError(f"usage.summary answered a {type(result).__name__}")
        return result

    summary = trio.run(ask)
    if summary is None:
        prices, warnings = load_prices((PRICES_FILE, user_prices_path()))
        for warning in warnings:
            print(f"corral: {warning}", file=sys.stderr)
        summary = summarise_state(root, prices, since=args.since, by=args.by, now=time.time())
    if args.json:
        print(json.dumps(msgspec.to_builtins(summary)))
    else:
        _table(summary, args.by)


def _table(summary: UsageSummaryResult, by: str | None) -> None:
    rows = [[(by or "").upper() or "", "TURNS", "ERRORS", "INPUT", "OUTPUT", "CACHE READ",
             "CACHE WRITE", "COST", "ESTIMATED", "UNPRICED"]]
    rows += [_row(group.key, group) for group in summary.groups]
    rows.append(_row("total", summary.totals))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        cells = [row[0].ljust(widths[0])] + [cell.rjust(width) for cell, width in zip(row[1:], widths[1:])]
        print("  ".join(cells).rstrip())


def _row(key: str, figures: UsageFigures) -> list[str]:
    return [key, str(figures.turns), str(figures.errors), f"{figures.input_tokens:,}",
            f"{figures.output_tokens:,}", f"{figures.cache_read_tokens:,}",
            f"{figures.cache_write_tokens:,}", f"${figures.cost_usd:.4f}",
            f"${figures.estimated_cost_usd:.4f}", str(figures.unpriced_turns)]
