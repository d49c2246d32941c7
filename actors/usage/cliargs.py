"""The arguments of ``corral usage``, apart from its handler (``cli``) so that building the
command line imports neither the client library nor the state directory's readers."""

from __future__ import annotations

import argparse

from actors.usage.summary import GROUPINGS

__all__ = ["HELP", "add_arguments"]

HELP = ("Tokens, turns, errors and cost of every session, closed ones too (works without a "
        "daemon).")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``--since``, ``--by`` and ``--json``."""
    parser.add_argument("--since", metavar="WHEN",
                        help="only turns from then on: 7d, 12h, 30m ago, or a UTC date or time "
                             "(2026-12-01)")
    parser.add_argument("--by", choices=GROUPINGS, help="one row per harness, model, session or "
                        "(UTC) day")
    parser.add_argument("--json", action="store_true",
                        help="print {totals, groups} as usage.summary answers it")
