"""The report the model reads: severity filter, 1-based character columns, the block and its note."""

from __future__ import annotations

import msgspec

from actors.lsp.messages import Diagnostic, Position, Range
from actors.lsp.report import DiagnosticLine, DiagnosticsReport, ServerStatus, lines_of


def diag(line: int, character: int, message: str, severity: int | None = 1,
         code: int | str | None = "E1", source: str | None = "src") -> Diagnostic:
    at = Position(line=line, character=character)
    return Diagnostic(range=Range(start=at, end=at), message=message, severity=severity,
                      code=code, source=source)


def test_only_errors_and_warnings_are_kept_and_sorted_by_position() -> None:
    items = [diag(2, 0, "w", severity=2), diag(0, 4, "hint", severity=4), diag(0, 1, "info", severity=3),
             diag(0, 0, "no severity reads as error", severity=None, code=None, source=None)]
    lines = lines_of("a.py", items, "abcdef\nx\ny\n")
    assert [d.render() for d in lines] == [
        "a.py:1:1: error [] no severity reads as error",
        "a.py:3:1: warning [src E1] w",
    ]


def test_columns_count_characters_not_utf16_units() -> None:
    text = 'print("😀é", undefined)\r\nnext'
    # "undefined" starts at character 12, UTF-16 unit 13 (the emoji is a surrogate pair)
    (line,) = lines_of("a.py", [diag(0, 13, "undefined")], text)
    assert (line.line, line.column) == (1, 13)
    (line,) = lines_of("a.py", [diag(1, 2, "x")], text)
    assert (line.line, line.column) == (2, 3)


def test_multi_line_messages_become_one_line_and_numeric_codes_strings() -> None:
    (line,) = lines_of("p/a.py", [diag(0, 0, "first\n  second", code=2304, source="ts")], "x")
    assert line.render() == "p/a.py:1:1: error [ts 2304] first second"


def test_the_text_block_and_the_timeout_note() -> None:
    line = DiagnosticLine(path="a.py", line=1, column=7, severity="error", source="Ruff",
                          code="F821", message="Undefined name `x`")
    ok = ServerStatus(server="ruff", state="ok")
    late = ServerStatus(server="pyright", state="timeout")
    report = DiagnosticsReport(path="a.py", diagnostics=[line], servers=[ok], timeout=1.5)
    assert report.text() == "Diagnostics:\na.py:1:7: error [Ruff F821] Undefined name `x`"
    report = DiagnosticsReport(path="a.py", diagnostics=[line], servers=[ok, late], timeout=1.5)
    assert report.text().splitlines()[-1] == "(no diagnostics from pyright within 1.5 s)"
    assert report.timed_out == ["pyright"]
    report = DiagnosticsReport(path="a.py", servers=[late], timeout=1.5)
    assert report.text() == "Diagnostics: (no diagnostics from pyright within 1.5 s)"
    assert DiagnosticsReport(path="a.py", servers=[ok]).text() == ""
    assert DiagnosticsReport(path="a.md").text() == ""


def test_a_report_round_trips_through_msgpack_for_the_worker() -> None:
    line = DiagnosticLine(path="a.py", line=1, column=1, severity="warning", message="m")
    report = DiagnosticsReport(path="a.py", diagnostics=[line],
                               servers=[ServerStatus(server="ruff", state="ok")], timeout=1.5)
    data = msgspec.msgpack.encode(report)
    assert msgspec.msgpack.decode(data, type=DiagnosticsReport) == report
