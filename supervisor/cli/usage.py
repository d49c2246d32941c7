"""Usage errors of the command line: one line on stderr, exit code 2, never a traceback."""

from __future__ import annotations

import argparse
from typing import NoReturn

__all__ = ["Parser", "usage_error"]


class Parser(argparse.ArgumentParser):
    """Usage errors are one line on stderr and exit code 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see `{self.prog} --help`)\n")


def usage_error(message: str) -> NoReturn:
    """A usage error found after parsing (options that need each other): as the parser's own."""
    Parser(prog="corral").error(message)
