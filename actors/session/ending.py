"""How a session ends: its close, an abandoned close, a bug, a log that takes no more events.

The second layer of ``SessionCore`` (``actors.session.core`` holds the theory of operation and
the state table; ``actors.session.corestate`` the state and the common steps). A close starts
with ``_begin_close`` (closing, open permissions cancelled, the translator's goodbye in the
child's ``CloseChild``) and ends with ``_finish_close`` once the child exited: a running turn
ends ``interrupted``, held prompts are reported, ``exit``, closed, every close request answered.
"""

from __future__ import annotations

from typing import Literal

import msgspec

from actors.harness import Send, Work
from actors.session.corestate import CoreState
from actors.session.messages import Answer, CloseChild, SaveMeta
from protocol import events as ev
from protocol.messages import Empty
from supervisor.proc.spec import ExitStatus

__all__ = ["Endings", "describe_exit", "exit_event"]


class Endings(CoreState):
    """The ends of a session (see the module docstring)."""

    def _begin_close(self, reason: str) -> None:
        self._closed_reason = reason
        self._set_lifecycle("closing")
        self._cancel_permissions()
        translator = self._translator
        if translator is None:
            self._finish_close(None)
            return
        goodbye: list[bytes] = []
        for out in translator.goodbye(self._now):
            if isinstance(out, Send):
                goodbye.append(out.data)
            elif not isinstance(out, Work):  # no job starts in a close
                self._on_event(out)
        self._out.append(CloseChild(gen=self._gen, goodbye=tuple(goodbye)))

    def _finish_close(self, status: ExitStatus | None) -> None:
        self._cancel_permissions()
        if self.tracker.turn_running:
            self._emit(self._complete(ev.Result(stop_reason="interrupted")))
        self._report_lost("the daemon stopped" if self._closed_reason == "daemon_stopped"
                          else "the session was closed")
        self._child_gone()
        self._emit(exit_event(status, "closed"))
        self._end("closed", self._closed_reason)

    def _on_abandoned(self) -> None:
        if self.finished:
            return
        if self.lifecycle != "closing":
            self._closed_reason = "daemon_stopped"
            self._set_lifecycle("closing")
        self._finish_close(None)

    def _on_abort(self, code: str, message: str) -> None:
        if self.finished:
            return
        self._emit(ev.Error(error_class="unknown", code=code, message=message))
        self._cancel_permissions()
        if self.tracker.turn_running:
            self._emit(self._complete(ev.Result(stop_reason="error", is_error=True)))
        self._report_lost("the session failed")
        if self._translator is not None:
            self._child_gone()
            self._emit(ev.Exit(reason="killed"))
        self._end("failed", "internal_error")

    def _on_storage_lost(self) -> None:
        if self.finished:
            return
        self.lifecycle = "failed"  # announced nowhere: the log takes no more events
        self._child_gone()
        self.meta = msgspec.structs.replace(self.meta, state="failed", closed_reason="storage_failed")
        self._out.append(SaveMeta(self.meta))

    def _report_lost(self, why: str) -> None:
        lost = self.prompts.lost(why)
        if lost is not None:
            self._emit(lost)

    def _end(self, lifecycle: Literal["closed", "failed"], closed_reason: str) -> None:
        self._set_lifecycle(lifecycle)
        self._save_meta(closed_reason=closed_reason)
        for call in self._closers:
            self._out.append(Answer(call=call, result=Empty()))
        self._closers.clear()


def describe_exit(status: ExitStatus) -> str:
    """How a child ended, for messages: ``killed by SIGKILL`` or ``exited with status 3``."""
    if status.signal:
        return f"killed by {status.signal}"
    return f"exited with status {status.exit_code}"


def exit_event(status: ExitStatus | None, reason: Literal["crashed", "closed"]) -> ev.Exit:
    """The ``exit`` event of a child that ended with ``status`` (``None``: not known)."""
    if status is None:
        return ev.Exit(reason=reason)
    return ev.Exit(exit_code=status.exit_code, signal=status.signal, reason=reason)

