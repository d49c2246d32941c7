"""``corral skills [--cwd DIR] [--json]``: the skills a native session in DIR would see.

Runs the worker's own discovery (``actors.native.context.discover_skills``) in this process, with
the ``[native]`` settings of the configuration file and this process's ``HOME`` and
``CODEX_HOME``; no daemon is needed and nothing is run. Importing this module is cheap (the
discovery code is imported when the command runs). Every record is listed with its
provenance (``host:scope``), whether the model may use it (``usable``: trusted and not
manual-only) and the name the model calls it by (the qualified ``host:scope:name`` when the name
is ambiguous). Warnings go to stderr as ``warning: PATH: CODE: MESSAGE`` (``--json`` puts them
in the document instead). Exit status 0, even with warnings.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

import msgspec

from protocol.native_context import ContextSettings

if TYPE_CHECKING:
    from actors.native.context import Catalog

__all__ = ["HELP", "add_arguments", "cwd_of", "report", "run"]

HELP = "List the skills a native session would see, with provenance and warnings (no daemon)."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``--cwd``, ``--json`` and ``--config``."""
    parser.add_argument("--cwd", metavar="DIR", help="the session's directory (default: here)")
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    parser.add_argument("--config", metavar="FILE", help="configuration file")


def report(cwd: Path, settings: ContextSettings, environ: Mapping[str, str]) -> dict[str, Any]:
    """The skills and warnings of a session in ``cwd``, as plain data."""
    # Imported here: the context package brings the coding tools, which the daemon (that
    # imports this module for its command line) must not load.
    from actors.native.context import discover_skills, repo_root

    home = Path(environ["HOME"]) if environ.get("HOME") else None
    root = repo_root(cwd)
    catalog = discover_skills(settings, home=home, repo_root=root, environ=environ)
    skills = [{**msgspec.to_builtins(r), "qualified": r.qualified, "use_as": _use_as(catalog, r.name, r.qualified)}
              for r in catalog.records]
    return {"cwd": str(cwd), "repo_root": str(root), "skills": skills,
            "warnings": [msgspec.to_builtins(w) for w in catalog.warnings]}


def run(cwd: Path, settings: ContextSettings, environ: Mapping[str, str], *, as_json: bool,
        out: TextIO, err: TextIO) -> int:
    """Print the report (see the module docstring)."""
    data = report(cwd, settings, environ)
    if as_json:
        import json  # with the command: the daemon imports this module for its command line

        out.write(json.dumps(data, indent=2) + "\n")
        return 0
    for warning in data["warnings"]:
        err.write(f"warning: {warning['path']}: {warning['code']}: {warning['message']}\n")
    if not data["skills"]:
        out.write("no skills\n")
        return 0
    rows = [["NAME", "SOURCE", "USABLE", "DESCRIPTION"]]
    rows += [[s["use_as"], f"{s['host']}:{s['scope']}", "yes" if s["invocable"] else
              ("no (untrusted)" if not s["trusted"] else "no (manual)"),
              " ".join(s["description"].split())[:70]] for s in data["skills"]]
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        out.write("  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() + "\n")
    return 0


def _use_as(catalog: Catalog, name: str, qualified: str) -> str:
    same = {r.digest for r in catalog.records if r.name == name}
    return name if len(same) == 1 else qualified


def cwd_of(args: argparse.Namespace) -> Path:
    """``--cwd`` (or the current directory), absolute and real."""
    return Path(os.path.realpath(args.cwd or os.getcwd()))
