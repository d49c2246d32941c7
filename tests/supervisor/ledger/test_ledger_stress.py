"""The ledger under churn: random SIGKILLs, restarts and cancelled spawns leave no row and no process.

Thirty workers each run a real child with grandchildren (one in its group, one in a new session,
one orphaned) and start a new one whenever theirs dies. A killer SIGKILLs random leaders and
grandchildren and cancels random workers in the middle of a spawn. After a clean close of
everything, ``ledger.json`` must hold no row and the test process no descendant.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import random
import signal
from pathlib import Path

import psutil
import pytest
import trio

from supervisor.ledger.store import Ledger, load
from supervisor.proc.child import ProcessSpec, open_child
from tests.fakes.procs import command
from tests.fakes.proctools import processes, subreaper, wait_no_descendants

pytestmark = [pytest.mark.usefixtures("subreaper"), pytest.mark.slow]
assert subreaper  # the fixture is used by name through pytestmark

WORKERS = 30
ACTIONS = 90
FAMILY = ["--grandchild", "same", "--grandchild", "setsid", "--grandchild", "orphan"]


class _Churn:
    """What the workers share with the killer: live processes, and the scope of each generation."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.procs: list[psutil.Process] = []
        self.generations: dict[int, trio.CancelScope] = {}
        self.spawning: set[int] = set()
        self.spawns = 0
        self.cancelled_spawns = 0


async def _worker(index: int, ledger: Ledger, churn: _Churn) -> None:
    """Run one child after another: a new one whenever the last died or was cancelled."""
    for generation in itertools.count(1):
        spec = ProcessSpec(key=f"w{index}.{generation}", kind="stress",
                           argv=command("sleeper", "--stay", *FAMILY), shutdown=0.5)
        with trio.CancelScope() as scope:
            churn.generations[index] = scope
            churn.spawning.add(index)
            try:
                async with open_child(spec, ledger=ledger) as child:
                    churn.spawns += 1
                    churn.spawning.discard(index)
                    churn.procs.append(psutil.Process(child.pid))
                    try:
                        hello = json.loads(await child.receive_frame())
                    except trio.EndOfChannel:
                        continue  # killed before it said hello
                    churn.procs += processes(hello["grandchildren"])
                    await child.wait()
            finally:
                churn.spawning.discard(index)
        if scope.cancelled_caught and index in churn.spawning:
            churn.cancelled_spawns += 1


async def _killer(churn: _Churn) -> None:
    """Random faults at a random pace: SIGKILL a leader or grandchild, or cancel a generation.

    It goes on past ``ACTIONS`` until the faults have caused a restart: on a loaded machine the
    spawns can be so slow that every early fault lands on a worker still starting.
    """
    actions = 0
    while actions < ACTIONS or churn.spawns <= WORKERS:
        actions += 1
        await trio.sleep(churn.rng.uniform(0, 0.03))  # the fault schedule, not a wait for a state
        roll = churn.rng.random()
        if roll < 0.25 and churn.spawning:
            churn.generations[churn.rng.choice(sorted(churn.spawning))].cancel()
        elif roll < 0.35 and churn.generations:
            churn.generations[churn.rng.choice(sorted(churn.generations))].cancel()
        else:
            live = [p for p in churn.procs if p.is_running()]
            if live:
                with contextlib.suppress(psutil.Error):  # psutil checks the identity first
                    churn.rng.choice(live).send_signal(signal.SIGKILL)


@pytest.mark.parametrize("seed", [1, 2])
async def test_churn_then_a_clean_close_leaves_an_empty_ledger_and_no_process(
    tmp_path: Path, seed: int
) -> None:
    ledger = Ledger(tmp_path)
    churn = _Churn(seed)
    with trio.fail_after(120):
        async with trio.open_nursery() as nursery:
            for index in range(WORKERS):
                nursery.start_soon(_worker, index, ledger, churn)
            await _killer(churn)
            nursery.cancel_scope.cancel()  # the clean close of everything
        left = await wait_no_descendants(timeout=10)
    assert churn.spawns > WORKERS  # the faults did cause restarts
    assert ledger.rows() == []
    assert load(ledger.path) == ([], None)
    assert left == []
