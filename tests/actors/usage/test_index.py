"""The usage index beside a session's log: built on first use, extended by what was appended,
rebuilt when missing, corrupt or stale (the log replaced, cut back or rewritten), and never
counting a line still being written."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import actors.usage.index as index_module
import actors.usage.logscan as logscan
from actors.session.eventlog import EventLog
from actors.usage.index import INDEX_NAME, load_usage
from actors.usage.logscan import TurnFacts
from tests.actors.usage.logs import append, at, result, write_session

SID = "s-0000000000aa"


@pytest.fixture
def scanned(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The byte length of every span the index scans (to tell a rebuild from an extension)."""
    spans: list[int] = []
    real = logscan.scan_span

    def spy(data: bytes, model: str | None) -> tuple[list[TurnFacts], str | None, int]:
        spans.append(len(data))
        return real(data, model)

    monkeypatch.setattr(index_module, "scan_span", spy)
    return spans


def session_turns(directory: Path) -> list[TurnFacts]:
    return load_usage(directory).turns()


def inputs(turns: list[TurnFacts]) -> list[int]:
    return [t.input_tokens for t in turns]


def log_size(directory: Path) -> int:
    return (directory / "events.jsonl").stat().st_size


def test_built_once_then_extended_by_the_appended_bytes_only(tmp_path: Path, scanned: list[int]) -> None:
    directory = write_session(tmp_path, SID, "fake", None, [result("2026-12-01T10:00:00", i=1),
                                                            result("2026-12-01T11:00:00", i=2)])
    assert inputs(session_turns(directory)) == [1, 2]
    assert (directory / INDEX_NAME).exists() and scanned == [log_size(directory)]
    assert inputs(session_turns(directory)) == [1, 2]
    assert len(scanned) == 1  # unchanged log: the index answers
    before = log_size(directory)
    append(directory, SID, [result("2026-12-01T12:00:00", i=3)])
    assert inputs(session_turns(directory)) == [1, 2, 3]
    assert scanned[1:] == [log_size(directory) - before]


def test_a_line_still_being_written_counts_once_it_is_whole(tmp_path: Path, scanned: list[int]) -> None:
    directory = write_session(tmp_path, SID, "fake", None, [result("2026-12-01T10:00:00", i=1)])
    whole = log_size(directory)
    other = tmp_path / "other"
    write_session(other, SID, "fake", None, [result("2026-12-01T10:00:00", i=1),
                                             result("2026-12-01T11:00:00", i=2)])
    line = (other / "sessions" / SID / "events.jsonl").read_bytes()[whole:]
    with open(directory / "events.jsonl", "ab") as log:
        log.write(line[:40])  # a writer midway through its line
    assert inputs(session_turns(directory)) == [1]
    with open(directory / "events.jsonl", "ab") as log:
        log.write(line[40:])
    assert inputs(session_turns(directory)) == [1, 2]
    assert scanned[-1] == len(line)  # the half line was read again, whole


def test_a_torn_tail_cut_back_and_written_over_is_rebuilt(tmp_path: Path, scanned: list[int]) -> None:
    directory = write_session(tmp_path, SID, "fake", None, [result("2026-12-01T10:00:00", i=1)])
    with open(directory / "events.jsonl", "ab") as log:
        log.write(b'{"type":"event","session_id":"' + SID.encode() + b'","seq":2,"ts":"2026-12-01T1')
    assert inputs(session_turns(directory)) == [1]
    # The daemon restarts: its log cuts the torn line and the session appends longer events.
    append(directory, SID, [result("2026-12-01T12:00:00", i=5, o=123456789)])
    assert inputs(session_turns(directory)) == [1, 5]


def test_a_missing_index_is_rebuilt(tmp_path: Path, scanned: list[int]) -> None:
    directory = write_session(tmp_path, SID, "fake", None, [result("2026-12-01T10:00:00", i=1)])
    session_turns(directory)
    (directory / INDEX_NAME).unlink()
    assert inputs(session_turns(directory)) == [1]
    assert scanned == [log_size(directory)] * 2 and (directory / INDEX_NAME).exists()


@pytest.mark.parametrize("garbage", [b"", b"\x00" * 10, b"not msgpack at all", b"\x85\xa7version\x02"])
def test_a_corrupt_index_is_rebuilt(tmp_path: Path, scanned: list[int], garbage: bytes) -> None:
    directory = write_session(tmp_path, SID, "fake", None, [result("2026-12-01T10:00:00", i=1)])
    session_turns(directory)
    (directory / INDEX_NAME).write_bytes(garbage)
    assert inputs(session_turns(directory)) == [1]
    assert len(scanned) == 2
    assert inputs(session_turns(directory)) == [1] and len(scanned) == 2  # rewritten, good again


