"""Session events as text: inline deltas, one line per other event, open questions kept last."""

from __future__ import annotations

import io

from protocol.events import (
    Assistant,
    Error,
    Exit,
    Permission,
    PermissionDecided,
    Result,
    Status,
    Thought,
    Tool,
    Usage,
    User,
)
from supervisor.cli.render import Renderer, describe, short


def _render(*events: object, color: bool = False) -> str:
    out = io.StringIO()
    renderer = Renderer(out, color=color)
    for event in events:
        renderer.render(event)  # type: ignore[arg-type]
    renderer.finish()
    return out.getvalue()


def test_deltas_stream_inline_and_the_consolidated_copy_is_not_repeated() -> None:
    text = _render(User(text="hi"), Assistant(text="ec", delta=True), Assistant(text="ho", delta=True),
                   Assistant(text="echo"), Result(stop_reason="end_turn"))
    assert text == "> hi (prompted)\necho\n— end_turn · in 0 / out 0 tokens\n"


def test_a_whole_message_that_differs_is_printed() -> None:
    assert _render(Assistant(text="a", delta=True), Assistant(text="b")) == "a\nb\n"


def test_thoughts_are_marked_and_dimmed_only_with_colour() -> None:
    assert _render(Thought(text="hm", delta=True), Assistant(text="ok", delta=True)) == "(thinking) hm\nok\n"
    assert "\x1b[2m" in _render(Thought(text="hm", delta=True), color=True)
    assert "\x1b" not in _render(Thought(text="hm", delta=True), Error(code="c", message="m"))


def test_tool_lines() -> None:
    started = Tool(call_id="t", name="bash", kind="exec", phase="started", input={"command": "ls"})
    done = Tool(call_id="t", name="bash", kind="exec", phase="completed", output="a\nb\n")
    failed = Tool(call_id="t", name="bash", kind="exec", phase="completed", output="no", is_error=True)
    assert describe(started) == '⚙ bash [exec] started {"command": "ls"}'
    assert describe(done) == "✓ bash [exec] completed a ⏎ b"
    assert describe(failed) == "✗ bash [exec] failed no"


def test_result_error_status_exit_permission_lines() -> None:
    result = Result(stop_reason="end_turn", usage=Usage(input_tokens=10, output_tokens=3),
                    cost_usd=0.0, duration_ms=120)
    assert describe(result) == "— end_turn · in 10 / out 3 tokens · $0.00 · 120 ms"
    assert describe(Error(code="claude.auth", message="log in", error_class="auth")) == \
        "error [auth] claude.auth: log in"
    assert describe(Status(state="running", stalled=True)) == "· running (stalled)"
    assert describe(Exit(exit_code=3, reason="crashed")) == "■ exit: crashed (code 3)"
    assert describe(Exit(signal="SIGKILL", reason="killed")) == "■ exit: killed (signal SIGKILL)"
    asked = Permission(permission_id="p1", tool="bash", kind="exec", input={"command": "rm"})
    assert describe(asked) == '? permission p1: bash [exec] {"command": "rm"} (allow/deny)'
    assert describe(PermissionDecided(permission_id="p1", decision="deny", by="c-2")) == \
        "permission p1: deny (by c-2)"


def test_an_open_question_stays_the_last_line() -> None:
    out = io.StringIO()
    renderer = Renderer(out)
    renderer.ask("allow? ")
    renderer.render(Status(state="waiting"))
    renderer.answered(echoed=False)
    renderer.render(Status(state="running"))
    assert out.getvalue() == "allow? \n· waiting\nallow? \n· running\n"


def test_short_cuts_and_flattens() -> None:
    assert short("x" * 200, 10) == "x" * 9 + "…"
    assert short(None) == ""
    assert short({"a": [1, 2]}) == '{"a": [1, 2]}'
