"""The sans-IO fold of a prompt's turn and of a session's log (``supervisor.mcpserver.turn``)."""

from __future__ import annotations

from protocol.events import (
    Assistant,
    Error,
    Exit,
    Permission,
    PermissionDecided,
    Result,
    Status,
    Tool,
    Usage,
    User,
)
from supervisor.mcpserver.turn import Digest, PromptTurn


def test_the_turn_starts_at_its_own_prompt_and_ends_at_the_next_result() -> None:
    turn = PromptTurn("do it")
    turn.receive(User(text="someone else's"))
    turn.receive(Assistant(text="not ours", delta=False))
    turn.receive(Result(stop_reason="end_turn"))  # the turn before ours (ours was held)
    assert not turn.started and not turn.done
    turn.receive(User(text="do it", delivery="held"))
    turn.receive(Assistant(text="Let me ", delta=True))
    turn.receive(Assistant(text="look.", delta=True))
    turn.receive(Assistant(text="Let me look.", delta=False))  # the consolidated copy
    turn.receive(Tool(call_id="t1", name="bash", phase="started"))
    turn.receive(Assistant(text="Done: ", delta=True))
    turn.receive(Assistant(text="42", delta=True))
    turn.receive(Assistant(text="sub", delta=False, subagent="helper"))  # not the session's own
    assert turn.final_text == "Done: 42" and not turn.done
    turn.receive(Result(stop_reason="end_turn", usage=Usage(output_tokens=5), cost_usd=0.25))
    assert turn.done
    assert turn.answer("idle") == {"state": "idle", "text": "Done: 42", "stop_reason": "end_turn",
                                   "is_error": False, "usage": {"input_tokens": 0, "output_tokens": 5,
                                                                "cache_read_tokens": 0,
                                                                "cache_write_tokens": 0},
                                   "cost_usd": 0.25}


def test_a_whole_message_that_differs_from_the_deltas_is_a_new_message() -> None:
    turn = PromptTurn("p")
    turn.receive(User(text="p"))
    turn.receive(Assistant(text="partial", delta=True))
    turn.receive(Assistant(text="a whole other message", delta=False))
    assert turn.final_text == "a whole other message"


def test_an_error_result_is_an_ordinary_answer_with_its_error() -> None:
    turn = PromptTurn("p")
    turn.receive(User(text="p"))
    turn.receive(Error(code="claude.limit.rate_limited", message="slow down"))
    turn.receive(Result(stop_reason="error", is_error=True))
    answer = turn.answer("idle")
    assert answer["is_error"] is True and answer["text"] == ""
    assert answer["error"] == {"code": "claude.limit.rate_limited", "message": "slow down"}


def test_a_child_exit_or_a_closed_session_ends_the_turn_without_a_result() -> None:
    crashed = PromptTurn("p")
    crashed.receive(User(text="p"))
    crashed.receive(Exit(exit_code=3, reason="crashed"))
    assert crashed.done and crashed.answer("restarting")["stop_reason"] == "exit:crashed"
    assert crashed.answer("restarting")["is_error"] is True
    closed = PromptTurn("never delivered")
    closed.receive(Status(state="closed"))
    assert closed.done and closed.answer("closed")["stop_reason"] == "closed"


def test_open_permissions_are_the_undecided_ones() -> None:
    turn = PromptTurn("p")
    turn.receive(User(text="p"))
    turn.receive(Permission(permission_id="a", tool="bash", input={"command": "ls"}))
    turn.receive(Permission(permission_id="b", tool="edit"))
    turn.receive(PermissionDecided(permission_id="a", decision="allow", by="policy"))
    assert list(turn.permissions.open) == ["b"]
    turn.receive(Status(state="failed"))
    assert turn.permissions.open == {} and turn.done


def test_the_digest_keeps_the_last_result_and_the_open_requests() -> None:
    digest = Digest()
    digest.receive(3, Result(stop_reason="end_turn"))
    digest.receive(5, Permission(permission_id="p1", tool="bash", input={"command": "rm x"}))
    digest.receive(7, Result(stop_reason="max_tokens", is_error=True))
    assert digest.last_result is not None
    assert digest.last_result["seq"] == 7 and digest.last_result["stop_reason"] == "max_tokens"
    assert list(digest.permissions.open) == ["p1"]
