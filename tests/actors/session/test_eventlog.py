"""The durable event log: gapless seqs, exact bytes across reopen, torn tails, replay, fsync timing."""

from __future__ import annotations

import errno
import math
import threading
import os
import stat
from collections.abc import Callable
from pathlib import Path

import msgspec
import pytest
import trio
import trio.testing

from actors.session.eventlog import EventLog, LoadReport
from actors.session.logfile import INDEX_STEP
from protocol.base import format_ts
from protocol.errors import StorageFailed
from protocol.events import Assistant, Event, Exit, Permission, Result, Tool, User
from protocol.messages import EventFrame

SID = "s-test"
T0 = 1_780_000_000.25


def events(n: int) -> list[Event]:
    return [Assistant(text=f"chunk {i}", delta=True) for i in range(n)]


def open_log(directory: Path, **kwargs: object) -> tuple[EventLog, LoadReport]:
    return EventLog.open(directory, SID, **kwargs)  # type: ignore[arg-type]


def fill(directory: Path, n: int, **kwargs: object) -> list[bytes]:
    log, _ = open_log(directory, **kwargs)
    sent = [log.append(event, now=T0 + i)[1] for i, event in enumerate(events(n))]
    log.close()
    return sent


class FsyncRecorder:
    """An ``fsync`` that records the trio time of each call; use it with ``offload=inline``."""

    def __init__(self) -> None:
        self.times: list[float] = []
        self._send, self._receive = trio.open_memory_channel[float](math.inf)

    def __call__(self, fd: int) -> None:
        self.times.append(trio.current_time())
        self._send.send_nowait(trio.current_time())

    async def next(self) -> float:
        return await self._receive.receive()


async def inline(call: Callable[[], None]) -> None:
    """Run the flusher's fsync in the trio thread, so autojump cannot move time during it."""
    call()


# --- writing -----------------------------------------------------------------------------


def test_append_assigns_gapless_seq_and_wire_timestamp(tmp_path: Path) -> None:
    log, report = open_log(tmp_path / "s")
    assert report == LoadReport(last_seq=0, events=0)
    results = [log.append(event, now=T0 + i) for i, event in enumerate(events(3))]
    assert [frame.seq for frame, _ in results] == [1, 2, 3]
    assert [frame.ts for frame, _ in results] == [format_ts(T0 + i) for i in range(3)]
    for frame, data in results:
        assert frame.session_id == SID
        assert msgspec.json.decode(data, type=EventFrame) == frame
    assert log.last_seq == 3
    log.close()
    assert (tmp_path / "s" / "events.jsonl").read_bytes() == b"".join(d + b"\n" for _, d in results)


def test_creates_private_directory_and_file(tmp_path: Path) -> None:
    log, _ = open_log(tmp_path / "sessions" / "s")
    log.close()
    assert stat.S_IMODE((tmp_path / "sessions" / "s").stat().st_mode) == 0o700
    assert stat.S_IMODE((tmp_path / "sessions" / "s" / "events.jsonl").stat().st_mode) == 0o600


def test_existing_file_is_made_private(tmp_path: Path) -> None:
    (tmp_path / "events.jsonl").touch(mode=0o644)
    os.chmod(tmp_path / "events.jsonl", 0o644)
    open_log(tmp_path)[0].close()
    assert stat.S_IMODE((tmp_path / "events.jsonl").stat().st_mode) == 0o600


def test_reopen_serves_the_same_bytes_and_continues_the_seq(tmp_path: Path) -> None:
    sent = fill(tmp_path, 5)
    log, report = open_log(tmp_path)
    assert report == LoadReport(last_seq=5, events=5)
    assert list(log.read_from(1)) == sent
    frame, _ = log.append(User(text="again"), now=T0)
    assert frame.seq == 6
    log.close()
    log, _ = open_log(tmp_path, memory_tail=0)
    assert list(log.read_from(1))[:5] == sent
    assert [f.seq for f in log.frames_from(0)] == [1, 2, 3, 4, 5, 6]


