"""Many clients on one session see the same events; reconnects and lag lose nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import trio

from .daemonproc import DaemonProc, raw_client


def _is_result(frame: dict[str, Any]) -> bool:
    return frame["type"] == "event" and frame["event"]["type"] == "result"


def _seqs(frames: list[dict[str, Any]]) -> list[int]:
    return [f["seq"] for f in frames if f["type"] == "event"]


async def test_three_clients_and_a_late_fourth_see_identical_sequences(daemon: DaemonProc, tmp_path: Path) -> None:
    async with raw_client(daemon) as a, raw_client(daemon) as b, raw_client(daemon, unix=True) as c:
        created = await a.ok("session.create", harness="fake", cwd=str(tmp_path))
        sid = created["session"]["id"]
        for client in (a, b, c):
            assert (await client.ok("session.subscribe", session_id=sid, from_seq=1))["last_seq"] >= 1
        assert (await a.ok("session.prompt", session_id=sid, text="/slow 6"))["delivery"] == "prompted"
        first = await a.events_until(sid, lambda f: f["event"]["type"] == "assistant")
        # A fourth client attaches mid-turn and asks for everything.
        async with raw_client(daemon, unix=True) as d:
            await d.ok("session.subscribe", session_id=sid, from_seq=1)
            seen = {"a": first + await a.events_until(sid, _is_result)}
            for name, client in (("b", b), ("c", c), ("d", d)):
                seen[name] = await client.events_until(sid, _is_result)
    reference = seen["a"]
    assert _seqs(reference) == list(range(1, len(reference) + 1))
    assert sum(1 for f in reference if f["event"]["type"] == "assistant") == 6
    for name in "bcd":
        assert seen[name] == reference, name


async def test_a_client_killed_mid_stream_resumes_without_gap_or_duplicate(daemon: DaemonProc, tmp_path: Path) -> None:
    async with raw_client(daemon) as watcher:
        sid = (await watcher.ok("session.create", harness="fake", cwd=str(tmp_path)))["session"]["id"]
        await watcher.ok("session.subscribe", session_id=sid)
        received: list[dict[str, Any]] = []
        async with raw_client(daemon) as victim:
            await victim.ok("session.subscribe", session_id=sid, from_seq=0)
            await watcher.ok("session.prompt", session_id=sid, text="/slow 20")
            received += await victim.events_until(sid, lambda f: f["event"]["type"] == "assistant"
                                                  and f["event"]["text"] == "w3 ")
            # The connection drops mid-turn (the context manager tears the socket down).
        last = received[-1]["seq"]
        async with raw_client(daemon) as again:
            await again.ok("session.subscribe", session_id=sid, from_seq=last + 1)
            received += await again.events_until(sid, _is_result)
        everything = await watcher.events_until(sid, _is_result)
    assert _seqs(received) == list(range(1, len(received) + 1))
    assert received == everything


async def test_a_client_that_stops_reading_is_lagged_while_others_keep_up(tmp_path: Path) -> None:
    from .daemonproc import start_daemon, stop_daemon

    daemon = await start_daemon(tmp_path / "state")
    try:
        async with raw_client(daemon) as fast1, raw_client(daemon) as fast2, \
                raw_client(daemon, queue=1) as slow:
            sid = (await fast1.ok("session.create", harness="fake", cwd=str(tmp_path),
                                  options={"script": _FLOOD}))["session"]["id"]
            for client in (fast1, fast2, slow):
                await client.ok("session.subscribe", session_id=sid, from_seq=0)
            slow.pause()
            results = {}
            for name, client in (("fast1", fast1), ("fast2", fast2)):
                results[name] = await client.events_until(
                    sid, lambda f: f["type"] != "event" or f["event"].get("text") == "done",
                    timeout=60)
            # Reading again, the slow client finds what the daemon sent it, ending in `lagged`.
            slow.resume()
            frames = []
            with trio.fail_after(30):
                while True:
                    frame = await slow.next_pushed()
                    frames.append(frame)
                    if frame["type"] == "lagged":
                        break
        assert all(f["type"] == "event" for f in results["fast1"] + results["fast2"])
        assert results["fast1"] == results["fast2"]
        assert _seqs(results["fast1"]) == list(range(1, len(results["fast1"]) + 1))
        lagged = frames[-1]
        assert lagged["session_id"] == sid
        sent = [f for f in frames if f["type"] == "event"]
        assert lagged["last_seq"] == (sent[-1]["seq"] if sent else 0)
        assert len(sent) < len(results["fast1"])
    finally:
        await stop_daemon(daemon)


# 4000 events of 8 KiB, paced at about 2000 events/s: a client that reads keeps up on loopback,
# one that stops reading fills its socket buffers and then its queue in the daemon.
_FLOOD = (
    "python3 -c \"import json,sys,time\n"
    "for i in range(4000):\n"
    "  sys.stdout.write(json.dumps({'type':'assistant','text':str(i)+'x'*8000,'delta':True})+'\\n')\n"
    "  if i % 100 == 99: sys.stdout.flush(); time.sleep(0.05)\n"
    "sys.stdout.write(json.dumps({'type':'assistant','text':'done','delta':False})+'\\n'); sys.stdout.flush()\n"
    "time.sleep(60)\""
)
