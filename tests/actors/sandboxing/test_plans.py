"""``build_plan``: what a session's launch may read and write, and that bubblewrap honours it for a
harness whose program lives under ``/tmp`` (the private ``/tmp`` must not hide it)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path


from actors.harness import HarnessRequest, Launch
from actors.sandboxing.plans import build_plan
from protocol.sandbox import SandboxInfo
from supervisor.sandbox import wrap
from tests.needs import need_bwrap


def _request(tmp: Path) -> HarnessRequest:
    session = tmp / "state" / "sessions" / "s-1"
    (session / "harness").mkdir(parents=True)
    return HarnessRequest(session_id="s-1", cwd=str(tmp / "work"), work_dir=str(session / "harness"),
                          state_dir=str(tmp / "state"))


def test_the_plan_of_a_vendor_launch(tmp_path: Path) -> None:
    (tmp_path / "work").mkdir()
    program = tmp_path / "vendor" / "bin" / "agent"
    program.parent.mkdir(parents=True)
    program.write_text("#!/bin/sh\necho ran-from-tmp\n")
    program.chmod(0o755)
    request = _request(tmp_path)
    info = SandboxInfo(mode="bwrap", effective="bwrap", net="on", extra_rw=[str(tmp_path / "cache")],
                       deny_read=[str(tmp_path / "work" / ".env")])
    launch = Launch(argv=[str(program)], cwd=request.cwd, env={"CODEX_HOME": str(tmp_path / "codex")})
    plan = build_plan(request, launch, info, harness="codex", masks=[str(tmp_path / "state")])
    assert plan.cwd == tmp_path / "work"
    session = tmp_path / "state" / "sessions" / "s-1"
    assert set(plan.writable) == {tmp_path / "work", tmp_path / "codex", tmp_path / "cache"}
    assert not any(session in (p, *p.parents) for p in plan.writable)  # its log and meta: no
    assert {program.parent, session / "harness"} <= set(plan.read_only)
    assert plan.masked == (tmp_path / "state",)
    assert plan.hidden == (tmp_path / "work" / ".env",)
    assert plan.tmp_dir == tmp_path / "state" / "sessions" / "s-1" / "tmp"

    need_bwrap()
    (tmp_path / "state" / "token").write_text("t0ken")
    argv, env = wrap([str(program)], {}, plan)
    merged = {k: v for k, v in {**os.environ, **env}.items() if v is not None}
    ran = subprocess.run(argv, capture_output=True, text=True, env=merged, timeout=60, check=False)
    assert ran.stdout == "ran-from-tmp\n", ran  # under /tmp, yet visible inside
    peek = subprocess.run(wrap(["/bin/cat", str(tmp_path / "state" / "token")], {}, plan)[0],
                          capture_output=True, text=True, timeout=60, check=False)
    assert peek.returncode != 0 and "t0ken" not in peek.stdout


def test_the_native_agent_writes_its_store_and_no_other_part_of_its_session(tmp_path: Path) -> None:
    (tmp_path / "work").mkdir()
    request = _request(tmp_path)
    session = tmp_path / "state" / "sessions" / "s-1"
    info = SandboxInfo(mode="landlock", effective="landlock", net="on")
    plan = build_plan(request, Launch(argv=["/bin/true"], cwd=request.cwd), info, harness="native",
                      masks=[str(tmp_path / "state")])
    assert [p for p in plan.writable if session in p.parents] == [session / "native"]
