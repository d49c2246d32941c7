"""``corral --version`` and ``corral version [--json]``: which corral runs, on what.

``--version`` prints ``corral VERSION`` alone on a line. ``version`` lists corral, Python, trio
and the distributions the application names (``DaemonEntry.components``: google-adk, mcp), one
per line; ``--json`` prints them as one object of version strings. corral's version is the
running code's ``supervisor.__version__`` (the wheel's version is read from it); the others come
from the installed distributions' metadata, so no library is imported to ask it.
"""

from __future__ import annotations

import argparse
import json
import platform
from collections.abc import Sequence

from supervisor import __version__

__all__ = ["MISSING", "add_version_flag", "show", "versions"]

MISSING = "not installed"
"""The version of a distribution that is not installed."""


def add_version_flag(parser: argparse.ArgumentParser) -> None:
    """``--version`` on the top-level parser."""
    parser.add_argument("--version", action="version", version=f"corral {__version__}",
                        help="print corral's version and exit")


def versions(components: Sequence[str] = ()) -> dict[str, str]:
    """corral, python, trio and each of ``components`` (distribution names) → version."""
    from importlib import metadata  # here: every other command would pay for scanning it in

    found = {"corral": __version__, "python": platform.python_version()}
    for name in ("trio", *components):
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = MISSING
    return found


def show(args: argparse.Namespace) -> None:
    """``corral version``: a name and version a line, or ``--json``."""
    found = versions(args.daemon_entry.components)
    if args.json:
        print(json.dumps(found))
        return
    width = max(map(len, found))
    for name, version in found.items():
        print(f"{name:<{width}}  {version}")