def test_every_event_kind_round_trips(tmp_path: Path) -> None:
    kinds: list[Event] = [
        Tool(call_id="c1", name="bash", kind="exec", input={"cmd": "ls"}, output="a\nb"),
        Permission(permission_id="p1", tool="bash"),
        Result(stop_reason="end_turn"),
        Exit(exit_code=None, signal="SIGKILL", reason="killed"),
    ]
    log, _ = open_log(tmp_path)
    for event in kinds:
        log.append(event, now=T0)
    log.close()
    log, _ = open_log(tmp_path, memory_tail=0)
    assert [f.event for f in log.frames_from(1)] == kinds


def test_close_is_idempotent_and_append_after_close_raises(tmp_path: Path) -> None:
    log, _ = open_log(tmp_path)
    log.append(User(text="x"), now=T0)
    log.close()
    log.close()
    with pytest.raises(trio.ClosedResourceError):
        log.append(User(text="y"), now=T0)
    assert log.last_seq == 1
    assert [f.seq for f in log.frames_from(1)] == [1]


# --- loading -----------------------------------------------------------------------------


def test_torn_last_line_is_truncated_and_reported(tmp_path: Path) -> None:
    sent = fill(tmp_path, 3)
    path = tmp_path / "events.jsonl"
    good_size = path.stat().st_size
    whole = msgspec.json.encode(EventFrame(session_id=SID, seq=4, ts=format_ts(T0), event=User(text="torn")))
    with open(path, "ab") as file:
        file.write(whole[:20])
    log, report = open_log(tmp_path)
    assert report.last_seq == 3
    assert report.truncated_bytes == 20
    assert report.torn_line_seq_guess == 4
    assert report.reason is not None and "line 4" in report.reason
    assert path.stat().st_size == good_size
    assert log.append(User(text="after"), now=T0)[0].seq == 4
    log.close()
    log, report = open_log(tmp_path)
    assert report == LoadReport(last_seq=4, events=4)
    assert list(log.read_from(1))[:3] == sent


@pytest.mark.parametrize(
    "tail",
    [
        b"{not json\n",
        b"\n",
        b"\x00" * 4096,
        b"garbage\n\x00\x00\x00",
        b'{"type":"event","session_id":"s-test","seq":4}\n',  # valid JSON, not a frame
    ],
)
def test_trailing_unreadable_lines_are_truncated(tmp_path: Path, tail: bytes) -> None:
    fill(tmp_path, 3)
    with open(tmp_path / "events.jsonl", "ab") as file:
        file.write(tail)
    log, report = open_log(tmp_path)
    assert (report.last_seq, report.truncated_bytes, report.torn_line_seq_guess) == (3, len(tail), 4)
    assert log.statistics().bytes == (tmp_path / "events.jsonl").stat().st_size
    log.close()


def test_corrupt_middle_line_raises_and_leaves_the_file(tmp_path: Path) -> None:
    sent = fill(tmp_path, 3)
    path = tmp_path / "events.jsonl"
    damaged = sent[0] + b"\n" + b"garbage\n" + sent[2] + b"\n"
    path.write_bytes(damaged)
    with pytest.raises(StorageFailed, match="line 3 is a good frame after an unreadable line"):
        open_log(tmp_path)
    assert path.read_bytes() == damaged


@pytest.mark.parametrize(
    ("seq", "session_id"), [(3, SID), (1, SID), (2, "s-other")], ids=["gap", "repeat", "foreign"]
)
def test_wrong_seq_or_session_raises_even_on_the_last_line(
    tmp_path: Path, seq: int, session_id: str
) -> None:
    fill(tmp_path, 1)
    path = tmp_path / "events.jsonl"
    line = msgspec.json.encode(EventFrame(session_id=session_id, seq=seq, ts=format_ts(T0), event=User(text="x")))
    with open(path, "ab") as file:
        file.write(line + b"\n")
    before = path.read_bytes()
    with pytest.raises(StorageFailed, match="expected seq 2"):
        open_log(tmp_path)
    assert path.read_bytes() == before


# --- reading -----------------------------------------------------------------------------


@pytest.mark.parametrize("memory_tail", [0, 3, 2048])
def test_read_from_every_start(tmp_path: Path, memory_tail: int) -> None:
    log, _ = open_log(tmp_path, memory_tail=memory_tail)
    sent = [log.append(event, now=T0)[1] for event in events(10)]
    for from_seq in range(-1, 13):
        assert list(log.read_from(from_seq)) == sent[max(from_seq, 1) - 1 :], from_seq
    log.close()


