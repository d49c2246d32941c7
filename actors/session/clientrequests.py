"""A session's client requests, decided on its state (sans-IO, like the core that takes them).

``SessionCore`` (``actors.session.core`` holds the theory of operation and the state table) hands
each ``Request`` to ``ClientRequests.take``, which answers it (``Answer``: a result, or a typed
error) or, for a close, leaves the answer to the close's end. Prompts start a turn, are steered,
or are held (``actors.session.prompts``) and released one per turn by ``release_held``, which
the core calls after every input.
"""

from __future__ import annotations

import msgspec

from actors.harness import Translator
from actors.session.corestate import CoreState
from actors.session.ending import Endings
from actors.session.messages import Answer, Request
from protocol import events as ev
from protocol.errors import BadRequest, CorralError, SessionBusy, SessionClosed, Unsupported
from protocol.events import Delivery
from protocol.messages import (
    Empty,
    PromptResult,
    SessionClose,
    SessionCompact,
    SessionInterrupt,
    SessionPermission,
    SessionPrompt,
    SessionSetModel,
    SessionSetPermissions,
)

__all__ = ["ClientRequests"]


class ClientRequests:
    """The requests of a session's clients, acting on the core's ``CoreState`` (see the module
    docstring); a close begins through the core's ``Endings``."""

    __slots__ = ("_endings", "_state")

    def __init__(self, state: CoreState, endings: Endings) -> None:
        self._state = state
        self._endings = endings

    def take(self, msg: Request) -> None:
        """Serve ``msg``: its answer now (a result or a typed error), or later (a close)."""
        try:
            result = self._serve(msg)
        except CorralError as exc:
            self._state.out.append(Answer(call=msg.call, error=exc))
            return
        if result is not None:
            self._state.out.append(Answer(call=msg.call, result=result))

    def _serve(self, msg: Request) -> msgspec.Struct | None:
        """The result of a request, or ``None`` when the answer comes later (a close)."""
        s = self._state
        request = msg.request
        if s.ending:
            if not isinstance(request, SessionClose):
                raise SessionClosed(f"session {s.meta.id} is {s.state}")
            if s.finished:
                return Empty()
            s.closers.append(msg.call)
            return None
        match request:
            case SessionPrompt(text=text):
                return PromptResult(delivery=self._prompt(text))
            case SessionInterrupt():
                s.cancel_permissions()
                if s.translator is not None and s.tracker.turn_running:
                    s.outputs(s.translator.interrupt(s.now))
            case SessionPermission(permission_id=pid, decision=decision):
                s.approvals.check(pid, decision)
                s.decide(pid, decision, msg.by, msg.by_name)
            case SessionSetModel(model=model):
                if s.translator is not None:
                    s.outputs(s.translator.set_model(model, s.now))
                s.request = msgspec.structs.replace(s.request, model=model)
                s.save_meta(model=model)
            case SessionSetPermissions(mode=mode):
                s.set_permissions(mode, msg.by)
            case SessionClose():
                s.closers.append(msg.call)
                self._endings.begin_close("closed")
                return None
            case SessionCompact():
                self._compact()
            case _:
                raise BadRequest(f"{type(request).__name__} is not a session request")
        return Empty()

    def _compact(self) -> None:
        """``session.compact``: only translators with a ``compact`` method can; only when idle."""
        s = self._state
        translator = s.translator
        compact = getattr(translator, "compact", None)
        if translator is not None and compact is None:
            raise Unsupported(f"the {s.meta.harness} harness cannot compact a session")
        if (translator is None or compact is None or not translator.ready
                or not s.running or s.tracker.turn_running or s.approvals or s.prompts):
            raise SessionBusy(f"session {s.meta.id} is {s.state}: compact it when idle")
        s.outputs(compact(s.now))

    def _prompt(self, text: str) -> Delivery:
        s = self._state
        translator = s.translator
        if translator is not None and translator.ready and s.running and not s.prompts:
            if not s.tracker.turn_running and not s.approvals:
                self._start_turn(translator, text, "prompted")
                return "prompted"
            frames = translator.steer(text, s.now)
            if frames is not None:
                s.emit(ev.User(text=text, delivery="steered"))
                s.outputs(frames)
                return "steered"
        s.prompts.hold(text)
        return "held"

    def _start_turn(self, translator: Translator, text: str, delivery: Delivery) -> None:
        s = self._state
        frames = translator.prompt(text, s.now)  # may refuse (session_busy) before anything happened
        s.tracker.turn_started(s.now)
        s.turn_started_at = s.now
        s.emit(ev.User(text=text, delivery=delivery))
        s.outputs(frames)

    def release_held(self) -> None:
        """Send the oldest held prompt if the harness is free (checked after every input)."""
        s = self._state
        translator = s.translator
        if (not s.prompts or translator is None or not translator.ready or not s.running
                or s.tracker.turn_running or s.approvals):
            return
        text = s.prompts.next()
        try:
            self._start_turn(translator, text, "held")
        except CorralError:
            s.prompts.put_back(text)
