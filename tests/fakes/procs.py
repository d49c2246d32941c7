"""Small child programs for the process and ledger tests: ``python -m tests.fakes.procs <cmd>``.

* ``sleeper [--ignore-term] [--stay] [--grandchild same|setsid|orphan ...]``: start grandchildren
  (``sleep`` binaries: in our group, in a new session, or in a new session whose parent exited),
  print one NDJSON line ``{"pid": ..., "grandchildren": [...]}``, then exit on stdin EOF (or, with
  ``--stay``, never).
* ``echo``: NDJSON echo on stdout, one stderr line per input line; exits 0 at EOF.
* ``flood``: writes ``x`` to stdout forever, never a newline.
* ``exit CODE`` / ``die SIGNAME``: end at once with that status or signal.
* ``daemon STATE_DIR N MODE``: a stand-in daemon: opens the ledger, spawns N sleepers (each with
  a grandchild in its group, one in a new session and one orphan), prints ``{"pids": [...]}``,
  then sleeps until it is killed. MODE ``mixed``: odd leaders ignore SIGTERM and get it as their
  parent-death signal, even ones get none; ``plain``: no parent-death signal; ``pdeath-kill``:
  SIGKILL as the parent-death signal.
* ``reconcile STATE_DIR``: runs ``reconcile`` and prints its report as JSON.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import trio

    from supervisor.ledger.store import Ledger
    from supervisor.proc.child import ProcessSpec

# The sleepers start fast because they import neither trio nor corral; those are imported lazily.
SLEEP = ["sleep", "1000"]


def command(*args: str) -> list[str]:
    """The argv that runs ``python -m tests.fakes.procs *args`` from the repository root."""
    return [sys.executable, "-m", "tests.fakes.procs", *args]


def _orphan() -> int:
    """Start ``sleep`` in a new session through an intermediate that exits; return its pid."""
    read, write = os.pipe()
    middle = os.fork()
    if middle == 0:
        os.close(read)
        os.setsid()
        grandchild = subprocess.Popen(SLEEP, stdin=subprocess.DEVNULL)
        os.write(write, str(grandchild.pid).encode())
        os._exit(0)
    os.close(write)
    os.waitpid(middle, 0)
    with os.fdopen(read, "rb") as f:
        return int(f.read())


def _sleeper(args: list[str]) -> None:
    if "--ignore-term" in args:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    pids = []
    for mode in (args[i + 1] for i, a in enumerate(args) if a == "--grandchild"):
        if mode == "orphan":
            pids.append(_orphan())
        else:
            proc = subprocess.Popen(
                SLEEP, stdin=subprocess.DEVNULL, start_new_session=mode == "setsid"
            )
            pids.append(proc.pid)
    print(json.dumps({"pid": os.getpid(), "grandchildren": pids}), flush=True)
    if "--stay" in args:
        while True:
            time.sleep(1000)
    sys.stdin.buffer.read()


def _echo() -> None:
    for line in sys.stdin.buffer:
        sys.stdout.buffer.write(line)
        sys.stdout.buffer.flush()
        sys.stderr.write(f"got {len(line.rstrip())} bytes\n")
        sys.stderr.flush()


def _flood() -> None:
    chunk = b"x" * 65536
    while True:
        sys.stdout.buffer.write(chunk)


async def _daemon(state_dir: str, count: int, mode: str) -> None:
    import trio

    from supervisor.ledger.store import Ledger
    from supervisor.proc.child import ProcessSpec

    ledger = Ledger(state_dir)
    pids: list[int] = []
    modes = ["--grandchild", "same", "--grandchild", "setsid", "--grandchild", "orphan"]
    async with trio.open_nursery() as nursery:
        for i in range(count):
            stubborn = mode == "mixed" and i % 2 == 1
            death = {"mixed": "SIGTERM" if stubborn else None, "plain": None}.get(mode, "SIGKILL")
            spec = ProcessSpec(
                key=f"sleeper-{i}",
                kind="test",
                argv=command("sleeper", "--stay", *(["--ignore-term"] if stubborn else []), *modes),
                death_signal=death,
            )
            started = trio.Event()
            nursery.start_soon(_hold, spec, ledger, pids, started)
            await started.wait()
        print(json.dumps({"pids": pids}), flush=True)
        await trio.sleep_forever()


async def _hold(spec: ProcessSpec, ledger: Ledger, pids: list[int], started: trio.Event) -> None:
    import trio

    from supervisor.proc.child import open_child

    async with open_child(spec, ledger=ledger) as child:
        hello = json.loads(await child.receive_frame())
        pids.append(child.pid)
        pids.extend(hello["grandchildren"])
        started.set()
        await trio.sleep_forever()


def _reconcile(state_dir: str) -> None:
    import msgspec

    from supervisor.ledger import reconcile

    print(msgspec.json.encode(reconcile(state_dir)).decode(), flush=True)


def main(argv: list[str]) -> None:
    """Dispatch on the first argument."""
    cmd, args = argv[0], argv[1:]
    if cmd == "sleeper":
        _sleeper(args)
    elif cmd == "echo":
        _echo()
    elif cmd == "flood":
        _flood()
    elif cmd == "exit":
        sys.exit(int(args[0]))
    elif cmd == "die":
        os.kill(os.getpid(), signal.Signals[args[0]])
    elif cmd == "daemon":
        import trio

        trio.run(_daemon, args[0], int(args[1]), args[2])
    elif cmd == "reconcile":
        _reconcile(args[0])
    else:
        raise SystemExit(f"unknown command {cmd!r}")


if __name__ == "__main__":
    main(sys.argv[1:])
