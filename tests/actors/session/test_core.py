"""The session core, sans-IO: inputs in, outputs out, in order; time is a number we pass.

Each output is shown as a short string (``status:idle``, ``write:1:user``, ``answer:prompted``)
so that every test states the exact sequence a client (or the child) would see.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

import msgspec
import pytest

from actors.harness import HarnessRequest
from actors.session.core import SessionCore
from actors.session.messages import (
    Abandoned,
    Abort,
    Answer,
    ChildBroken,
    ChildFrame,
    ChildReaped,
    ChildSpawned,
    ChildSpawnFailed,
    CloseChild,
    Emit,
    GaveUp,
    Input,
    Output,
    Request,
    RunWork,
    SaveMeta,
    Stop,
    Tick,
    WorkDone,
    Write,
)
from actors.session.meta import SessionMeta
from protocol import events as ev
from protocol.messages import (
    ClientRequest,
    PromptResult,
    SessionClose,
    SessionInterrupt,
    SessionPermission,
    SessionPrompt,
    SessionSetModel,
    SessionSetPermissions,
)
from protocol.models import Permissions
from actors.session.config import SessionsConfig
from supervisor.proc.spec import ExitStatus

from .scripted import GOODBYE, ScriptedDriver, line

SID = "s-1"
META = SessionMeta(id=SID, harness="scripted", cwd="/w", created_at="2026-01-01T00:00:00.000Z", state="starting")
KILLED = ExitStatus(reason="crashed", signal="SIGKILL")
CLEAN = ExitStatus(reason="exited", exit_code=0)


class Drive:
    """A core and the inputs a test feeds it."""

    def __init__(self, *, permissions: Permissions | None = None, handshake: bool = False,
                 steer: bool = True, goodbye: bool = False, **settings: Any) -> None:
        self.driver = ScriptedDriver(handshake=handshake, steer=steer, goodbye=goodbye)
        self.request = HarnessRequest(session_id=SID, cwd="/w", work_dir="/w/h",
                                      permissions=permissions or Permissions())
        self.core = SessionCore(META, self.request, self.driver, SessionsConfig(**settings), now=0.0)
        self._calls = itertools.count(1)

    def feed(self, msg: Input, now: float = 0.0) -> list[str]:
        self.last = self.core.receive(msg, now)
        return [show(out) for out in self.last]

    def ask(self, request: ClientRequest, now: float = 0.0, by: str = "c-1", by_name: str = "cli") -> list[str]:
        return self.feed(Request(call=next(self._calls), request=request, by=by, by_name=by_name), now)

    def prompt(self, text: str, now: float = 0.0) -> list[str]:
        return self.ask(SessionPrompt(id=0, session_id=SID, text=text), now)

    def close(self, now: float = 0.0) -> list[str]:
        return self.ask(SessionClose(id=0, session_id=SID), now)

    def decide(self, pid: str, decision: ev.Decision, now: float = 0.0) -> list[str]:
        return self.ask(SessionPermission(id=0, session_id=SID, permission_id=pid, decision=decision), now)

    def spawned(self, gen: int = 1, now: float = 0.0) -> list[str]:
        return self.feed(ChildSpawned(gen=gen, request=self.core.child_request(), pid=100 + gen), now)

    def frame(self, gen: int = 1, now: float = 0.0, **event: Any) -> list[str]:
        return self.feed(ChildFrame(gen=gen, data=line(**event)), now)

    def exited(self, gen: int = 1, now: float = 0.0, status: ExitStatus | None = KILLED) -> list[str]:
        return self.feed(ChildReaped(gen=gen, status=status), now)

    def ask_permission(self, pid: str = "p1", now: float = 0.0) -> list[str]:
        return self.frame(now=now, type="permission", permission_id=pid, tool="bash", kind="exec")

    def events(self) -> list[ev.Event]:
        return [out.event for out in self.last if isinstance(out, Emit)]


def show(out: Output) -> str:
    match out:
        case Emit(event=ev.Status(state=state, stalled=stalled)):
            return f"status:{state}" + (":stalled" if stalled else "")
        case Emit(event=ev.PermissionDecided(permission_id=pid, decision=decision, by=by, by_name=name)):
            return f"decided:{pid}:{decision}:{by}" + ("" if name == by else f":{name}")
        case Emit(event=ev.Error(code=code)):
            return f"error:{code}"
        case Emit(event=ev.Result(stop_reason=reason, is_error=is_error)):
            return f"result:{reason}" + (":is_error" if is_error else "")
        case Emit(event=ev.Exit(reason=reason)):
            return f"exit:{reason}"
        case Emit(event=ev.User(text=text, delivery=delivery)):
            return f"user:{delivery}:{text}"
        case Emit(event=ev.PermissionsChanged(mode=mode, by=by)):
            return f"permissions:{mode}:{by}"
        case Emit(event=ev.Restarted(attempt=attempt)):
            return f"restarted:{attempt}"
        case Emit(event=event):
            return str(type(event).__struct_config__.tag)
        case Write(gen=gen, data=data):
            return f"write:{gen}:{json.loads(data)['type']}"
        case CloseChild(gen=gen):
            return f"close:{gen}"
        case RunWork(gen=gen, id=work_id, job=job):
            return f"run:{gen}:{work_id}:{job}"
        case Answer(result=PromptResult(delivery=delivery)):
            return f"answer:{delivery}"
        case Answer(error=None):
            return "answer:ok"
        case Answer(error=error):
            return f"answer:{error.code}"  # type: ignore[union-attr]
        case SaveMeta():
            return "meta"
    raise AssertionError(out)


# --- prompts ------------------------------------------------------------------------------


def test_a_prompt_to_an_idle_session_starts_a_turn_whose_result_is_completed() -> None:
    d = Drive()
    assert d.spawned() == ["status:idle"]
    assert d.prompt("hi", now=1.0) == ["user:prompted:hi", "status:running", "write:1:user", "answer:prompted"]
    assert d.frame(now=1.5, type="assistant", text="yo", delta=True) == ["assistant"]
    assert d.frame(now=3.25, type="result", stop_reason="end_turn") == ["result:end_turn", "status:idle"]
    [result] = d.events()[:1]
    assert result == ev.Result(stop_reason="end_turn", duration_ms=2250)


def test_during_a_turn_prompts_are_steered_or_else_held_and_sent_one_per_turn() -> None:
    d = Drive()
    d.spawned()
    d.prompt("first")
    assert d.prompt("left") == ["user:steered:left", "write:1:steer", "answer:steered"]

    held = Drive(steer=False)
    held.spawned()
    held.prompt("first")
    assert held.prompt("one") == ["answer:held"]
    assert held.prompt("two") == ["answer:held"]
    assert held.frame(type="result") == ["result:None", "status:idle", "user:held:one", "status:running",
                                         "write:1:user"]
    assert held.frame(type="result") == ["result:None", "status:idle", "user:held:two", "status:running",
                                         "write:1:user"]
    assert [c["text"] for c in [json.loads(o.data) for o in held.last if isinstance(o, Write)]] == ["two"]


def test_prompts_wait_for_the_harness_handshake() -> None:
    d = Drive(handshake=True)
    assert d.spawned() == ["status:starting"]
    assert d.prompt("early") == ["answer:held"]
    assert d.frame(type="init", vendor_session_id="v-1") == [
        "init", "meta", "status:idle", "user:held:early", "status:running", "write:1:user"]
    assert d.core.meta.vendor_session_id == "v-1"
    assert d.core.child_request().resume == "v-1"  # the next child resumes the conversation


# --- permissions --------------------------------------------------------------------------


def test_a_permission_waits_for_the_first_client_and_is_decided_once() -> None:
    d = Drive()
    d.spawned()
    d.prompt("go")
    assert d.ask_permission() == ["permission", "status:waiting"]
    assert d.prompt("meanwhile") == ["user:steered:meanwhile", "write:1:steer", "answer:steered"]
    assert d.decide("p1", "allow") == ["decided:p1:allow:c-1:cli", "status:running",
                                       "write:1:permission_decision", "answer:ok"]
    assert d.decide("p1", "deny") == ["answer:already_decided"]
    assert d.decide("p9", "deny") == ["answer:unknown_permission"]


def test_the_policy_answers_what_it_can() -> None:
    d = Drive(permissions=Permissions(mode="ask", allow_tools=["ba*"]))
    d.spawned()
    d.prompt("go")
    assert d.ask_permission() == ["permission", "status:waiting", "decided:p1:allow:policy", "status:running",
                                  "write:1:permission_decision"]


def test_a_permission_says_whether_the_policy_answers_it() -> None:
    d = Drive(permissions=Permissions(mode="ask", allow_tools=["ba*"]))
    d.spawned()
    d.prompt("go")
    d.ask_permission()
    assert [e.policy for e in d.events() if isinstance(e, ev.Permission)] == [True]
    d = Drive()
    d.spawned()
    d.prompt("go")
    d.ask_permission()
    assert [e.policy for e in d.events() if isinstance(e, ev.Permission)] == [False]


def test_set_permissions_changes_the_mode_for_everyone_and_decides_what_it_now_allows() -> None:
    d = Drive()
    d.spawned()
    d.prompt("go")
    d.ask_permission("p1")
    assert d.ask(SessionSetPermissions(id=0, session_id=SID, mode="auto_edit"), by="c-2") == [
        "meta", "permissions:auto_edit:c-2", "answer:ok"]  # an exec request still waits
    assert d.core.info(0).permissions == "auto_edit" and d.core.meta.permissions.mode == "auto_edit"
    assert d.ask(SessionSetPermissions(id=0, session_id=SID, mode="auto"), by="c-2") == [
        "meta", "permissions:auto:c-2", "decided:p1:allow:policy", "status:running",
        "write:1:permission_decision", "answer:ok"]
    assert d.core.child_request().permissions.mode == "auto"
    assert d.ask_permission("p2") == ["permission", "status:waiting", "decided:p2:allow:policy",
                                      "status:running", "write:1:permission_decision"]
    d.close()
    d.exited(status=CLEAN)
    assert d.ask(SessionSetPermissions(id=0, session_id=SID, mode="ask")) == ["answer:session_closed"]


def test_a_permission_nobody_answers_is_denied_at_its_timeout() -> None:
    d = Drive(permission_timeout=5.0)
    d.spawned()
    d.prompt("go")
    d.ask_permission(now=1.0)
    assert d.core.next_deadline() == 6.0
    assert d.feed(Tick(), now=5.9) == []
    assert d.feed(Tick(), now=6.0) == ["decided:p1:timeout:session", "status:running", "write:1:permission_decision"]
    [write] = [o for o in d.last if isinstance(o, Write)]
    assert json.loads(write.data)["decision"] == "deny"


def test_an_interrupt_cancels_open_permissions_and_stops_the_turn() -> None:
    d = Drive()
    d.spawned()
    d.prompt("go")
    d.ask_permission()
    assert d.ask(SessionInterrupt(id=0, session_id=SID)) == [
        "decided:p1:cancelled:session", "status:running", "write:1:interrupt", "answer:ok"]


def test_a_request_the_harness_withdrew_is_named_as_it_says_by() -> None:
    d = Drive()
    d.spawned()
    d.prompt("go")
    d.ask_permission()
    withdrawn = d.frame(type="permission_decided", permission_id="p1", decision="cancelled", by="session")
    assert withdrawn[0] == "decided:p1:cancelled:session"  # by_name "session" too


# --- stall ----------------------------------------------------------------------------------


def test_a_silent_turn_is_stalled_at_the_threshold_and_recovers_with_the_next_event() -> None:
    d = Drive(stall_threshold=10.0)
    d.spawned()
    d.prompt("go", now=0.0)
    d.frame(now=3.0, type="assistant", text="thinking", delta=True)
    assert d.core.next_deadline() == 13.0
    assert d.feed(Tick(), now=12.9) == []
    assert d.feed(Tick(), now=13.0) == ["status:running:stalled"]
    assert d.core.next_deadline() is None
    assert d.frame(now=20.0, type="assistant", text="more", delta=True) == ["assistant", "status:running"]
    assert d.core.next_deadline() == 30.0


# --- crashes and restarts -----------------------------------------------------------------


def test_a_crash_mid_turn_cancels_permissions_ends_the_turn_then_exits() -> None:
    d = Drive()
    d.spawned()
    d.prompt("go", now=1.0)
    d.ask_permission(now=2.0)
    assert d.exited(now=4.0) == [
        "decided:p1:cancelled:session", "status:running", "error:harness_crashed", "result:error:is_error",
        "status:idle", "exit:crashed", "status:restarting"]
    error, result = [e for e in d.events() if isinstance(e, ev.Error | ev.Result)]
    assert "SIGKILL" in error.message  # type: ignore[union-attr]
    assert result == ev.Result(stop_reason="error", is_error=True, duration_ms=3000)
    assert d.events()[-2] == ev.Exit(signal="SIGKILL", reason="crashed")
    assert d.prompt("after") == ["answer:held"]
    assert d.spawned(gen=2, now=4.0) == ["meta", "restarted:1", "status:idle", "user:held:after",
                                         "status:running", "write:2:user"]
    assert d.events()[0] == ev.Restarted(attempt=1, reason="killed by SIGKILL")
    assert d.core.restarts == 1 and d.core.meta.restarts == 1


def test_a_child_that_cannot_start_crashes_and_the_supervisor_giving_up_fails_the_session() -> None:
    d = Drive(restart_intensity=1, restart_period=30.0)
    assert d.feed(ChildSpawnFailed(gen=1, code="launch_failed", message="no such binary")) == [
        "error:launch_failed", "status:starting", "exit:crashed", "status:restarting"]
    assert d.core.settled
    assert d.prompt("lost?") == ["answer:held"]
    assert d.feed(ChildSpawnFailed(gen=2, code="launch_failed", message="no such binary")) == [
        "meta", "restarted:1", "error:launch_failed", "exit:crashed"]
    assert d.feed(GaveUp()) == ["error:restart_intensity", "error:prompts_not_delivered", "status:failed", "meta"]
    assert "more than 1 times in 30 s (last: no such binary)" in d.events()[0].message  # type: ignore[union-attr]
    assert d.core.finished and d.core.meta.closed_reason == "failed"
    assert d.prompt("hello?") == ["answer:session_closed"]
    assert d.close() == ["answer:ok"]


def test_a_broken_frame_is_reported_and_names_the_crash() -> None:
    d = Drive()
    d.spawned()
    assert d.feed(ChildFrame(gen=1, data=b"not json")) == ["error:protocol_error"]  # the session goes on
    assert d.feed(ChildBroken(gen=1, code="frame_too_large", message="a 20 MiB line")) == ["error:frame_too_large"]
    d.exited(status=ExitStatus(reason="killed", signal="SIGTERM"))
    d.spawned(gen=2)
    assert d.events()[0] == ev.Restarted(attempt=1, reason="a 20 MiB line")


def test_news_of_a_dead_generation_is_dropped_and_frames_are_tagged_with_their_generation() -> None:
    d = Drive()
    d.spawned()
    assert d.prompt("to one") == ["user:prompted:to one", "status:running", "write:1:user", "answer:prompted"]
    d.exited(gen=1)
    d.spawned(gen=2)
    assert d.frame(gen=1, type="assistant", text="from the dead") == []
    assert d.exited(gen=1) == []
    assert d.spawned(gen=1) == []
    assert d.prompt("to two") == ["user:prompted:to two", "status:running", "write:2:user", "answer:prompted"]
    assert d.frame(gen=2, type="assistant", text="alive") == ["assistant"]


# --- the end ----------------------------------------------------------------------------------


def test_close_of_a_running_turn_cancels_says_goodbye_then_ends_it_interrupted() -> None:
    d = Drive(goodbye=True)
    d.spawned()
    d.prompt("go", now=1.0)
    d.ask_permission()
    assert d.close(now=2.0) == ["status:closing", "decided:p1:cancelled:session", "close:1"]
    [close] = [o for o in d.last if isinstance(o, CloseChild)]
    assert close.goodbye == (GOODBYE,)
    assert d.ask_permission("p2") == ["permission", "decided:p2:cancelled:session"]
    assert d.prompt("too late") == ["answer:session_closed"]
    assert d.close() == []  # joins the close under way
    assert d.exited(now=3.0, status=CLEAN) == [
        "result:interrupted", "exit:closed", "status:closed", "meta", "answer:ok", "answer:ok"]
    assert d.events()[0] == ev.Result(stop_reason="interrupted", duration_ms=2000)
    assert d.events()[1] == ev.Exit(exit_code=0, reason="closed")
    assert d.core.meta.state == "closed" and d.core.meta.closed_reason == "closed"
    assert d.core.pid is None


def test_close_while_restarting_ends_at_once_and_a_late_child_is_sent_away() -> None:
    d = Drive()
    d.spawned()
    d.exited()
    assert d.close() == ["status:closing", "exit:closed", "status:closed", "meta", "answer:ok"]
    assert d.spawned(gen=2) == ["close:2"]


def test_the_daemon_stopping_a_session_closes_it_and_reports_held_prompts() -> None:
    d = Drive(steer=False)
    d.spawned()
    d.prompt("busy")
    d.prompt("waiting")
    assert d.feed(Stop()) == ["status:closing", "close:1"]
    assert d.feed(Stop()) == []
    assert d.exited(status=CLEAN) == ["result:interrupted", "error:prompts_not_delivered", "exit:closed",
                                      "status:closed", "meta"]
    assert "the daemon stopped" in d.events()[1].message  # type: ignore[union-attr]
    assert d.core.meta.closed_reason == "daemon_stopped"


def test_an_abandoned_close_still_logs_the_exit() -> None:
    d = Drive()
    d.spawned()
    d.feed(Stop())
    assert d.feed(Abandoned()) == ["exit:closed", "status:closed", "meta"]
    assert d.events()[0] == ev.Exit(reason="closed")


def test_a_bug_is_reported_as_an_error_before_the_exit() -> None:
    d = Drive()
    d.spawned()
    d.prompt("go")
    d.ask_permission()
    with pytest.raises(RuntimeError):
        d.feed(ChildFrame(gen=1, data=b"boom"))
    assert d.feed(Abort(code="internal", message="the session failed: RuntimeError")) == [
        "error:internal", "decided:p1:cancelled:session", "status:running", "result:error:is_error",
        "status:idle", "exit:killed", "status:failed", "meta"]
    assert d.core.meta.state == "failed" and d.core.meta.closed_reason == "internal_error"


def test_set_model_reaches_the_child_and_the_next_launch() -> None:
    d = Drive()
    d.spawned()
    assert d.ask(SessionSetModel(id=0, session_id=SID, model="large")) == ["write:1:set_model", "meta", "answer:ok"]
    assert d.core.meta.model == "large" and d.core.child_request().model == "large"


def test_a_resumed_session_announces_its_first_child_as_restarted_resumed() -> None:
    d = Drive()
    d.core = SessionCore(msgspec.structs.replace(META, restarts=2), d.request, d.driver, SessionsConfig(),
                         now=0.0, resumed=True)
    assert d.spawned() == ["meta", "restarted:3", "status:starting", "status:idle"]
    (restarted,) = [e for e in d.events() if isinstance(e, ev.Restarted)]
    assert restarted == ev.Restarted(attempt=3, reason="resumed")
    assert d.core.info(last_seq=9).restarts == 3
    # a later crash is an ordinary restart again
    d.exited()
    assert d.spawned(gen=2)[:2] == ["meta", "restarted:4"]
    (again,) = [e for e in d.events() if isinstance(e, ev.Restarted)]
    assert again.reason == "killed by SIGKILL"


# --- client-side work ---------------------------------------------------------------------


def test_work_runs_for_the_generation_that_asked_and_its_outcome_goes_back_to_that_translator() -> None:
    d = Drive()
    d.spawned()
    assert d.frame(type="work", id=1, job="read") == ["run:1:1:read"]
    assert d.feed(WorkDone(gen=1, id=1, outcome="content")) == ["write:1:done"]
    assert json.loads(d.last[0].data) == {"type": "done", "id": 1, "outcome": "content"}  # type: ignore[union-attr]
    # A job of a child that died is dropped: the next child's translator never hears of it.
    assert d.frame(type="work", id=2, job="wait") == ["run:1:2:wait"]
    d.exited()
    d.spawned(gen=2)
    assert d.feed(WorkDone(gen=1, id=2, outcome="exited")) == []
