"""How a session ends: its close, an abandoned close, no more restarts, a bug, a dead log.

``SessionCore`` (``actors.session.core`` holds the theory of operation and the state table) is
composed of an ``Endings`` and the ``CoreState`` (``actors.session.corestate``) both act on. A
close starts with ``begin_close`` (closing, open permissions cancelled, the translator's
goodbye in the child's ``CloseChild``) and ends with ``finish_close`` once the child exited: a
running turn ends ``interrupted``, held prompts are reported, ``exit``, closed, every close
request answered. Every change of the lifecycle is a move of ``actors.session.lifecycle``'s
table.
"""

from __future__ import annotations

from typing import Literal

import msgspec

from actors.harness import Send, Work
from actors.session.corestate import CoreState
from actors.session.lifecycle import Move
from actors.session.messages import Answer, CloseChild, SaveMeta
from protocol import events as ev
from protocol.messages import Empty
from supervisor.proc.spec import ExitStatus

__all__ = ["Endings", "describe_exit", "exit_event"]


class Endings:
    """The ends of a session, acting on the core's ``CoreState`` (see the module docstring)."""

    __slots__ = ("_state",)

    def __init__(self, state: CoreState) -> None:
        self._state = state

    def begin_close(self, reason: str) -> None:
        """``session.close`` or a stop: closing; the child, if any, gets its goodbye."""
        s = self._state
        s.closed_reason = reason
        s.move("close")
        s.cancel_permissions()
        translator = s.translator
        if translator is None:
            self.finish_close(None)
            return
        goodbye: list[bytes] = []
        for out in translator.goodbye(s.now):
            if isinstance(out, Send):
                goodbye.append(out.data)
            elif not isinstance(out, Work):  # no job starts in a close
                s.on_event(out)
        s.out.append(CloseChild(gen=s.gen, goodbye=tuple(goodbye)))

    def finish_close(self, status: ExitStatus | None) -> None:
        """The closing session's child exited (``status``; ``None``: none ran, or not known)."""
        s = self._state
        s.cancel_permissions()
        if s.tracker.turn_running:
            s.emit(s.complete(ev.Result(stop_reason="interrupted")))
        self.report_lost("the daemon stopped" if s.closed_reason == "daemon_stopped"
                         else "the session was closed")
        s.child_gone()
        s.emit(exit_event(status, "closed"))
        self.end("closed", s.closed_reason)

    def abandoned(self) -> None:
        """The close overran its bound (the child was killed): the end is recorded anyway."""
        s = self._state
        if s.allows("close"):  # not closing yet
            s.closed_reason = "daemon_stopped"
            s.move("close")
        if s.allows("closed"):  # not ended yet
            self.finish_close(None)

    def gave_up(self) -> None:
        """The child's supervisor gave up restarting it: ``error {restart_intensity}``; failed."""
        s = self._state
        if not s.allows("gave_up"):
            return
        settings = s.settings
        s.emit(ev.Error(error_class="launch", code="restart_intensity",
                        message=f"the harness crashed more than {settings.restart_intensity} times "
                                f"in {settings.restart_period:g} s (last: {s.last_crash})"))
        self.report_lost("the session failed")
        self.end("gave_up", "failed")

    def abort(self, code: str, message: str) -> None:
        """A bug: an ``error``, the turn and permissions ended, the child killed; failed."""
        s = self._state
        if not s.allows("abort"):
            return
        s.emit(ev.Error(error_class="unknown", code=code, message=message))
        s.cancel_permissions()
        if s.tracker.turn_running:
            s.emit(s.complete(ev.Result(stop_reason="error", is_error=True)))
        self.report_lost("the session failed")
        if s.translator is not None:
            s.child_gone()
            s.emit(ev.Exit(reason="killed"))
        self.end("abort", "internal_error")

    def storage_lost(self) -> None:
        """The log takes no more events: failed, announced nowhere, only ``meta.json`` says so."""
        s = self._state
        if not s.allows("abort"):
            return
        s.move("abort", announce=False)
        s.child_gone()
        s.meta = msgspec.structs.replace(s.meta, state="failed", closed_reason="storage_failed")
        s.out.append(SaveMeta(s.meta))

    def report_lost(self, why: str) -> None:
        """The held prompts that will never be sent, reported as one event."""
        lost = self._state.prompts.lost(why)
        if lost is not None:
            self._state.emit(lost)

    def end(self, move: Move, closed_reason: str) -> None:
        """The last move (to ``closed`` or ``failed``): saved, and every close request answered."""
        s = self._state
        s.move(move)
        s.save_meta(closed_reason=closed_reason)
        for call in s.closers:
            s.out.append(Answer(call=call, result=Empty()))
        s.closers.clear()


def describe_exit(status: ExitStatus) -> str:
    """How a child ended, for messages: ``killed by SIGKILL`` or ``exited with status 3``."""
    if status.signal:
        return f"killed by {status.signal}"
    return f"exited with status {status.exit_code}"


def exit_event(status: ExitStatus | None, reason: Literal["crashed", "closed"]) -> ev.Exit:
    """The ``exit`` event of a child that ended with ``status`` (``None``: not known)."""
    if status is None:
        return ev.Exit(reason=reason)
    if status.reason == "lost":  # its node or node agent was lost: how it ended is unknown
        return ev.Exit(reason="lost")
    return ev.Exit(exit_code=status.exit_code, signal=status.signal, reason=reason)