@pytest.mark.parametrize("memory_tail", [0, 3, 2048])
def test_read_from_up_to_a_seq(tmp_path: Path, memory_tail: int) -> None:
    log, _ = open_log(tmp_path, memory_tail=memory_tail)
    sent = [log.append(event, now=T0)[1] for event in events(10)]
    for from_seq in range(0, 12):
        for until in range(0, 12):
            assert list(log.read_from(from_seq, until)) == sent[max(from_seq, 1) - 1 : until], (from_seq, until)
    log.close()


def test_read_from_the_tail_does_not_touch_the_file(tmp_path: Path) -> None:
    log, _ = open_log(tmp_path, memory_tail=3)
    sent = [log.append(event, now=T0)[1] for event in events(10)]
    (tmp_path / "events.jsonl").rename(tmp_path / "moved.jsonl")
    assert list(log.read_from(8)) == sent[7:]
    with pytest.raises(StorageFailed, match="cannot read"):
        list(log.read_from(7))
    log.close()


def test_read_from_the_file_across_index_blocks(tmp_path: Path) -> None:
    n = 2 * INDEX_STEP + 7
    sent = fill(tmp_path, n, durability="none")
    log, _ = open_log(tmp_path, memory_tail=0)
    for from_seq in (1, INDEX_STEP - 1, INDEX_STEP, INDEX_STEP + 1, 2 * INDEX_STEP + 1, n, n + 1):
        assert list(log.read_from(from_seq)) == sent[from_seq - 1 :], from_seq
    # The index built while appending matches the one built by the load scan.
    more = [log.append(event, now=T0)[1] for event in events(INDEX_STEP)]
    assert list(log.read_from(n + 1)) == more
    log.close()


@pytest.mark.parametrize("memory_tail", [0, 2048])
def test_read_from_stops_at_last_seq_of_the_call(tmp_path: Path, memory_tail: int) -> None:
    log, _ = open_log(tmp_path, memory_tail=memory_tail)
    sent = [log.append(event, now=T0)[1] for event in events(4)]
    replay = log.read_from(2)
    log.append(User(text="later"), now=T0)
    assert list(replay) == sent[1:]
    log.close()


def test_read_from_reports_a_file_shorter_than_its_log(tmp_path: Path) -> None:
    log, _ = open_log(tmp_path, memory_tail=0)
    sent = [log.append(event, now=T0)[1] for event in events(4)]
    (tmp_path / "events.jsonl").write_bytes(sent[0] + b"\n")
    with pytest.raises(StorageFailed, match="ends before seq 4"):
        list(log.read_from(1))
    log.close()


# --- failures ----------------------------------------------------------------------------


