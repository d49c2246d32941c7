"""Session events as readable text, for ``corral attach`` and ``corral logs``; and the rows of
``corral harnesses`` (``harness_rows``).

Assistant and thought deltas are written inline as they arrive; every other event gets a
line of its own (ending a pending inline line first). A whole ``assistant`` message that
repeats the deltas just streamed is the harness's consolidated copy and is not printed
twice. Colour (ANSI) only when asked for: the CLI asks when stdout is a terminal and
``NO_COLOR`` is unset. Every write is flushed, so a pipe sees text as it streams.

A question (``ask``) is printed once. On a terminal it stays the last line: a line that
arrives meanwhile erases it, takes its place and redraws it below; elsewhere (a pipe, a
file) the line simply follows it.
"""

from __future__ import annotations

import json
from typing import Any, Literal, TextIO

from protocol.models import Detection
from protocol.sandbox import SandboxInfo
from protocol.events import (
    Assistant,
    Checkpoint,
    Compaction,
    Error,
    Event,
    Exit,
    Init,
    Limits,
    Permission,
    PermissionDecided,
    PermissionsChanged,
    Restarted,
    Result,
    SandboxEvent,
    Status,
    Thought,
    Tool,
    User,
    UsageReport,
    Workspace,
)

__all__ = ["Renderer", "describe", "harness_rows", "short"]

_DIM, _RED, _RESET = "\x1b[2m", "\x1b[31m", "\x1b[0m"
_ERASE_LINE = "\r\x1b[2K"


class Renderer:
    """Writes events to ``out`` as text; keeps only the state of the line being streamed."""

    def __init__(self, out: TextIO, *, color: bool = False, terminal: bool = False) -> None:
        self.out = out
        self.color = color
        self.terminal = terminal
        """Whether ``out`` is a terminal, where a question can be erased and redrawn."""
        self._inline: Literal["assistant", "thought"] | None = None
        self._streamed = ""
        self._question: str | None = None
        self._question_shown = False

    def render(self, event: Event) -> None:
        """Write one event (inline for text deltas, else a whole line)."""
        match event:
            case Assistant(text=text, delta=True):
                self._stream("assistant", text)
            case Thought(text=text, delta=True):
                self._stream("thought", text)
            case Assistant(text=text):
                if not (self._inline == "assistant" and self._streamed == text):
                    self.line(text)
                self._end_inline()
            case Thought(text=text):
                if not (self._inline == "thought" and self._streamed == text):
                    self.line(self._paint(f"(thinking) {text}", _DIM))
                self._end_inline()
            case _:
                self.line(describe(event, color=self.color))

    def line(self, text: str) -> None:
        """Write ``text`` on a line of its own (on a terminal, an open question moves below it)."""
        self._end_inline()
        self._leave_question()
        self.out.write(text + "\n")
        self._show_question()
        self.out.flush()

    def ask(self, question: str) -> None:
        """Show a question that stays the last line until ``answered``."""
        self._end_inline()
        self._question = question
        self._show_question()
        self.out.flush()

    def answered(self, *, echoed: bool) -> None:
        """The question is gone; ``echoed`` when the terminal already moved to a new line.

        A question withdrawn unanswered is erased on a terminal, ended with a newline elsewhere.
        """
        if self._question_shown and not echoed:
            self.out.write(_ERASE_LINE if self.terminal else "\n")
        self._question = None
        self._question_shown = False
        self.out.flush()

    def finish(self) -> None:
        """End a pending inline line (before leaving, or before a prompt)."""
        self._end_inline()
        self.out.flush()

    def _stream(self, kind: Literal["assistant", "thought"], text: str) -> None:
        self._leave_question()
        if self._inline != kind:
            self._end_inline()
            self._inline = kind
            self._streamed = ""
            if kind == "thought":
                self.out.write(self._paint("(thinking) ", _DIM))
        self._streamed += text
        self.out.write(self._paint(text, _DIM) if kind == "thought" else text)
        self.out.flush()

    def _end_inline(self) -> None:
        if self._inline is not None:
            self.out.write("\n")
            self._inline = None
            self._streamed = ""
            self._show_question()

    def _leave_question(self) -> None:
        """Make room for output under a shown question: erase it (a terminal) or end its line."""
        if not self._question_shown:
            return
        self._question_shown = False
        if self.terminal:
            self.out.write(_ERASE_LINE)  # redrawn by ``_show_question`` after the output
        else:
            self.out.write("\n")
            self._question = None  # printed once; what follows goes below it

    def _show_question(self) -> None:
        if self._question is not None and not self._question_shown:
            self.out.write(self._question)
            self._question_shown = True

    def _paint(self, text: str, code: str) -> str:
        return _paint(text, code, self.color)


