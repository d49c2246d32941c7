"""docs/protocol.md and the client protocol's Structs name the same things.

The names come from the code through msgspec's type information (the tags of the unions in
``protocol/requests.py``, ``events.py`` and ``frames.py``, the fields of every Struct) and from
``ErrorCode``; the document's tables are read by heading. Each name of the code must be in its
table, and each table row must name something of the code, so a method, event kind, frame, field
or error code added, renamed or removed on either side fails here. The frames between the daemon
and its workers (``protocol/native.py``, ``forkserver.py``) are internal and not checked.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import msgspec
import pytest

from protocol.errors import ErrorCode
from protocol.events import Event
from protocol.frames import AnyFrame
from protocol.requests import ClientRequest
from protocol.results import RESULT_TYPES
from protocol.schema import client_protocol_schema

DOC = Path(__file__).resolve().parents[1] / "docs" / "protocol.md"

_TICKED = re.compile(r"`([^`]+)`")


# --- what the code declares ----------------------------------------------------------------


def tagged(union: Any) -> dict[str, msgspec.inspect.StructType]:
    """The Structs of a tagged union, by tag."""
    info = msgspec.inspect.type_info(union)
    assert isinstance(info, msgspec.inspect.UnionType)
    found = {}
    for member in info.types:
        assert isinstance(member, msgspec.inspect.StructType)
        assert isinstance(member.tag, str)
        found[member.tag] = member
    return found


def fields(struct: type[msgspec.Struct] | msgspec.inspect.StructType) -> set[str]:
    """The wire names of a Struct's fields, without the ``type`` tag and a request's ``id``."""
    info = struct if isinstance(struct, msgspec.inspect.StructType) else msgspec.inspect.type_info(struct)
    assert isinstance(info, msgspec.inspect.StructType)
    return {f.encode_name for f in info.fields}


def methods() -> dict[str, msgspec.inspect.StructType]:
    return tagged(ClientRequest)


def events() -> dict[str, msgspec.inspect.StructType]:
    return tagged(Event)


def frames() -> dict[str, msgspec.inspect.StructType]:
    """Every frame that is not a request: the handshake, responses and pushes."""
    return {tag: info for tag, info in tagged(AnyFrame).items() if tag not in methods()}


def error_codes() -> set[str]:
    return {code.value for code in ErrorCode}


def data_shapes() -> dict[str, set[str]]:
    """Every Struct the schema holds that is not a frame, a request, an event or a method's
    result wrapper: the records results and params carry (``SessionInfo``, ``Usage``, …)."""
    schema = client_protocol_schema()["$defs"]
    framed = {info.cls.__name__ for info in (*methods().values(), *events().values(), *frames().values())}
    wrappers = {cls.__name__ for cls in RESULT_TYPES.values()}
    return {name: set(defn.get("properties", {})) for name, defn in schema.items()
            if name not in framed | wrappers | {"MethodResults"}}


# --- what the document declares --------------------------------------------------------------


def tables(text: str) -> dict[str, list[list[str]]]:
    """The first table under each ``## `` heading: its body rows, as lists of cells."""
    found: dict[str, list[list[str]]] = {}
    heading = None
    rows: list[list[str]] | None = None
    for line in text.splitlines():
        if line.startswith("## "):
            heading, rows = line[3:].strip(), None
            continue
        if heading is None or heading in found and rows is None:
            continue
        if line.startswith("|"):
            cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
            if rows is None:
                rows = found[heading] = []
                continue  # the header row
            if not set("".join(cells)) <= set("-: "):
                rows.append(cells)
        elif rows is not None:
            rows = None
            heading = None
    return found


def rows_by_name(text: str, heading: str) -> dict[str, list[str]]:
    """The rows of the table under ``heading``, by the one name ticked in their first cell."""
    table = tables(text).get(heading)
    assert table, f"docs/protocol.md has no table under '## {heading}'"
    named = {}
    for cells in table:
        names = _TICKED.findall(cells[0])
        assert len(names) == 1, f"'{heading}' row {cells[0]!r} must name one thing in backticks"
        assert names[0] not in named, f"'{heading}' names {names[0]} twice"
        named[names[0]] = cells
    return named


def ticked(cell: str) -> set[str]:
    """Every name in backticks in a cell, and each of its words (``code?`` counts as ``code``)."""
    names = set()
    for item in _TICKED.findall(cell):
        names.add(item.rstrip("?"))
        names.update(re.findall(r"[A-Za-z_][\w.-]*", item))
    return names


# --- the checks, on any text, so their failures can be shown --------------------------------


