"""Detection probes against real stand-in programs (``sys.executable`` scripts in a tmp dir):
answers, bounded output, and probes that hang — killed with their whole family at the timeout
or when the caller is cancelled, so nothing a probe started is left running."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import psutil
import trio

from actors.vendors.probe import (
    BACKGROUND_NICE,
    OUTPUT_LIMIT,
    ProbeFailed,
    Ran,
    ask_probe,
    in_background,
    probe_version,
    run_probe,
)

HANGS = """#!{python}
import os, subprocess, sys, time
sleeper = [sys.executable, "-c", "import time; time.sleep(120)"]
kids = [subprocess.Popen(sleeper), subprocess.Popen(sleeper, start_new_session=True)]
pids = [os.getpid(), *(kid.pid for kid in kids)]
with open({pids!r}, "w") as out:
    out.write(" ".join(map(str, pids)))
print(" ".join(map(str, pids)), flush=True)  # one line, no answer: the asker keeps waiting
time.sleep(120)
"""


def script(tmp: Path, body: str, name: str = "tool") -> str:
    path = tmp / name
    path.write_text(f"#!{sys.executable}\n{body}\n")
    path.chmod(0o755)
    return str(path)


def hanging(tmp: Path) -> tuple[str, Path]:
    pids = tmp / "pids"
    path = tmp / "slowtool"
    path.write_text(HANGS.format(python=sys.executable, pids=str(pids)))
    path.chmod(0o755)
    return str(path), pids


def assert_all_gone(pids_file: Path) -> None:
    pids = [int(p) for p in pids_file.read_text().split()]
    assert len(pids) == 3, "the hanging probe never got to start its children"
    for pid in pids:
        try:
            alive = psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
        except psutil.NoSuchProcess:
            alive = False
        assert not alive, f"probe family member {pid} outlived the probe"


async def test_a_version_probe_that_hangs_is_killed_with_its_family_and_says_so(tmp_path: Path) -> None:
    path, pids = hanging(tmp_path)
    with trio.fail_after(60):
        found = await probe_version(path, dict(os.environ), timeout=5)
    assert isinstance(found, ProbeFailed) and found.timed_out
    assert found.reason == f"{path} --version did not answer within 5s"
    assert_all_gone(pids)


async def test_a_question_probe_that_never_answers_is_killed_at_its_timeout(tmp_path: Path) -> None:
    path, pids = hanging(tmp_path)
    lines: list[bytes] = []

    def answer(line: bytes) -> str | None:
        lines.append(line)
        return None

    with trio.fail_after(60):
        found = await ask_probe([path, "--mode", "rpc"], dict(os.environ), b'{"type":"ask"}\n', answer,
                                timeout=5, label="slowtool models")
    assert found == ProbeFailed(reason="slowtool models did not answer within 5s", timed_out=True)
    assert len(lines) == 1
    assert_all_gone(pids)


async def test_cancelling_the_caller_kills_the_probe_family(tmp_path: Path) -> None:
    path, pids = hanging(tmp_path)
    with trio.fail_after(60):
        with trio.move_on_after(5) as scope:
            await run_probe([path, "--version"], dict(os.environ), timeout=600)
    assert scope.cancelled_caught
    assert_all_gone(pids)


async def test_version_lines_exit_codes_and_garbage(tmp_path: Path) -> None:
    env = dict(os.environ)
    with trio.fail_after(60):
        good = script(tmp_path, "print('Tool'); print('tool 1.2.3 (build)')", "good")
        assert await probe_version(good, env, timeout=30) == "tool 1.2.3 (build)"
        bad = script(tmp_path, "import sys; print('1.2.3'); sys.exit(4)", "bad")
        assert await probe_version(bad, env, timeout=30) == ProbeFailed(
            reason=f"{bad} --version exited (status 4)")
        vague = script(tmp_path, "print('nightly')", "vague")
        failed = await probe_version(vague, env, timeout=30)
        assert isinstance(failed, ProbeFailed) and "'nightly'" in failed.reason
        missing = await probe_version(str(tmp_path / "absent"), env, timeout=30)
        assert isinstance(missing, ProbeFailed) and not missing.timed_out


async def test_the_probe_sees_exactly_the_env_it_is_given(tmp_path: Path) -> None:
    show = script(tmp_path, "import json, os; print(json.dumps(dict(os.environ)))")
    with trio.fail_after(60):
        ran = await run_probe([show], {"PATH": "/usr/bin:/bin", "ONLY": "this"}, timeout=30)
    assert isinstance(ran, Ran) and ran.exit_code == 0
    seen = json.loads(ran.stdout)
    assert seen["ONLY"] == "this" and "HOME" not in seen


async def test_output_is_bounded(tmp_path: Path) -> None:
    flood = script(tmp_path, f"import sys; sys.stdout.write('x' * {OUTPUT_LIMIT + 100})")
    with trio.fail_after(60):
        found = await run_probe([flood], dict(os.environ), timeout=30, label="flood")
    assert found == ProbeFailed(reason=f"flood printed more than {OUTPUT_LIMIT} bytes")


async def test_a_question_probe_returns_the_first_answer_or_why_not(tmp_path: Path) -> None:
    echo = script(tmp_path, "import sys\nprint('noise')\nfor line in sys.stdin:\n"
                            "    print(line.strip(), flush=True)", "echo")

    def answer(line: bytes) -> int | None:
        frame = json.loads(line) if line.startswith(b"{") else {}
        if frame.get("bad"):
            raise ValueError("not a frame")
        return frame.get("n")

    env = dict(os.environ)
    with trio.fail_after(60):
        assert await ask_probe([echo], env, b'{"n": 7}\n', answer, timeout=30) == 7
        bad = await ask_probe([echo], env, b'{"bad": 1}\n', answer, timeout=30, label="echo")
        assert bad == ProbeFailed(reason="echo answered garbage: not a frame")
        quiet = script(tmp_path, "print('bye')", "quiet")
        gone = await ask_probe([quiet], env, b'{"n": 1}\n', answer, timeout=30, label="quiet")
        assert gone == ProbeFailed(reason="quiet exited (status 0) without answering")


async def test_probes_in_background_run_under_nice() -> None:
    tell = [sys.executable, "-c", "import os; print(os.getpriority(os.PRIO_PROCESS, 0))"]
    own = os.getpriority(os.PRIO_PROCESS, 0)
    with trio.fail_after(60):
        plain = await run_probe(tell, os.environ, timeout=60)
        with in_background():
            low = await run_probe(tell, os.environ, timeout=60, merge_stderr=True)
        after = await run_probe(tell, os.environ, timeout=60)
    assert isinstance(plain, Ran) and isinstance(low, Ran) and isinstance(after, Ran)
    assert [int(r.stdout) for r in (plain, low, after)] == [own, min(19, own + BACKGROUND_NICE), own]
