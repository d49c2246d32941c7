"""``session.compact`` through a real daemon: a native session against the fake model server is
compacted on demand, and the next model request is the compacted one; a fake session says
``unsupported``; a session with a turn running says ``session_busy``."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import trio

from tests.fakes.model_script import call, hang, say
from tests.fakes.model_server import FakeModels

from .test_native_e2e import TIMEOUT, create_params, mentions
from .vendor_rig import daemon_session, is_kind, of

BIG = "the quick brown fox " * 400
REPO = Path(__file__).resolve().parents[2]


async def corral(state: Path, *args: str) -> tuple[int, str, str]:
    """Run the ``corral`` command line on ``state``: exit code, stdout, stderr."""
    env = {k: v for k, v in os.environ.items() if k != "CORRAL_STATE_DIR"}
    done = await trio.run_process(
        [sys.executable, "-m", "actors.app", *args, "--state-dir", str(state)], check=False,
        capture_stdout=True, capture_stderr=True, cwd=str(REPO),
        env={**env, "PYTHONPATH": str(REPO), "NO_COLOR": "1"})
    return done.returncode, done.stdout.decode(), done.stderr.decode()


async def test_session_compact_compacts_an_idle_native_session(tmp_path: Path) -> None:
    server = FakeModels([call("read", path="big.txt"), say("read it"),
                         call("read", path="big.txt"), say("read it again"),
                         say("fresh"), hang("slow"), say("after")])
    (tmp_path / "work").mkdir()
    (tmp_path / "work" / "big.txt").write_text(BIG)
    with trio.fail_after(TIMEOUT):
        async with trio.open_nursery() as nursery:
            port = await nursery.start(server.serve)
            params = create_params(tmp_path, "openai", port)
            params["options"]["compaction"] = {"keep_recent_turns": 0}
            async with daemon_session(tmp_path / "state", params, timeout=TIMEOUT,
                                      ready=is_kind("init")) as rig:
                await rig.turn("read big.txt")
                await rig.turn("and again")
                assert await rig.client.ok("session.compact", session_id=rig.sid) == {}
                event = of(await rig.until(is_kind("compaction")), "compaction")[0]
                assert event["reason"] == "manual" and event["dropped_turns"] == 2
                assert len(event["elided"]) == 2
                assert event["tokens_after"] < event["tokens_before"]
                assert event["exhausted"] is False
                await rig.turn("what now?")
                last = server.model_requests()[-1]
                assert mentions(last, "read big.txt") and mentions(last, "what now?")
                assert not mentions(last, "quick brown fox") and not mentions(last, "and again")
                # corral compact ID: the "what now?" turn is old enough now (no recent window)
                code, out, err = await corral(tmp_path / "state", "compact", rig.sid)
                assert (code, err) == (0, "")
                assert out.startswith("compacted (manual): ~") and out.endswith(
                    "tokens; 1 turn(s) dropped\n"), out
                # during a turn: session_busy
                assert await rig.prompt("slowly") == "prompted"
                await rig.until(is_kind("assistant"))
                busy = await rig.client.call("session.compact", session_id=rig.sid)
                assert (busy["type"], busy["code"]) == ("error", "session_busy")
                await rig.client.ok("session.interrupt", session_id=rig.sid)
                await rig.until(is_kind("result"))
            nursery.cancel_scope.cancel()
    sidecars = list((tmp_path / "state").rglob("*.compaction.json"))
    assert len(sidecars) == 1 and json.loads(sidecars[0].read_bytes())["version"] == 1


async def test_session_compact_is_unsupported_for_other_harnesses(tmp_path: Path) -> None:
    (tmp_path / "work").mkdir()
    params = {"harness": "fake", "cwd": str(tmp_path / "work")}
    with trio.fail_after(TIMEOUT):
        async with daemon_session(tmp_path / "state", params, timeout=TIMEOUT,
                                  ready=lambda e: e["type"] == "status" and e["state"] == "idle") as rig:
            frame = await rig.client.call("session.compact", session_id=rig.sid)
            assert (frame["type"], frame["code"]) == ("error", "unsupported")
            frame = await rig.client.call("session.compact", session_id="s-nope")
            assert (frame["type"], frame["code"]) == ("error", "unknown_session")
            code, out, err = await corral(tmp_path / "state", "compact", rig.sid)
            assert code == 1 and out == "" and "cannot compact" in err
