"""Ctrl-C detach time of ``corral attach`` and ``corral logs --follow``: SIGINT to the process
gone, against a real daemon; next to two references measured in the same run: the same
interpreter with the CLI's modules imported exiting on SIGINT (the floor any detach pays), and
the start-up of a CLI process (``corral --help``).

Run: ``python -m tests.bench.bench_detach [--runs N]``. Not collected by pytest.
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tests.e2e.daemonproc import REPO

_FLOOR = ("import signal, sys, actors.app\n"
          "signal.signal(signal.SIGINT, lambda *_: sys.exit(0))\n"
          "print('ready', flush=True)\n"
          "signal.pause()\n")


def _corral(*args: str) -> list[str]:
    return [sys.executable, "-m", "actors.app", *args]


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO), "NO_COLOR": "1"}


def detach_times(argv: list[str], runs: int) -> list[float]:
    """Start ``argv``, wait for its first line on stdout (it is following), SIGINT, time the exit."""
    out = []
    for _ in range(runs):
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, env=_env(), cwd=str(REPO))
        assert proc.stdout is not None
        proc.stdout.readline()
        start = time.perf_counter()
        proc.send_signal(signal.SIGINT)
        code = proc.wait(timeout=60)
        out.append(time.perf_counter() - start)
        assert code == 0, f"{argv[3]} exited with {code}"
    return out


def startup_times(runs: int) -> list[float]:
    out = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(_corral("--help"), env=_env(), cwd=str(REPO), check=True,
                       stdout=subprocess.DEVNULL)
        out.append(time.perf_counter() - start)
    return out


def _ms(values: list[float]) -> str:
    values = sorted(values)
    p90 = values[max(int(len(values) * 0.9) - 1, 0)]
    return f"median {statistics.median(values) * 1000:7.1f} ms, p90 {p90 * 1000:7.1f} ms"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="cc-", dir="/tmp") as tmp:
        state = str(Path(tmp) / "state")
        subprocess.run(_corral("start", "--state-dir", state, "--port", "0"), env=_env(),
                       cwd=str(REPO), check=True, stdout=subprocess.DEVNULL)
        try:
            made = subprocess.run(_corral("new", "--harness", "fake", "--state-dir", state),
                                  env=_env(), cwd=tmp, check=True, capture_output=True, text=True)
            sid = made.stdout.splitlines()[0]
            attach = detach_times(_corral("attach", sid, "--state-dir", state), args.runs)
            logs = detach_times(_corral("logs", sid, "--follow", "--state-dir", state), args.runs)
        finally:
            subprocess.run(_corral("stop", "--state-dir", state), env=_env(), cwd=str(REPO),
                           stdout=subprocess.DEVNULL, check=False)
    floor = detach_times([sys.executable, "-c", _FLOOR], args.runs)
    startup = startup_times(args.runs)
    rows = [(f"Ctrl-C -> exit, corral attach ({args.runs} runs)", attach),
            (f"Ctrl-C -> exit, corral logs --follow ({args.runs} runs)", logs),
            ("SIGINT -> exit, interpreter with the CLI imported (reference)", floor),
            ("corral --help, start to exit (reference)", startup)]
    width = max(len(label) for label, _ in rows)
    for label, values in rows:
        print(f"{label + ':':<{width + 1}} {_ms(values)}")

if __name__ == "__main__":
    main()
