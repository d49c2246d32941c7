"""Usage errors of the command line: one line on stderr, exit code 2, never a traceback.

argparse looks each of its messages up with ``gettext`` every time it uses one, and each lookup
checks the disk for a catalogue in every language of the locale: ~100 lookups and ~400 ``stat``
calls to build corral's parser, which every command (and the daemon's start) pays. A message's
translation cannot change within a process, so they are looked up once each (same texts).
"""

from __future__ import annotations

import argparse
import functools
from typing import NoReturn

__all__ = ["Parser", "usage_error"]

argparse._ = functools.cache(argparse._)  # type: ignore[attr-defined]
argparse.ngettext = functools.cache(argparse.ngettext)  # type: ignore[attr-defined]


class Parser(argparse.ArgumentParser):
    """Usage errors are one line on stderr and exit code 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see `{self.prog} --help`)\n")


def usage_error(message: str) -> NoReturn:
    """A usage error found after parsing (options that need each other): as the parser's own."""
    Parser(prog="corral").error(message)
