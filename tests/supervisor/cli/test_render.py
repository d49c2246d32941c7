"""Session events as text: inline deltas, one line per other event, open questions kept last."""

from __future__ import annotations

import io
import re

from protocol.events import (
    Assistant,
    Checkpoint,
    Error,
    Exit,
    Init,
    Permission,
    PermissionDecided,
    Result,
    SandboxEvent,
    Status,
    Thought,
    Tool,
    Usage,
    User,
)
from protocol.models import ChildProcess, Detection, Features, Placement, ProviderInfo, SessionInfo
from protocol.sandbox import SandboxInfo
from supervisor.cli.render import Renderer, describe, harness_rows, short
from supervisor.cli.tables import child_rows, session_rows


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
    assert describe(Exit(reason="lost")) == "■ exit: lost (its node or node agent was lost)"
    asked = Permission(permission_id="p1", tool="bash", kind="exec", input={"command": "rm"})
    assert describe(asked) == '? permission p1: bash [exec] {"command": "rm"} (allow/deny)'
    assert describe(PermissionDecided(permission_id="p1", decision="deny", by="c-2", by_name="browser")) == \
        "permission p1: deny (by browser)"
    assert describe(PermissionDecided(permission_id="p1", decision="deny", by="c-2")) == \
        "permission p1: deny (by c-2)"  # logged before by_name existed


def test_a_refused_connection_says_what_was_blocked() -> None:
    refused = SandboxEvent(host="evil.example", port=443)
    assert describe(refused) == "⊘ sandbox: network denied: evil.example:443 (not in allow_hosts)"
    assert describe(refused, color=True) == "\x1b[31m⊘ sandbox: network denied: evil.example:443 (not in allow_hosts)\x1b[0m"
    repeats = SandboxEvent(host="evil.example", port=443, count=12)
    assert describe(repeats) == "⊘ sandbox: network denied ×12 more: evil.example:443 (not in allow_hosts)"


def test_the_init_line_says_whether_and_how_the_session_is_sandboxed() -> None:
    plain = Init(model="m", cwd="/w", vendor_session_id="v")
    assert describe(plain) == "· init m in /w (vendor session v)"
    boxed = Init(model="m", cwd="/w", vendor_session_id="v",
                 sandbox=SandboxInfo(mode="auto", effective="bwrap", net="model"))
    assert describe(boxed) == "· init m in /w (vendor session v, sandboxed: bwrap, net model)"


def _screen(written: str) -> list[str]:
    """The lines a terminal shows for ``written``: ``\\r`` and erase-line applied."""
    lines, current = [], ""
    for part in re.split(r"(\n|\r\x1b\[2K)", written):
        if part == "\n":
            lines.append(current)
            current = ""
        elif part == "\r\x1b[2K":
            current = ""
        else:
            current += part
    return [*lines, current] if current else lines


PERMISSION = Permission(permission_id="p1", tool="bash", kind="exec", input={"command": "rm"})


def test_a_question_is_printed_once_when_lines_arrive_under_it() -> None:
    """``corral attach`` printed the question before and after ``· waiting``."""
    out = io.StringIO()
    renderer = Renderer(out)
    renderer.render(PERMISSION)
    renderer.ask("allow? ")
    renderer.render(Status(state="waiting"))
    renderer.answered(echoed=True)
    renderer.render(Status(state="running"))
    assert out.getvalue().count("allow? ") == 1
    assert out.getvalue().endswith("allow? \n· waiting\n· running\n")


def test_on_a_terminal_a_question_stays_the_last_line_shown_once() -> None:
    out = io.StringIO()
    renderer = Renderer(out, terminal=True)
    renderer.render(PERMISSION)
    renderer.ask("allow? ")
    renderer.render(Status(state="waiting"))
    renderer.render(Assistant(text="hm", delta=True))
    renderer.render(Assistant(text="hm"))
    asked = _screen(out.getvalue())
    assert asked[1:] == ["· waiting", "hm", "allow? "]
    renderer.answered(echoed=False)  # withdrawn: decided elsewhere
    renderer.render(PermissionDecided(permission_id="p1", decision="deny", by="c-2", by_name="cli"))
    assert _screen(out.getvalue())[1:] == ["· waiting", "hm", "permission p1: deny (by cli)"]


