"""A stand-in daemon with a native fork server: ``python -m tests.fakes.fork_daemon STATE_DIR``.

It becomes a child subreaper, runs a ``ForkServer`` on STATE_DIR's ledger, spawns one native
worker through it with no parent-death signal, prints ``{"worker": PID, "server": PID,
"holder": PID, "forks": N}`` and waits to be killed. The reconcile tests kill it and reconcile
STATE_DIR. So that the worker outlives it (as one would that is wedged, or whose daemon died
before it asked for its signal), a ``sleep`` in a session of its own holds the worker's stdin
open (a worker exits at the end of its stdin) and its stdout (a worker still starting when this
stand-in dies would otherwise die of EPIPE at its first frame); the tests kill that holder.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

import trio

from actors.native.daemon.driver import NATIVE_ROOT
from actors.native.daemon.forkservice import ForkServer
from supervisor.ledger.store import Ledger
from supervisor.proc.child import ProcessSpec, open_child
from supervisor.proc.prctl import set_child_subreaper
from supervisor.proc.spawn import Spawned


async def main(state: Path) -> None:
    set_child_subreaper()
    ledger = Ledger(state)
    forks = ForkServer(state, ledger, cwd=str(NATIVE_ROOT))
    spec = ProcessSpec(key="session:stand-in:1", kind="harness:native",
                       argv=[sys.executable, "-m", "actors.native"], cwd=str(NATIVE_ROOT),
                       framing="length_prefix", death_signal=None)
    holders: list[int] = []

    async def spawn_held(argv: Sequence[str], *, cwd: str | None, env: Mapping[str, str],
                         death_signal: signal.Signals | None) -> Spawned:
        spawned = await forks.spawn(argv, cwd=cwd, env=env, death_signal=death_signal)
        holder = subprocess.Popen(["sleep", "1000"], pass_fds=[spawned.stdin.fileno(), spawned.stdout.fileno()],
                                  start_new_session=True)
        holders.append(holder.pid)
        return spawned

    async with trio.open_nursery() as nursery:
        await nursery.start(forks.run)
        async with open_child(spec, ledger=ledger, spawner=spawn_held) as child:
            print(json.dumps({"worker": child.pid, "server": forks.statistics().pid,
                              "holder": holders[0], "forks": forks.forks}), flush=True)
            await trio.sleep_forever()


if __name__ == "__main__":
    trio.run(main, Path(sys.argv[1]))
