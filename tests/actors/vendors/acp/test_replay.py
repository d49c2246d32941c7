"""The ACP translator over frames recorded from Gemini CLI 0.61.0, Copilot CLI 1.0.102,
claude-code-acp 0.16.2, OpenCode 1.18.33 (``opencode acp``) and codex-acp 0.16.0 (``record.py``), replayed synchronously: the frames it sends are the
ones that worked against the real agent, and the events are what clients must see."""

from __future__ import annotations

from typing import Any

import pytest

from actors.vendors.acp import jobs
from protocol.events import Assistant, Error, Init, Permission, Result, Tool

from .replay import replay

AGENTS = ("gemini", "copilot", "claude-acp", "opencode-acp", "codex-acp")
SCENARIOS = ("write", "shell", "deny", "cancel", "turns", "resume")


def said(events: list[Any]) -> str:
    return "".join(e.text for e in events if isinstance(e, Assistant))


def results(events: list[Any]) -> list[Result]:
    return [e for e in events if isinstance(e, Result)]


@pytest.mark.parametrize("agent", AGENTS)
@pytest.mark.parametrize("scenario", SCENARIOS)
def test_the_translator_sends_what_was_sent_to_the_real_agent(agent: str, scenario: str) -> None:
    done = replay(f"{agent}-{scenario}")
    assert done.sent == done.recorded
    assert done.sent[0]["method"] == "initialize"
    assert isinstance(done.events[0][0], Init)


@pytest.mark.parametrize("agent", AGENTS)
def test_three_turns_each_end_with_their_own_usage(agent: str) -> None:
    events = replay(f"{agent}-turns").all_events
    turns = results(events)
    assert [r.stop_reason for r in turns] == ["end_turn"] * 3
    assert said(events) == "One.Two.Three."
    if agent not in ("claude-acp", "codex-acp"):  # Zed's adapters report no turn usage
        # Copilot counts the whole session (usage_cumulative): each turn is still 20 in, 5 out.
        assert [(r.usage.input_tokens, r.usage.output_tokens) for r in turns] == [(20, 5)] * 3


@pytest.mark.parametrize("agent", AGENTS)
def test_an_interrupted_turn_ends_interrupted_and_the_next_one_runs(agent: str) -> None:
    done = replay(f"{agent}-cancel")
    first, second = results(done.all_events)
    assert (first.stop_reason, first.is_error) == ("interrupted", False)
    assert second.stop_reason == "end_turn"
    assert said(done.all_events).endswith("After.")
    assert any(frame.get("method") == "session/cancel" for frame in done.sent)


@pytest.mark.parametrize("agent", AGENTS)
def test_a_denied_command_picks_the_agents_reject_option(agent: str) -> None:
    done = replay(f"{agent}-deny")
    (ask,) = [e for e in done.all_events if isinstance(e, Permission)]
    assert ask.kind == "exec" and "touch denied.txt" in str(ask.input)
    assert set(ask.options) == {"allow", "deny", "allow_always"}
    answer = next(f for f in done.sent if "result" in f and isinstance(f["result"], dict)
                  and "outcome" in f["result"])
    chosen = answer["result"]["outcome"]["optionId"]
    assert chosen == {"gemini": "cancel", "copilot": "reject_once", "claude-acp": "reject",
                      "opencode-acp": "reject", "codex-acp": "abort"}[agent]
    tools = [e for e in done.all_events if isinstance(e, Tool) and e.call_id == ask.permission_id]
    assert tools[0].phase == "started"
    # The tool call is announced before its permission, under the same id.
    assert done.all_events.index(tools[0]) < done.all_events.index(ask)


@pytest.mark.parametrize("agent", ("gemini", "claude-acp", "opencode-acp"))
def test_a_write_through_fs_is_one_edit_tool_after_the_agents_own_permission(agent: str) -> None:
    done = replay(f"{agent}-write")
    events = done.all_events
    asks = [e for e in events if isinstance(e, Permission)]
    assert [a.kind for a in asks] == ["edit"]  # the write itself does not ask again
    writes = [e for e in events if isinstance(e, Tool) and e.name == "write_text_file"]
    assert [(w.phase, w.kind, w.is_error) for w in writes] == [
        ("started", "edit", False), ("completed", "edit", False)]
    assert writes[0].input["path"].endswith("/work/hello.txt")
    jobs_done = [w.job for w in done.work]
    assert jobs.WriteFile(path=writes[0].input["path"], content="hi\n") in jobs_done
    if agent == "gemini":  # it reads first; a missing file is empty content, not an error
        assert jobs_done[0] == jobs.ReadFile(path=writes[0].input["path"], missing_empty=True)
    assert results(events)[-1].stop_reason == "end_turn"


def test_claude_runs_its_command_in_a_client_terminal() -> None:
    done = replay("claude-acp-shell")
    kinds = [type(w.job).__name__ for w in done.work]
    assert kinds == ["OpenTerminal", "WaitTerminal", "TerminalOutput", "CloseTerminal"]
    opened = done.work[0].job
    assert isinstance(opened, jobs.OpenTerminal)
    assert (opened.command, opened.args, opened.limit) == ("echo made > made.txt", [], 32000)
    assert opened.cwd.endswith("/work")
    closing = done.work[-1].job
    assert isinstance(closing, jobs.CloseTerminal) and closing.release


@pytest.mark.parametrize("agent", AGENTS)
def test_a_new_process_resumes_the_session_without_replaying_it(agent: str) -> None:
    done = replay(f"{agent}-resume")
    first, second = done.events
    (init1,), (init2,) = ([e for e in child if isinstance(e, Init)][:1] for child in done.events)
    assert init2.vendor_session_id == init1.vendor_session_id
    method = {"claude-acp": "session/resume", "opencode-acp": "session/resume",
              "codex-acp": "session/resume"}.get(agent, "session/load")
    assert any(f.get("method") == method for f in done.sent)
    assert [e for e in second if isinstance(e, Error)] == []
    # Nothing of the replayed conversation comes out again: only the new turn's answer.
    assert said(second) == "Apricot."
    assert said(first) == "Noted: apricot."


def test_opencode_asks_with_the_command_and_runs_it_itself() -> None:
    done = replay("opencode-acp-shell")
    (ask,) = [e for e in done.all_events if isinstance(e, Permission)]
    assert (ask.tool, ask.kind) == ("execute", "exec")
    assert ask.input["command"] == "echo made > made.txt"
    assert done.work == []  # no client terminal: OpenCode runs bash in its own process
    tools = [e for e in done.all_events if isinstance(e, Tool) and e.call_id == ask.permission_id]
    assert (tools[-1].phase, tools[-1].is_error) == ("completed", False)


def test_codex_acp_patches_its_file_itself_after_asking() -> None:
    done = replay("codex-acp-write")
    events = done.all_events
    (ask,) = [e for e in events if isinstance(e, Permission)]
    assert ask.kind == "edit"
    edits = [e for e in events if isinstance(e, Tool) and e.call_id == ask.permission_id]
    assert (edits[-1].phase, edits[-1].kind, edits[-1].is_error) == ("completed", "edit", False)
    assert done.work == []  # no fs/write_text_file: the patch is applied by Codex itself
