"""What a notification says: the notices a session's events make, and each format's request."""

from __future__ import annotations

import json

from actors.notify.compose import TEXT_LIMIT, Notice, Watch, render, wanted
from actors.notify.config import NotifyTarget
from protocol import events as ev

PAGE = "http://127.0.0.1:7433/#s-1"


def watch() -> Watch:
    return Watch("s-1", "fixer", "claude", PAGE)


def test_a_permission_for_a_person_notifies_with_the_tool_and_its_command() -> None:
    notice = watch().offer(ev.Permission(permission_id="p1", tool="Bash", kind="exec",
                                         input={"command": "rm -rf build", "description": "clean"}))
    assert notice == Notice(event="permission", session_id="s-1", name="fixer", harness="claude",
                            text="fixer asks to run Bash: rm -rf build", url=PAGE)


def test_a_permission_the_policy_answers_does_not_notify() -> None:
    assert watch().offer(ev.Permission(permission_id="p1", tool="Read", policy=True)) is None


def test_a_finished_turn_says_how_it_ended_and_how_long_it_took() -> None:
    done = watch().offer(ev.Result(stop_reason="end_turn", duration_ms=42_400, cost_usd=0.0123))
    assert done is not None and done.event == "turn_done" and done.turn_s == 42.4
    assert done.text == "fixer: turn is done (end_turn, 42 s, $0.0123)"
    failed = watch().offer(ev.Result(stop_reason="error", is_error=True))
    assert failed is not None and failed.text == "fixer: turn ended with an error (error)"
    assert failed.turn_s is None


def test_a_failed_session_notifies_with_its_last_error() -> None:
    w = watch()
    assert w.offer(ev.Error(code="restart_intensity", message="the harness crashed 4 times")) is None
    assert w.offer(ev.Status(state="idle")) is None
    failed = w.offer(ev.Status(state="failed"))
    assert failed is not None and failed.event == "session_failed"
    assert failed.text == "fixer failed: the harness crashed 4 times"


def test_other_events_and_tool_outputs_make_no_notice() -> None:
    w = watch()
    for event in (ev.Assistant(text="hello"), ev.Tool(call_id="t", name="Bash", output="x" * 10_000),
                  ev.Status(state="running"), ev.Exit(reason="closed")):
        assert w.offer(event) is None


def test_texts_are_redacted_and_clipped() -> None:
    key = "sk-ant-" + "a" * 40
    notice = Watch("s-1", None, "fake", PAGE).offer(ev.Permission(
        permission_id="p", tool="bash", input={"command": f"curl -H 'x-api-key: {key}' " + "y" * 500}))
    assert notice is not None
    assert key not in notice.text and "sk-***" in notice.text
    assert len(notice.text) == TEXT_LIMIT and notice.text.endswith("…")
    assert notice.text.startswith("s-1 asks to run bash: curl")  # no name: the id


def test_min_turn_s_and_events_choose_what_a_target_takes() -> None:
    slow_only = NotifyTarget(url="https://h.test/", events=["turn_done"], min_turn_s=30)
    w = watch()
    quick = w.offer(ev.Result(duration_ms=29_999))
    slow = w.offer(ev.Result(duration_ms=30_000))
    unknown = w.offer(ev.Result())
    ask = w.offer(ev.Permission(permission_id="p", tool="bash"))
    assert quick and slow and unknown and ask
    assert [wanted(slow_only, n) for n in (quick, slow, unknown, ask)] == [False, True, False, False]
    everything = NotifyTarget(url="https://h.test/")
    assert all(wanted(everything, n) for n in (quick, slow, unknown, ask))


def test_the_three_formats() -> None:
    notice = watch().offer(ev.Permission(permission_id="p1", tool="Bash", input={"command": "make"}))
    assert notice is not None
    headers, body = render(NotifyTarget(url="https://h.test/", headers={"X-Token": "t"}), notice)
    assert dict(headers) == {"content-type": "application/json", "x-token": "t"}
    assert json.loads(body) == {"event": "permission", "session": {"id": "s-1", "name": "fixer", "harness": "claude"},
                                "text": "fixer asks to run Bash: make", "url": PAGE}
    headers, body = render(NotifyTarget(url="https://ntfy.sh/t", format="ntfy"), notice)
    assert body == b"fixer asks to run Bash: make"
    assert dict(headers) == {"content-type": "text/plain; charset=utf-8", "title": "corral: permission",
                             "tags": "warning", "click": PAGE}
    headers, body = render(NotifyTarget(url="https://hooks.slack.com/x", format="slack"), notice)
    assert dict(headers) == {"content-type": "application/json"}
    assert json.loads(body) == {"text": f"fixer asks to run Bash: make <{PAGE}|open>"}
