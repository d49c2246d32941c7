"""The session's lifecycle table: what each state allows, written down once and kept to.

The table in ``actors.session.lifecycle``'s docstring is the data (checked row by row here);
a move it does not hold raises ``LifecycleError`` (a bug of ours, code ``internal``, never
answered to a client as if the client erred); the core's lifecycle only ever changes by it.
"""

from __future__ import annotations

import itertools
import typing

import pytest

from actors.harness import HarnessRequest
from actors.session import lifecycle
from actors.session.config import SessionsConfig
from actors.session.core import SessionCore
from actors.session.corestate import CoreState
from actors.session.lifecycle import TRANSITIONS, Lifecycle, LifecycleError, Move, allows, next_lifecycle
from actors.session.messages import Abort, ChildReaped, ChildFrame, ChildSpawned, Emit, GaveUp, Request, Stop
from actors.session.meta import SessionMeta
from protocol.errors import CorralError, ErrorCode
from protocol.events import Error
from protocol.messages import SessionClose
from supervisor.proc.spec import ExitStatus

from .scripted import ScriptedDriver, line

STATES: list[Lifecycle | None] = [*typing.get_args(Lifecycle), None]
MOVES: list[Move] = list(typing.get_args(Move))
META = SessionMeta(id="s-1", harness="scripted", cwd="/w", created_at="2026-01-01T00:00:00.000Z", state="starting")
REQUEST = HarnessRequest(session_id="s-1", cwd="/w", work_dir="/w/h")


def _documented() -> dict[tuple[Lifecycle | None, str], Lifecycle | None]:
    """The rows of the table in the module docstring (between its second and third rule)."""
    lines = (lifecycle.__doc__ or "").splitlines()
    rules = [i for i, text in enumerate(lines) if text.startswith("====")]
    assert len(rules) == 3, "the docstring holds one table"

    def state(name: str) -> Lifecycle | None:
        return None if name == "running" else typing.cast(Lifecycle, name)

    rows: dict[tuple[Lifecycle | None, str], Lifecycle | None] = {}
    for text in lines[rules[1] + 1:rules[2]]:
        source, move, target = text.split()[:3]
        assert (state(source), move) not in rows, text
        rows[state(source), move] = state(target)
    return rows


def test_the_docstring_table_is_the_table() -> None:
    assert _documented() == dict(TRANSITIONS)


def test_final_states_allow_no_move_and_every_live_state_can_close_or_fail() -> None:
    for move in MOVES:
        assert not allows("closed", move) and not allows("failed", move)
    for state in ("starting", "restarting", None):
        assert next_lifecycle(state, "close") == "closing"
        assert next_lifecycle(state, "abort") == "failed"
    assert next_lifecycle("closing", "closed") == "closed"


@pytest.mark.parametrize(("state", "move"), [
    (state, move) for state, move in itertools.product(STATES, MOVES) if (state, move) not in TRANSITIONS])
def test_a_move_the_table_does_not_hold_is_a_typed_internal_error(state: Lifecycle | None, move: Move) -> None:
    with pytest.raises(LifecycleError) as info:
        next_lifecycle(state, move)
    assert info.value.code is ErrorCode.INTERNAL
    assert (info.value.lifecycle, info.value.move) == (state, move)
    assert not isinstance(info.value, CorralError)  # a bug of ours, never a client's error


def test_a_refused_move_leaves_the_state_as_it_was_and_announces_nothing() -> None:
    state = CoreState(META, REQUEST, ScriptedDriver(), SessionsConfig(), now=0.0)
    with pytest.raises(LifecycleError, match="starting cannot take the move 'closed'"):
        state.move("closed")
    assert state.lifecycle == "starting" and state.out == []
    state.move("close")
    assert state.lifecycle == "closing" and len(state.out) == 1  # the ``status`` of the move


def test_every_lifecycle_the_core_goes_through_is_a_move_of_the_table() -> None:
    """A session's whole life (start, crash, restart, ready, close, closed), each step checked
    against the table: the lifecycle before and after every input is a row of it (or none)."""
    core = SessionCore(META, REQUEST, ScriptedDriver(handshake=True), SessionsConfig(), now=0.0)
    seen: list[Lifecycle | None] = [core.lifecycle]
    inputs = [
        ChildSpawned(gen=1, request=REQUEST, pid=101),
        ChildReaped(gen=1, status=ExitStatus(reason="crashed", signal="SIGKILL")),
        ChildSpawned(gen=2, request=REQUEST, pid=102),
        ChildFrame(gen=2, data=line(type="init", vendor_session_id="v-1")),
        Request(call=1, request=SessionClose(id=0, session_id="s-1"), by="c-1"),
        ChildReaped(gen=2, status=ExitStatus(reason="exited", exit_code=0)),
        Stop(), GaveUp(), Abort(code="internal", message="late"),  # ended: all ignored
    ]
    for msg in inputs:
        before = core.lifecycle
        core.receive(msg, 0.0)
        if core.lifecycle != before:
            assert any(TRANSITIONS.get((before, move)) == core.lifecycle for move in MOVES), (before, core.lifecycle)
        seen.append(core.lifecycle)
    assert seen == ["starting", "starting", "restarting", "starting", None, "closing", "closed",
                    "closed", "closed", "closed"]


def test_news_the_table_refuses_raises_and_the_abort_that_follows_fails_the_session() -> None:
    """A new generation while a ready child runs cannot happen (its exit is told first); if it
    did, the core raises rather than take it, and the shell's ``Abort`` ends the session."""
    core = SessionCore(META, REQUEST, ScriptedDriver(), SessionsConfig(), now=0.0)
    core.receive(ChildSpawned(gen=1, request=REQUEST, pid=101), 0.0)
    assert core.lifecycle is None and core.allows("close") and not core.allows("closed")
    with pytest.raises(LifecycleError, match="running cannot take the move 'ready'"):
        core.receive(ChildSpawned(gen=2, request=REQUEST, pid=102), 0.0)
    out = core.receive(Abort(code=LifecycleError.code.value, message="the session failed"), 0.0)
    events = [o.event for o in out if isinstance(o, Emit)]
    assert [type(e).__name__ for e in events] == ["Error", "Exit", "Status"]
    assert events[0] == Error(error_class="unknown", code="internal", message="the session failed")
    assert core.finished and core.state == "failed" and not core.allows("close")
