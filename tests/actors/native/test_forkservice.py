"""The fork server's supervisor: a crash loop stays inside its intensity (virtual time)."""

from __future__ import annotations

import random
from functools import partial

import trio
import trio.testing

from actors.native.daemon.forkservice import SUPERVISOR
from supervisor.tree import ChildSpec, RestartType, Supervisor, supervise


class _NoJitter(random.Random):
    """The worst case for the intensity: every backoff at its shortest."""

    def random(self) -> float:
        return 0.0


async def test_a_fork_server_that_dies_at_once_never_exceeds_its_supervisors_intensity(
        autojump_clock: trio.testing.MockClock) -> None:
    starts: list[float] = []

    async def dies_at_once(*, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
                           ) -> None:
        starts.append(trio.current_time())
        task_status.started()
        raise RuntimeError("the template crashed")

    spec = ChildSpec(id="native-forkserver", start=dies_at_once, restart=RestartType.PERMANENT)
    with trio.move_on_after(3600):  # an hour of crashes: supervise would raise if exceeded
        async with trio.open_nursery() as nursery:
            handle: Supervisor = await nursery.start(
                partial(supervise, SUPERVISOR, [spec], rng=_NoJitter()))
            await trio.sleep_forever()
    assert handle.statistics().restarts_in_period < SUPERVISOR.intensity
    busiest = max(sum(1 for t in starts if s <= t < s + SUPERVISOR.period) for s in starts)
    assert busiest <= 7  # SUPERVISOR's docstring: at most 7 starts in any period
    assert len(starts) > 60  # and it kept trying all along
