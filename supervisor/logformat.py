"""How corral's processes log: a record is one line, and tracebacks are for debugging.

The daemon (``daemon.log``), the native workers (their stderr, which the daemon logs line by
line) and ``corral run`` put ``handler`` on their root logger. By default:

* a record is one line: an exception it carries becomes ``(Type: message)`` at its end, and a
  message's own line breaks become spaces;
* the libraries under ``THIRD_PARTY`` (ADK, google-genai, the OpenAI and Anthropic SDKs, httpx,
  httpcore) say nothing that carries a traceback: those records re-tell a failure corral reports
  itself, with its stable code (ADK logs every failed model call at ERROR with the whole chain,
  about 300 lines).

``CORRAL_DEBUG=1`` (``corral --debug`` sets it, and the daemon's children inherit it) brings
both back: full tracebacks, every library record.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping

__all__ = ["DEBUG_ENV", "THIRD_PARTY", "debugging", "handler"]

DEBUG_ENV = "CORRAL_DEBUG"
"""Set (to anything but ``""`` or ``0``): tracebacks everywhere (``corral --debug``)."""

THIRD_PARTY: frozenset[str] = frozenset({
    "google_adk", "google.adk", "google.genai", "google_genai", "openai", "anthropic",
    "httpx", "httpcore", "httpx2", "httpcore2",
})
"""Top-level logger names (or ``google.adk``-style pairs) whose tracebacks are dropped."""


def debugging(environ: Mapping[str, str] | None = None) -> bool:
    """Whether ``CORRAL_DEBUG`` asks for tracebacks (in ``environ``, else this process's)."""
    value = (os.environ if environ is None else environ).get(DEBUG_ENV, "")
    return value not in ("", "0")


def handler(base: logging.Handler, fmt: str, *, debug: bool | None = None) -> logging.Handler:
    """``base`` with corral's format ``fmt`` and rules (see the module docstring); ``debug``
    defaults to ``debugging()``."""
    debug = debugging() if debug is None else debug
    base.setFormatter(logging.Formatter(fmt) if debug else _OneLine(fmt))
    if not debug:
        base.addFilter(_no_library_tracebacks)
    return base


class _OneLine(logging.Formatter):
    """Each record on one line, its exception (if any) as ``(Type: message)``."""

    def format(self, record: logging.LogRecord) -> str:
        message = record.getMessage()
        if record.exc_info and record.exc_info[1] is not None:
            exc = record.exc_info[1]
            message = f"{message} ({type(exc).__name__}: {exc})"
        flat = logging.makeLogRecord(record.__dict__)  # other handlers keep the original
        flat.msg, flat.args = " ".join(message.split()), None
        flat.exc_info = flat.exc_text = flat.stack_info = None
        return super().format(flat)


def _no_library_tracebacks(record: logging.LogRecord) -> bool:
    if not (record.exc_info or record.stack_info):
        return True
    first, _, rest = record.name.partition(".")
    return first not in THIRD_PARTY and f"{first}.{rest.partition('.')[0]}" not in THIRD_PARTY
