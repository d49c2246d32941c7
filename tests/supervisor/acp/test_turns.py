"""One attached session's prompts and permissions (``supervisor.acp.turns``), sans IO: events
in, actions out, in the order a subscription delivers them."""

from __future__ import annotations

from protocol import events as ev
from supervisor.acp.schema import Update
from supervisor.acp.turns import Answered, Ask, SessionTurns, Withdraw, stop_reason

ME = "c-me"


def live() -> SessionTurns:
    turns = SessionTurns("s-1", "/w", ME)
    assert turns.caught_up() == []
    return turns


def kinds(actions: list[object]) -> list[str]:
    return [a.session_update if isinstance(a, Update) else type(a).__name__ for a in actions]


def ask(pid: str, *, policy: bool = False) -> ev.Permission:
    return ev.Permission(permission_id=pid, tool="bash", kind="exec", input={"command": "ls"}, policy=policy)


def test_a_prompt_is_answered_by_the_result_of_the_turn_its_user_event_started() -> None:
    turns = live()
    token = turns.prompt_sent("hi")
    assert turns.receive(ev.User(text="hi")) == []  # the editor's own prompt is not echoed
    assert kinds(turns.receive(ev.Assistant(text="yo", delta=True))) == ["agent_message_chunk"]
    out = turns.receive(ev.Result(stop_reason="end_turn"))
    assert kinds(out) == ["usage_update", "Answered"] and out[-1] == Answered(token, "end_turn")


def test_another_clients_turn_does_not_answer_a_held_prompt() -> None:
    turns = live()
    assert kinds(turns.receive(ev.User(text="theirs"))) == ["user_message_chunk"]
    token = turns.prompt_sent("mine")  # held behind their turn
    assert kinds(turns.receive(ev.Result(stop_reason="end_turn"))) == ["usage_update"]
    assert turns.receive(ev.User(text="mine", delivery="held")) == []
    assert turns.receive(ev.Result(stop_reason="interrupted"))[-1] == Answered(token, "cancelled")


def test_a_failed_turn_answers_with_the_sessions_error_code() -> None:
    turns = live()
    token = turns.prompt_sent("go")
    turns.receive(ev.User(text="go"))
    turns.receive(ev.Error(code="claude.limit.rate_limited", message="slow down", error_class="limit"))
    assert turns.receive(ev.Result(stop_reason="error", is_error=True))[-1] == Answered(
        token, "end_turn", ("claude.limit.rate_limited", "slow down"))
    token = turns.prompt_sent("again")
    turns.receive(ev.User(text="again"))
    assert turns.receive(ev.Result(is_error=True))[-1].error == ("turn_failed", "the turn ended with an error")  # type: ignore[union-attr]


def test_the_session_ending_or_the_subscription_dropping_answers_every_prompt() -> None:
    turns = live()
    first = turns.prompt_sent("a")
    assert turns.receive(ev.Status(state="closed")) == [
        Answered(first, "end_turn", ("session_closed", "session s-1 is closed"))]
    second = turns.prompt_sent("b")
    assert turns.abandon() == [Answered(second, "end_turn", ("session_closed", "session s-1 ended"))]
    third = turns.prompt_sent("c")
    turns.prompt_failed(third)
    assert turns.abandon() == []


def test_live_permissions_are_asked_unless_the_policy_answers_them() -> None:
    turns = live()
    assert turns.receive(ask("p1")) == [Ask(ask("p1"))]
    assert turns.receive(ask("p2", policy=True)) == []
    assert turns.receive(ev.PermissionDecided(permission_id="p2", decision="allow", by="policy")) == []
    assert turns.answered("p1") is True  # the editor's answer counts
    assert turns.receive(ev.PermissionDecided(permission_id="p1", decision="allow", by=ME)) == []


def test_a_permission_another_client_decides_first_is_withdrawn_and_the_late_answer_ignored() -> None:
    turns = live()
    turns.receive(ask("p1"))
    turns.receive(ask("p2"))
    assert turns.receive(ev.PermissionDecided(permission_id="p1", decision="allow_always", by="c-cli")) == [
        Withdraw("p1", "in_progress")]
    assert turns.receive(ev.PermissionDecided(permission_id="p2", decision="cancelled", by="session")) == [
        Withdraw("p2", "failed")]
    assert turns.answered("p1") is False and turns.answered("p2") is False


def test_a_replay_shows_everything_and_asks_what_is_still_undecided_once_caught_up() -> None:
    turns = SessionTurns("s-1", "/w", ME)
    history = [ev.User(text="old prompt"), ask("p1"), ask("p2"),
               ev.PermissionDecided(permission_id="p1", decision="deny", by="c-old"),
               ev.Result(stop_reason="end_turn")]
    out = [a for event in history for a in turns.receive(event)]
    assert kinds(out) == ["user_message_chunk", "usage_update"]  # no Ask, no Withdraw, no Answered
    assert turns.caught_up() == [Ask(ask("p2"))]
    assert turns.answered("p2") is True


def test_stop_reasons() -> None:
    reasons = {r: stop_reason(ev.Result(stop_reason=r)) for r in
               ["end_turn", "interrupted", "cancelled", "max_tokens", "length", "refusal", "max_turns", None]}
    assert reasons == {"end_turn": "end_turn", "interrupted": "cancelled", "cancelled": "cancelled",
                       "max_tokens": "max_tokens", "length": "max_tokens", "refusal": "refusal",
                       "max_turns": "max_turn_requests", None: "end_turn"}
