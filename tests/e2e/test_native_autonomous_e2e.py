"""An autonomous native session through a real daemon against the fake model server.

The session is created with ``options.autonomous`` and no prompt: its goal is the first user
message. After the first turn's checkpoint the worker is SIGKILLed during the second turn's
model call; the session restarts it, the new worker resumes from the checkpoint (turns and
tokens carried forward), the model calls ``report_done`` and the run ends ``completed``.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

import trio

from actors.native.worker.autonomy import REPORT_DONE
from tests.fakes.model_script import call, hang, say
from tests.fakes.model_server import FakeModels

from .test_native_e2e import TIMEOUT, create_params, mentions
from .vendor_rig import daemon_session, family, is_kind, of
from .daemonproc import wait_gone

GOAL = "Make the tests pass"


async def test_an_autonomous_session_survives_a_worker_kill_and_completes(
        tmp_path: Path) -> None:
    server = FakeModels([say("Looked around."), hang("Fixing"),
                         call(REPORT_DONE, summary="fixed"), say("Done.")])
    with trio.fail_after(TIMEOUT):
        async with trio.open_nursery() as nursery:
            port = await nursery.start(server.serve)
            params = create_params(tmp_path, "openai", port,
                                   options={"base_url": f"http://127.0.0.1:{port}/v1",
                                            "autonomous": {"goal": GOAL, "max_turns": 4}})
            async with daemon_session(tmp_path / "state", params, timeout=TIMEOUT,
                                      ready=is_kind("checkpoint", turn=1)) as rig:
                await server.wait_for(lambda: server.hanging == 1)
                old = await rig.pid()
                before = family(old)
                os.kill(old, signal.SIGKILL)
                events = await rig.until(is_kind("result", stop_reason="completed"))
                assert wait_gone(before) == []
                marks = of(events, "checkpoint")
                assert marks[0]["resumed"] and marks[0]["turn"] == 1
                # the resumed run is a running turn (prompts steer it; nothing says idle)
                resumed = events.index(marks[0])
                states = [e["state"] for e in events[resumed:] if e["type"] == "status"]
                assert states[0] == "running" and "idle" not in states[:-1], states
                assert marks[0]["usage"]["input_tokens"] == 20
                assert (marks[-1]["turn"], marks[-1]["done"]) == (2, True)
                assert marks[-1]["stop_reason"] == "completed"
                final = of(events, "result")[-1]
                assert final["usage"]["input_tokens"] == 60  # turn 1, then two calls of turn 2
                info = await rig.info()
                assert info["restarts"] == 1 and info["state"] == "idle"
            nursery.cancel_scope.cancel()
    requests = server.model_requests()
    assert mentions(requests[0], GOAL)
    # the resumed call carries the first turn and the continuation prompt
    assert mentions(requests[2], "Looked around.") and mentions(requests[2], "Continue working")