def enospc_after_half(fd: int, data: memoryview) -> int:
    """A disk that takes half of a write and then is full."""
    if len(data) > 1:
        return os.write(fd, data[: len(data) // 2])
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def test_full_disk_raises_and_does_not_consume_a_seq(tmp_path: Path) -> None:
    full = False

    def write(fd: int, data: memoryview) -> int:
        return enospc_after_half(fd, data) if full else os.write(fd, data)

    log, _ = open_log(tmp_path, write=write)
    sent = [log.append(event, now=T0)[1] for event in events(2)]
    size = log.statistics().bytes
    full = True
    with pytest.raises(StorageFailed, match="No space left") as caught:
        log.append(User(text="lost"), now=T0)
    assert caught.value.data is not None and caught.value.data["errno"] == errno.ENOSPC
    assert log.last_seq == 2
    assert (tmp_path / "events.jsonl").stat().st_size == size
    full = False
    sent.append(log.append(User(text="kept"), now=T0)[1])
    assert msgspec.json.decode(sent[-1], type=EventFrame).seq == 3
    log.close()
    log, report = open_log(tmp_path)
    assert report == LoadReport(last_seq=3, events=3)
    assert list(log.read_from(1)) == sent
    log.close()


def test_write_making_no_progress_is_a_failure(tmp_path: Path) -> None:
    log, _ = open_log(tmp_path, write=lambda fd, data: 0)
    with pytest.raises(StorageFailed, match="no progress"):
        log.append(User(text="x"), now=T0)
    assert log.last_seq == 0
    log.close()


async def test_a_failed_commit_breaks_the_log_and_keeps_what_was_written(tmp_path: Path) -> None:
    def fsync(fd: int) -> None:
        raise OSError(errno.EIO, os.strerror(errno.EIO))

    log, _ = open_log(tmp_path, durability="event", fsync=fsync, offload=inline)
    _, data = log.append(User(text="x"), now=T0)
    with pytest.raises(StorageFailed, match="cannot fsync"):
        await log.commit()
    # A reader may have seen seq 1 already: it stays, and no seq is ever handed out twice.
    assert log.last_seq == 1
    assert (tmp_path / "events.jsonl").read_bytes() == data + b"\n"
    with pytest.raises(StorageFailed, match="unusable after an earlier failure"):
        log.append(User(text="y"), now=T0)
    log.close()


# --- durability --------------------------------------------------------------------------


async def test_event_durability_fsyncs_every_append_at_its_commit(tmp_path: Path) -> None:
    calls: list[int] = []
    log, _ = open_log(tmp_path, durability="event", fsync=calls.append, offload=inline)
    for i, event in enumerate(events(5)):
        log.append(event, now=T0)
        assert len(calls) == i and log.sync_due  # append itself never blocks on an fsync
        await log.commit()
        assert len(calls) == i + 1
        assert not log.statistics().dirty and not log.sync_due
    await log.commit()  # nothing due: no fsync
    log.close()
    assert len(calls) == 5
    assert log.statistics().fsyncs == 5


async def test_commit_fsyncs_off_the_trio_thread(tmp_path: Path) -> None:
    threads: list[int] = []
    log, _ = open_log(tmp_path, durability="event", fsync=lambda fd: threads.append(threading.get_ident()))
    log.append(User(text="x"), now=T0)
    await log.commit()
    assert threads and threading.get_ident() not in threads
    log.close()


async def test_none_durability_never_fsyncs(tmp_path: Path, autojump_clock: trio.testing.MockClock) -> None:
    calls: list[int] = []
    log, _ = open_log(tmp_path, durability="none", fsync=calls.append)
    async with trio.open_nursery() as nursery:
        await nursery.start(log.run_flusher)
        for event in [*events(3), Result(), Permission(permission_id="p", tool="t"), Exit()]:
            log.append(event, now=T0)
        await trio.sleep(10)
        nursery.cancel_scope.cancel()
    log.sync()
    log.close()
    assert calls == []
    assert log.statistics().fsyncs == 0


@pytest.mark.parametrize(
    "boundary", [Result(), Permission(permission_id="p", tool="bash"), Exit(exit_code=0)], ids=lambda e: type(e).__name__
)
async def test_turn_durability_fsyncs_at_the_commit_after_a_turn_boundary(tmp_path: Path, boundary: Event) -> None:
    calls: list[int] = []
    log, _ = open_log(tmp_path, fsync=calls.append, offload=inline)
    log.append(Assistant(text="a"), now=T0)
    await log.commit()
    assert calls == [] and log.statistics().dirty
    log.append(boundary, now=T0)
    assert calls == [] and log.sync_due
    await log.commit()
    assert len(calls) == 1
    assert not log.statistics().dirty
    log.close()
    assert len(calls) == 1


async def test_turn_durability_flushes_within_the_interval(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    fsync = FsyncRecorder()
    log, _ = open_log(tmp_path, fsync=fsync, offload=inline)
    async with trio.open_nursery() as nursery:
        await nursery.start(log.run_flusher)
        log.append(Assistant(text="a"), now=T0)
        assert await fsync.next() == pytest.approx(0.1)
        assert not log.statistics().dirty

        # Two writes inside one interval share one fsync, due 0.1 after the first.
        await trio.sleep(0.2)
        log.append(Assistant(text="b"), now=T0)
        await trio.sleep(0.05)
        log.append(Assistant(text="c"), now=T0)
        assert await fsync.next() == pytest.approx(0.4)

        # A turn boundary's commit fsyncs at once; the flusher then has nothing left to do.
        await trio.sleep(0.1)
        log.append(Assistant(text="d"), now=T0)
        log.append(Result(stop_reason="end_turn"), now=T0)
        await log.commit()
        assert await fsync.next() == pytest.approx(0.5)
        await trio.sleep(1)
        assert fsync.times == pytest.approx([0.1, 0.4, 0.5])

        # Quiet logs are never fsynced.
        assert log.statistics().fsyncs == 3
        nursery.cancel_scope.cancel()
    log.close()
    assert log.statistics().fsyncs == 3


async def test_sync_soon_hands_a_turn_boundary_to_the_flusher_at_once(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    fsync = FsyncRecorder()
    log, _ = open_log(tmp_path, fsync=fsync, offload=inline, fsync_interval=10.0)
    async with trio.open_nursery() as nursery:
        await nursery.start(log.run_flusher)
        log.append(Assistant(text="a"), now=T0)
        log.sync_soon()  # nothing due: the flusher keeps its interval
        await trio.sleep(1)
        assert fsync.times == []
        log.append(Result(stop_reason="end_turn"), now=T0)
        assert log.sync_due
        log.sync_soon()
        assert not log.sync_due
        assert await fsync.next() == pytest.approx(1.0)  # at once, not at 10.0
        await trio.sleep(20)
        assert fsync.times == pytest.approx([1.0])
        nursery.cancel_scope.cancel()
    log.close()


async def test_flusher_picks_up_writes_made_before_it_started(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    fsync = FsyncRecorder()
    log, _ = open_log(tmp_path, fsync=fsync, offload=inline, fsync_interval=0.25)
    log.append(Assistant(text="early"), now=T0)
    async with trio.open_nursery() as nursery:
        await nursery.start(log.run_flusher)
        assert await fsync.next() == pytest.approx(0.25)
        nursery.cancel_scope.cancel()
    log.close()


async def test_flusher_fsyncs_pending_writes_at_once_when_cancelled(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    fsync = FsyncRecorder()
    log, _ = open_log(tmp_path, fsync=fsync, offload=inline)
    async with trio.open_nursery() as nursery:
        await nursery.start(log.run_flusher)
        await trio.sleep(1)
        log.append(Assistant(text="pending"), now=T0)
        await trio.sleep(0.01)
        nursery.cancel_scope.cancel()
    assert fsync.times == pytest.approx([1.01])
    assert not log.statistics().dirty
    log.close()


async def test_flusher_does_a_final_fsync_in_a_thread_when_cancelled(tmp_path: Path) -> None:
    # Real time: the final fsync runs in a worker thread under a real bound.
    calls: list[int] = []
    log, _ = open_log(tmp_path, fsync=calls.append, fsync_interval=60)
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            await nursery.start(log.run_flusher)
            log.append(Assistant(text="pending"), now=T0)
            await trio.testing.wait_all_tasks_blocked()
            nursery.cancel_scope.cancel()
    assert len(calls) == 1
    assert log.statistics().fsyncs == 1
    assert not log.statistics().dirty
    log.close()
    assert len(calls) == 1


async def test_flusher_fsync_failure_raises_and_breaks_the_log(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    def fsync(fd: int) -> None:
        raise OSError(errno.EIO, os.strerror(errno.EIO))

    log, _ = open_log(tmp_path, fsync=fsync)
    with pytest.RaisesGroup(pytest.RaisesExc(StorageFailed, match="cannot fsync")):
        async with trio.open_nursery() as nursery:
            await nursery.start(log.run_flusher)
            log.append(Assistant(text="a"), now=T0)
    # The event was already handed out, so it stays; nothing more is written.
    assert log.last_seq == 1
    with pytest.raises(StorageFailed, match="unusable after an earlier failure"):
        log.append(Assistant(text="b"), now=T0)
    log.close()


def test_statistics_snapshot(tmp_path: Path) -> None:
    log, _ = open_log(tmp_path, fsync=lambda fd: None)
    _, data = log.append(Assistant(text="a"), now=T0)
    stats = log.statistics()
    assert (stats.last_seq, stats.bytes, stats.fsyncs, stats.dirty) == (1, len(data) + 1, 0, True)
    log.sync()
    assert log.statistics().fsyncs == 1 and not log.statistics().dirty
    with pytest.raises(AttributeError):
        stats.last_seq = 5  # type: ignore[misc]
    log.close()