def test_short_cuts_and_flattens() -> None:
    assert short("x" * 200, 10) == "x" * 9 + "…"
    assert short(None) == ""
    assert short({"a": [1, 2]}) == '{"a": [1, 2]}'


def test_harness_rows_say_why_a_harness_is_unavailable_and_list_models() -> None:
    found = [
        Detection(harness="claude", available=True, version="2.1.197 (Claude Code)", path="/bin/claude",
                  features=Features(models=["sonnet", "haiku"]), login="logged_in"),
        Detection(harness="pi", available=False, path="/bin/pi",
                  reason="/bin/pi --version did not answer within 30s"),
        Detection(harness="codex", available=True, version="codex-cli 0.171.0", path="/bin/codex",
                  reason="models not listed: codex debug models exited with 1", login="logged_out"),
        Detection(harness="grok", available=False, reason="grok not found", login="logged_out"),
    ]
    assert harness_rows(found, models=True) == [
        ["HARNESS", "AVAILABLE", "VERSION", "LOGIN / KEYS", "PATH / REASON", "MODELS"],
        ["claude", "yes", "2.1.197 (Claude Code)", "logged in", "/bin/claude", "sonnet, haiku"],
        ["pi", "no", "-", "-", "/bin/pi --version did not answer within 30s", "-"],
        ["codex", "yes", "codex-cli 0.171.0", "logged out",
         "/bin/codex (models not listed: codex debug models exited with 1)", "-"],
        ["grok", "no", "-", "-", "grok not found", "-"],
    ]
    assert [len(row) for row in harness_rows(found)] == [5] * 5


def test_the_native_row_names_the_providers_whose_key_is_set() -> None:
    def native(*providers: ProviderInfo) -> Detection:
        return Detection(harness="native", available=True, path="/bin/python",
                         features=Features(providers=list(providers)))

    openai = ProviderInfo(name="openai", kind="openai", api_key_env="OPENAI_API_KEY", has_key=True)
    gemini = ProviderInfo(name="gemini", kind="gemini", api_key_env="GEMINI_API_KEY")
    local = ProviderInfo(name="local", kind="openai-chat")  # no key variable: none to set
    assert harness_rows([native(openai, gemini, local)])[1][3] == "keys: openai"
    assert harness_rows([native(gemini, local)])[1][3] == "no key set"
def test_a_checkpoint_is_one_line_with_its_turn_and_tokens() -> None:
    usage = Usage(input_tokens=40, output_tokens=9)
    assert describe(Checkpoint(turn=2, usage=usage)) == "· checkpoint after turn 2 (in 40 / out 9 tokens)"
    assert describe(Checkpoint(turn=3, usage=usage, stop_reason="completed")).endswith(": completed")
    assert describe(Checkpoint(turn=1, resumed=True)).startswith("· checkpoint resumed at turn 1")


def test_the_sessions_table_has_a_node_column_once_a_session_was_placed() -> None:
    def info(sid: str, placement: Placement | None) -> SessionInfo:
        return SessionInfo(id=sid, name=None, harness="fake", cwd="/w", model=None, state="idle",
                           created_at="t", last_seq=1, restarts=0, pid=None, placement=placement)

    local = [info("s-1", None)]
    assert session_rows(local)[0] == ["ID", "HARNESS", "STATE", "SEQ", "CREATED", "NAME"]
    placed = Placement(backend="ray", node_id="a3f1c0de77" * 5, node_ip="10.0.0.7", epoch=2)
    rows = session_rows([*local, info("s-2", placed)])
    assert rows[0][-1] == "NODE"
    assert [row[-1] for row in rows[1:]] == ["-", "10.0.0.7 (a3f1c0de)"]


def test_the_children_table_has_a_node_column_once_a_child_runs_on_a_node() -> None:
    here = ChildProcess(key="sessions/s-1", kind="fake", pid=41)
    assert child_rows([here]) == [["KEY", "KIND", "PID"], ["sessions/s-1", "fake", "41"]]
    there = ChildProcess(key="sessions/s-2", kind="claude", pid=7, node_id="a3f1")
    assert child_rows([here, there]) == [["KEY", "KIND", "PID", "NODE"],
                                         ["sessions/s-1", "fake", "41", "-"],
                                         ["sessions/s-2", "claude", "7", "a3f1"]]
