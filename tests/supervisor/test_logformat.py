"""``supervisor.logformat``: one line a record; libraries' tracebacks dropped unless debugging."""

from __future__ import annotations

import io
import logging
from collections.abc import Iterator

import pytest

from supervisor import logformat


@pytest.fixture
def logged() -> Iterator[tuple[io.StringIO, io.StringIO]]:
    """Two handlers on the root logger: corral's default one, and the debugging one."""
    quiet, loud = io.StringIO(), io.StringIO()
    handlers = [logformat.handler(logging.StreamHandler(quiet), "%(name)s: %(message)s", debug=False),
                logformat.handler(logging.StreamHandler(loud), "%(name)s: %(message)s", debug=True)]
    root = logging.getLogger()
    for handler in handlers:
        root.addHandler(handler)
    try:
        yield quiet, loud
    finally:
        for handler in handlers:
            root.removeHandler(handler)


def _fail(logger: str, message: str) -> None:
    try:
        try:
            raise ConnectionRefusedError(111, "Connection refused")
        except OSError as exc:
            raise RuntimeError("the call failed") from exc
    except RuntimeError:
        logging.getLogger(logger).exception(message)


def test_our_exception_records_are_one_line_and_whole_when_debugging(
        logged: tuple[io.StringIO, io.StringIO]) -> None:
    quiet, loud = logged
    _fail("corral.test", "turn\nfailed")
    assert quiet.getvalue() == "corral.test: turn failed (RuntimeError: the call failed)\n"
    assert "Traceback" in loud.getvalue() and "ConnectionRefusedError" in loud.getvalue()


@pytest.mark.parametrize("name", ["google_adk.google.adk.workflow._node_runner", "google.adk.x",
                                  "httpx", "httpcore2.connection", "openai._base_client",
                                  "anthropic"])
def test_library_records_with_a_traceback_are_dropped_unless_debugging(
        logged: tuple[io.StringIO, io.StringIO], name: str) -> None:
    quiet, loud = logged
    _fail(name, "Node execution failed with exception")
    logging.getLogger(name).warning("a plain warning")
    assert quiet.getvalue() == f"{name}: a plain warning\n"
    assert "Traceback" in loud.getvalue() and loud.getvalue().endswith("a plain warning\n")


def test_the_debug_switch(monkeypatch: pytest.MonkeyPatch) -> None:
    assert [logformat.debugging({"CORRAL_DEBUG": v}) for v in ("", "0", "1", "yes")] == [
        False, False, True, True]
    assert not logformat.debugging({})
    monkeypatch.setenv("CORRAL_DEBUG", "1")
    assert logformat.debugging()