def problems(text: str) -> list[str]:
    """Every disagreement between ``text`` (a protocol document) and the code."""
    found: list[str] = []

    def compare(what: str, in_doc: set[str], in_code: set[str]) -> None:
        found.extend(f"{what} {name} is in the code but not in the document" for name in sorted(in_code - in_doc))
        found.extend(f"{what} {name} is in the document but not in the code" for name in sorted(in_doc - in_code))

    def covered(what: str, cell: str, names: set[str]) -> None:
        found.extend(f"{what} does not name its field {name}" for name in sorted(names - ticked(cell)))

    doc_methods = rows_by_name(text, "Methods")
    compare("method", set(doc_methods), set(methods()))
    codes = error_codes()
    for method, info in methods().items():
        row = doc_methods.get(method)
        if row is None:
            continue
        params, result, errors = row[1], row[2], row[3]
        covered(f"method {method}'s params", params, fields(info) - {"type", "id"})
        covered(f"method {method}'s result", result, fields(RESULT_TYPES[method]))
        found.extend(f"method {method} lists the error {code}, which is not an ErrorCode"
                     for code in sorted(set(_TICKED.findall(errors)) - codes))

    doc_events = rows_by_name(text, "Events")
    compare("event kind", set(doc_events), set(events()))
    for kind, info in events().items():
        if kind in doc_events:
            covered(f"event {kind}", doc_events[kind][1], fields(info) - {"type"})

    doc_frames = rows_by_name(text, "Frames")
    compare("frame", set(doc_frames), set(frames()))
    for tag, info in frames().items():
        if tag in doc_frames:
            covered(f"frame {tag}", doc_frames[tag][-1], fields(info) - {"type"})

    doc_shapes = rows_by_name(text, "Data shapes")
    shapes = data_shapes()
    compare("data shape", set(doc_shapes), set(shapes))
    for name, names in shapes.items():
        if name in doc_shapes:
            covered(f"data shape {name}", doc_shapes[name][1], names)

    compare("error code", set(rows_by_name(text, "Error codes")), codes)
    return found


# --- tests -----------------------------------------------------------------------------------


def test_the_document_and_the_code_agree() -> None:
    assert problems(DOC.read_text(encoding="utf-8")) == []


def test_the_code_side_is_read_from_the_structs() -> None:
    """The names come from the unions themselves, so these sets are the protocol's (spot checks)."""
    assert {"session.create", "session.subscribe", "ui.login_code", "workspace.merge"} <= set(methods())
    assert {"init", "permission_decided", "compaction", "checkpoint"} <= set(events())
    assert set(frames()) == {"hello", "welcome", "ok", "error", "event", "lagged"}
    assert "class" in fields(events()["error"])  # the wire name, not the attribute's
    assert {"SessionInfo", "Usage", "Detection", "McpServer"} <= set(data_shapes())
    assert not set(data_shapes()) & {"SessionResult", "Hello", "Init", "SessionCreate"}


def _without_row(text: str, heading: str, name: str) -> str:
    """``text`` with the row naming ``name`` removed from the table under ``heading``."""
    section_start = text.index(f"\n## {heading}\n")
    row = re.compile(rf"^\| `{re.escape(name)}` \|.*\n", re.M)
    match = row.search(text, section_start)
    assert match is not None, (heading, name)
    return text[:match.start()] + text[match.end():]


@pytest.mark.parametrize(("heading", "name", "expected"), [
    ("Methods", "session.resume", "method session.resume is in the code but not in the document"),
    ("Events", "workspace", "event kind workspace is in the code but not in the document"),
    ("Frames", "lagged", "frame lagged is in the code but not in the document"),
    ("Error codes", "already_decided", "error code already_decided is in the code but not in the document"),
    ("Data shapes", "WorkspaceInfo", "data shape WorkspaceInfo is in the code but not in the document"),
])
def test_a_name_missing_from_the_document_fails(heading: str, name: str, expected: str) -> None:
    assert problems(_without_row(DOC.read_text(encoding="utf-8"), heading, name)) == [expected]


@pytest.mark.parametrize(("heading", "row", "expected"), [
    ("Methods", "| `session.fork` | `session_id` | `{}` | — |",
     "method session.fork is in the document but not in the code"),
    ("Events", "| `heartbeat` | `at` |", "event kind heartbeat is in the document but not in the code"),
    ("Error codes", "| `quota_exceeded` | a made-up code |",
     "error code quota_exceeded is in the document but not in the code"),
])
def test_a_name_only_in_the_document_fails(heading: str, row: str, expected: str) -> None:
    text = DOC.read_text(encoding="utf-8")
    start = text.index(f"\n## {heading}\n")
    first_row = text.index("\n| `", start) + 1
    assert problems(text[:first_row] + row + "\n" + text[first_row:]) == [expected]


def test_a_field_or_error_the_document_gets_wrong_fails() -> None:
    text = DOC.read_text(encoding="utf-8")
    start = text.index("\n| `session.subscribe` |")
    end = text.index("\n", start + 1)
    broken = text[:start] + "\n| `session.subscribe` | `session_id` | `last_seq` | `no_such_code` |" + text[end:]
    assert problems(broken) == [
        "method session.subscribe's params does not name its field from_seq",
        "method session.subscribe lists the error no_such_code, which is not an ErrorCode",
    ]
    start = text.index("\n| `exit` |")
    end = text.index("\n", start + 1)
    assert problems(text[:start] + "\n| `exit` | `exit_code`, `reason` |" + text[end:]) == [
        "event exit does not name its field signal"]


def test_a_name_only_in_the_code_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    """A Struct added to the protocol without a row: the comparison sees it from the code side."""

    class Fork(msgspec.Struct, tag="session.fork", tag_field="type", kw_only=True, frozen=True):
        id: int
        session_id: str

    real = methods()
    monkeypatch.setitem(globals(), "methods",
                        lambda: {**real, "session.fork": msgspec.inspect.type_info(Fork)})
    monkeypatch.setitem(RESULT_TYPES, "session.fork", RESULT_TYPES["session.close"])
    assert problems(DOC.read_text(encoding="utf-8")) == [
        "method session.fork is in the code but not in the document"]