def test_a_torn_index_write_is_rebuilt(tmp_path: Path, scanned: list[int]) -> None:
    directory = write_session(tmp_path, SID, "fake", None, [result("2026-12-01T10:00:00", i=1)])
    session_turns(directory)
    data = (directory / INDEX_NAME).read_bytes()
    (directory / INDEX_NAME).write_bytes(data[: len(data) // 2])
    assert inputs(session_turns(directory)) == [1] and len(scanned) == 2


def test_a_log_rewritten_in_place_is_rescanned(tmp_path: Path, scanned: list[int]) -> None:
    directory = write_session(tmp_path, SID, "fake", None, [result("2026-12-01T10:00:00", i=1),
                                                            result("2026-12-01T11:00:00", i=2)])
    session_turns(directory)
    path = directory / "events.jsonl"
    before = path.stat().st_mtime_ns
    data = path.read_bytes().replace(b'"input_tokens":1', b'"input_tokens":7')
    with open(path, "r+b") as log:  # same inode, same length, other bytes before the tail
        log.write(data)
    # File times tick coarsely (a jiffy): make the rewrite's time differ as a later one would.
    os.utime(path, ns=(before + 10**9, before + 10**9))
    assert inputs(session_turns(directory)) == [7, 2]


def test_a_log_rewritten_at_its_end_is_rescanned(tmp_path: Path, scanned: list[int]) -> None:
    directory = write_session(tmp_path, SID, "fake", None, [result("2026-12-01T10:00:00", i=1),
                                                            result("2026-12-01T11:00:00", i=2)])
    session_turns(directory)
    path = directory / "events.jsonl"
    mtime = path.stat().st_mtime_ns
    data = path.read_bytes().replace(b'"duration_ms":null}}\n', b'"duration_ms":1234}}\n')
    path.write_bytes(data + data.split(b"\n")[0] + b"\n")  # same inode, grown, other end
    os.utime(path, ns=(mtime, mtime))
    assert len(session_turns(directory)) == 3
    assert scanned[-1] == len(data) + len(data.split(b"\n")[0]) + 1


def test_a_log_cut_shorter_is_rescanned(tmp_path: Path, scanned: list[int]) -> None:
    directory = write_session(tmp_path, SID, "fake", None, [result("2026-12-01T10:00:00", i=1),
                                                            result("2026-12-01T11:00:00", i=2)])
    session_turns(directory)
    path = directory / "events.jsonl"
    first = path.read_bytes().split(b"\n")[0] + b"\n"
    os.truncate(path, len(first))
    assert inputs(session_turns(directory)) == [1]


def test_a_replaced_log_is_rescanned(tmp_path: Path, scanned: list[int]) -> None:
    directory = write_session(tmp_path, SID, "fake", None, [result("2026-12-01T10:00:00", i=1)])
    session_turns(directory)
    other = write_session(tmp_path / "o", SID, "fake", None, [result("2026-12-01T10:00:01", i=4),
                                                              result("2026-12-01T10:30:00", i=3)])
    data = (other / "events.jsonl").read_bytes()
    (directory / "events.jsonl").unlink()  # the new file may well get the same inode
    (directory / "events.jsonl").write_bytes(data)  # longer, and its first line ends alike
    assert inputs(session_turns(directory)) == [4, 3]
    assert scanned[-1] == len(data)


def test_the_model_of_an_init_carries_over_an_extension(tmp_path: Path) -> None:
    from protocol.events import Init

    directory = write_session(tmp_path, SID, "claude", None, [
        ("2026-12-01T09:00:00", Init(model="m-1")), result("2026-12-01T10:00:00", i=1)])
    session_turns(directory)
    append(directory, SID, [result("2026-12-01T11:00:00", i=2),
                            ("2026-12-01T11:30:00", Init(model="m-2")),
                            result("2026-12-01T12:00:00", i=3)])
    assert [t.model for t in session_turns(directory)] == ["m-1", "m-1", "m-2"]


def test_no_log_no_turns(tmp_path: Path) -> None:
    assert session_turns(tmp_path) == []


def test_an_open_log_being_appended_is_read_up_to_now(tmp_path: Path) -> None:
    directory = tmp_path / SID
    log, _ = EventLog.open(directory, SID, durability="none")
    try:
        for n in range(1, 4):
            _, event = result("2026-12-01T10:00:00", i=n)
            log.append(event, now=at("2026-12-01T10:00:00"))
            assert inputs(session_turns(directory)) == list(range(1, n + 1))
    finally:
        log.close()


def test_the_rollups_extended_equal_the_rollups_rebuilt(tmp_path: Path) -> None:
    from protocol.events import Init

    directory = write_session(tmp_path, SID, "native", None, [
        ("2026-12-01T09:00:00", Init(model="m-1")), result("2026-12-01T10:00:00", i=1, cost=0.5),
        result("2026-12-01T23:59:59.999", i=2, o=3)])
    load_usage(directory)
    append(directory, SID, [result("2026-12-02T00:00:00", i=4, cr=5), ("2026-12-02T01:00:00", Init(model="m-2")),
                            result("2026-12-02T02:00:00", error=True), result("2026-12-01T12:00:00", i=8)])
    extended = load_usage(directory).rollups
    (directory / INDEX_NAME).unlink()
    assert load_usage(directory).rollups == extended
    # The last turn's clock went back a day: it counts on the day it carries.
    assert [(r.day, r.model, r.bucket) for r in extended] == [
        ("2026-12-01", "m-1", [2, 0, 3, 3, 0, 0, 0.5, 1, 2, 3, 0, 0]),
        ("2026-12-01", "m-2", [1, 0, 8, 0, 0, 0, 0.0, 1, 8, 0, 0, 0]),
        ("2026-12-02", "m-1", [1, 0, 4, 0, 5, 0, 0.0, 1, 4, 0, 5, 0]),
        ("2026-12-02", "m-2", [1, 1, 0, 0, 0, 0, 0.0, 0, 0, 0, 0, 0]),
    ]
