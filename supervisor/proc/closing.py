"""The close sequence's signals: goodbye, SIGTERM, then SIGKILL until the whole family is gone.

``ProcessChild`` (``supervisor.proc.child``) starts the sequence once, from whichever comes
first: ``close()`` (or leaving the ``open_child`` block), the leader exiting on its own, a
framing error; everyone else waits for it. With ``shutdown`` seconds granted, ``terminate``:

1. goodbye (only if asked to close politely): the caller's ``say_goodbye`` (the protocol's own
   goodbye, then stdin closed); wait for the leader to exit, up to half of ``shutdown``;
2. SIGTERM to the process group and to every family member known so far (see step 3); wait
   until the leader and all of them are gone, up to ``shutdown`` in all;
3. SIGKILL to the group and to every family member (``supervisor.proc.killing.Family``:
   descendants found by a psutil walk taken *before* the kill, group members, marked strays);
   wait for the leader (the kernel cannot refuse SIGKILL) and the family; then survey again and
   repeat while a survey finds someone new (a descendant forked, or orphaned, while the family
   died).

Step 4, reaping the leader and dropping its ledger row, is the child's (``ProcessChild``): the
leader is reaped only after ``terminate``, so its pid, which is the group id, cannot be reused
while we still signal the group. ``shutdown=0`` is OTP's brutal kill: straight to step 3.
"""

from __future__ import annotations

import signal
from collections.abc import Awaitable, Callable

import trio

from supervisor.proc.killing import Family, is_alive, signal_all, signal_group, wait_gone

__all__ = ["KILL_REAP_WAIT", "terminate"]

KILL_REAP_WAIT = 2.0
"""Seconds to wait for SIGKILLed family members before leaving them."""


async def terminate(pid: int, pgid: int, ledger_key: str, exited: trio.Event,
                    say_goodbye: Callable[[], Awaitable[None]], *, polite: bool,
                    shutdown: float) -> None:
    """Steps 1-3 of the close sequence for the leader ``pid`` of group ``pgid``, whose family
    carries ``ledger_key`` in its marker; ``exited`` is set once the leader exited (it is not
    reaped here). Takes at most ``shutdown`` seconds plus ``KILL_REAP_WAIT`` and the time the
    kernel takes to deliver a SIGKILL. Run it shielded: a cancelled sequence leaves a family."""
    start = trio.current_time()
    family = Family(pid, pgid, ledger_key)
    lively = await _survey(family, exited)
    if polite and shutdown > 0 and not exited.is_set():
        with trio.move_on_at(start + shutdown / 2):
            await say_goodbye()
            await exited.wait()
        lively = await _survey(family, exited)
    if shutdown > 0:
        signal_group(pgid, signal.SIGTERM)
        signal_all(family.members, signal.SIGTERM)  # those that left the group, too
        with trio.move_on_at(start + shutdown):
            await exited.wait()
        await wait_gone(family.members, start + shutdown)
        lively = await _survey(family, exited)
    await _kill(pgid, family, exited, lively)


async def _kill(pgid: int, family: Family, exited: trio.Event, lively: bool) -> None:
    """SIGKILL the group and the family until a survey after their death finds no one new.

    ``lively``: whether anyone who could fork was alive at the last survey; if not, nobody
    can have joined the family since. Once the leader is dead nobody new can join but
    through a fork already under way (or an orphan re-parented to us as its parent died),
    so this ends within a few rounds; it is bounded by ``KILL_REAP_WAIT`` in any case.
    """
    deadline = trio.current_time() + KILL_REAP_WAIT
    while True:
        signal_group(pgid, signal.SIGKILL)  # the zombie leader still pins the group id
        signal_all(family.members, signal.SIGKILL)
        await exited.wait()
        await wait_gone(family.members, deadline)
        if not lively or trio.current_time() >= deadline:
            return
        known = len(family.members)
        lively = await _survey(family, exited)
        if len(family.members) == known:
            return


async def _survey(family: Family, exited: trio.Event) -> bool:
    """Survey the family; whether the leader or any member was alive (so could fork).

    A survey reads /proc for every process: it runs in a worker thread.
    """
    leader_alive = not exited.is_set()

    def survey() -> bool:
        family.survey(leader_alive=leader_alive)
        return leader_alive or any(is_alive(proc) for proc in family.members)

    return await trio.to_thread.run_sync(survey)