def describe(event: Event, *, color: bool = False) -> str:
    """One line for an event that is not streamed text."""
    def dim(text: str) -> str:
        return _paint(text, _DIM, color)

    def red(text: str) -> str:
        return _paint(text, _RED, color)

    match event:
        case User(text=text, delivery=delivery):
            return f"> {text} ({delivery})"
        case Tool(name=name, kind=kind, phase=phase, input=tool_input, output=output, is_error=failed):
            line = _tool_line(name, kind, phase, tool_input, output, failed)
            return red(line) if failed and phase == "completed" else line
        case Permission(permission_id=pid, tool=tool, kind=kind, input=tool_input, options=options):
            return f"? permission {pid}: {tool} [{kind}] {short(tool_input)} ({'/'.join(options)})"
        case PermissionDecided(permission_id=pid, decision=decision, by=by, by_name=by_name):
            return f"permission {pid}: {decision} (by {by_name or by})"
        case PermissionsChanged(mode=mode, by=by):
            return dim(f"· permission mode {mode} (by {by})")
        case Result():
            return _result_line(event)
        case Error(error_class=error_class, code=code, message=message):
            return red(f"error [{error_class}] {code}: {message}")
        case Status(state=state, stalled=stalled):
            return dim(f"· {state}{' (stalled)' if stalled else ''}")
        case Init(model=model, cwd=cwd, vendor_session_id=vendor_id, sandbox=sandbox):
            boxed = (f", sandboxed: {sandbox.effective}, net {sandbox.net}"
                     if isinstance(sandbox, SandboxInfo) else "")
            return dim(f"· init {model or '?'} in {cwd or '?'} (vendor session {vendor_id or '?'}{boxed})")
        case Restarted(attempt=attempt, reason=reason):
            return f"↻ restarted (attempt {attempt}): {reason}"
        case Exit(exit_code=code, signal=sig, reason=reason):
            how = (f"signal {sig}" if sig else f"code {code}" if code is not None
                   else "its node or node agent was lost" if reason == "lost" else "no status")
            return f"■ exit: {reason} ({how})"
        case UsageReport(input_tokens=tokens_in, output_tokens=tokens_out):
            return dim(f"· usage in {tokens_in} / out {tokens_out} tokens")
        case Limits(windows=windows):
            parts = [f"{w.name} {w.used_percent:g}%" if w.used_percent is not None else w.name
                     for w in windows]
            return dim(f"· limits: {', '.join(parts) or 'none'}")
        case Workspace(state=state, branch=branch, path=path, changed_files=changed):
            return dim(f"· worktree {state}: {branch} at {path} ({changed} changed file(s))")
        case Checkpoint(turn=turn, usage=usage, stop_reason=stop, resumed=resumed):
            how = "resumed at" if resumed else "after"
            end = f": {stop}" if stop else ""
            return dim(f"· checkpoint {how} turn {turn} (in {usage.input_tokens} / out "
                       f"{usage.output_tokens} tokens){end}")
        case Compaction():
            return dim(compaction_line(event))
        case SandboxEvent(kind=kind, host=host, port=port, decision=decision, count=count):
            again = f" ×{count} more" if count > 1 else ""
            return red(f"⊘ sandbox: {kind} {decision}{again}: {host}:{port} (not in allow_hosts)")
        case Assistant(text=text) | Thought(text=text):
            return text


def harness_rows(found: list[Detection], *, models: bool = False) -> list[list[str]]:
    """The table of ``corral harnesses``: whether each CLI is logged in (where its detection
    knows) or, for a harness of model providers (native), which providers' key variables are
    set; the path of an available harness, else why not (an available one whose models could
    not be listed shows that reason after its path); ``models`` adds the models each offers."""
    rows = [["HARNESS", "AVAILABLE", "VERSION", "LOGIN / KEYS", "PATH / REASON",
             *(["MODELS"] if models else [])]]
    for one in found:
        where = one.path or "-"
        if not one.available:
            where = one.reason or where
        elif one.reason:
            where = f"{where} ({one.reason})"
        rows.append([one.harness, "yes" if one.available else "no", one.version or "-",
                     _login(one), where,
                     *([", ".join(one.features.models) or "-"] if models else [])])
    return rows


def _login(found: Detection) -> str:
    """``logged in``/``logged out``/``-`` (unknown, or no CLI found to be logged in to); for
    providers, those whose key variable is set."""
    providers = found.features.providers
    if not providers:
        known = {"logged_in": "logged in", "logged_out": "logged out"}.get(found.login, "-")
        return known if found.path else "-"
    keyed = [p.name for p in providers if p.api_key_env and p.has_key]
    return f"keys: {', '.join(keyed)}" if keyed else "no key set"


def compaction_line(event: Compaction) -> str:
    """``· compacted …``: tokens before → after, what went, and any warning."""
    what = [f"{len(event.elided)} tool output(s) elided"] if event.elided else []
    if event.dropped_turns:
        how = "summarized" if event.summarized else "dropped"
        what.append(f"{event.dropped_turns} turn(s) {how}")
    line = (f"· compacted ({event.reason}): ~{event.tokens_before} → ~{event.tokens_after} "
            f"tokens; {', '.join(what) or 'nothing left to compact'}")
    if event.exhausted and what:
        line += " (still above the target)"
    return line + (f"; warning: {event.warning}" if event.warning else "")


def short(value: Any, limit: int = 160) -> str:
    """``value`` on one line (JSON unless it is a string), cut to ``limit`` characters."""
    if value is None:
        return ""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    text = " ⏎ ".join(part for part in text.strip().splitlines() if part.strip())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _tool_line(name: str, kind: str, phase: str, tool_input: Any, output: Any, failed: bool) -> str:
    head = f"{name} [{kind}]"
    if phase == "started":
        return f"⚙ {head} started {short(tool_input)}".rstrip()
    if phase == "updated":
        return f"⚙ {head} updated {short(output)}".rstrip()
    if failed:
        return f"✗ {head} failed {short(output)}".rstrip()
    return f"✓ {head} completed {short(output)}".rstrip()


def _paint(text: str, code: str, color: bool) -> str:
    return f"{code}{text}{_RESET}" if color else text


def _result_line(result: Result) -> str:
    usage = result.usage
    parts = [f"— {result.stop_reason or 'done'}{' (error)' if result.is_error else ''}",
             f"in {usage.input_tokens} / out {usage.output_tokens} tokens"]
    if usage.cache_read_tokens or usage.cache_write_tokens:
        parts.append(f"cache read {usage.cache_read_tokens} / write {usage.cache_write_tokens}")
    if result.cost_usd is not None:
        parts.append(f"${result.cost_usd:.2f}")
    if result.duration_ms is not None:
        parts.append(f"{result.duration_ms} ms")
    return " · ".join(parts)
