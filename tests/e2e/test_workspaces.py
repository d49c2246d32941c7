"""Worktree sessions through a real daemon: fake harnesses in two worktrees of one repository.

Real git on temporary repositories, the wire as any client sees it (raw websocket frames), and
the real command line. Each test waits on events or answers, never on sleeps.
"""

from __future__ import annotations

import os
import shutil
import signal
import sys
from pathlib import Path
from typing import Any

import pytest
import trio

from tests.actors.workspace.gitrig import commit_all, fingerprint, git, make_repo

from .daemonproc import REPO, DaemonProc, RawClient, raw_client, start_daemon, stop_daemon

pytestmark = pytest.mark.timeout(180)


async def _create(client: RawClient, cwd: Path, name: str | None = None, **workspace: Any) -> dict[str, Any]:
    frame = await client.call("session.create", harness="fake", cwd=str(cwd), name=name,
                              workspace={"mode": "worktree", **workspace})
    assert frame["type"] == "ok", frame
    session: dict[str, Any] = frame["result"]["session"]
    return session


async def _turn(client: RawClient, sid: str, command: str) -> list[dict[str, Any]]:
    """Run ``command`` as the fake harness's tool call in the session; its frames up to ``result``."""
    await client.ok("session.prompt", session_id=sid, text=f"/tool {command}")
    return await client.events_until(sid, lambda f: f["event"]["type"] == "result", timeout=60)


async def test_two_sessions_each_diff_their_own_work_then_merge_conflict_and_discard(
        daemon: DaemonProc, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    async with raw_client(daemon) as client:
        one = await _create(client, repo / "src", "one")
        two = await _create(client, repo, "two")
        space = one["workspace"]
        assert one["repo"] == str(repo) and one["cwd"] == os.path.join(space["path"], "src")
        assert space["branch"] == "corral/one" and space["changed_files"] == 0
        assert space["state"] == "active" and space["base"] == git(repo, "rev-parse", "HEAD")
        assert two["cwd"] == two["workspace"]["path"] and two["workspace"]["branch"] == "corral/two"

        for session, who, top in ((one, "one", ".."), (two, "two", ".")):
            await client.ok("session.subscribe", session_id=session["id"])
            frames = await _turn(client, session["id"],
                                 f"echo from {who} > {who}.txt && echo 'hello from {who}' > {top}/README.md")
            kinds = [f["event"]["type"] for f in frames]
            assert kinds.index("workspace") < kinds.index("user")
            created = frames[kinds.index("workspace")]["event"]
            assert created == {"type": "workspace", "state": "created", "branch": f"corral/{who}",
                               "path": session["workspace"]["path"], "changed_files": 0}
        assert git(repo, "status", "--porcelain") == ""  # the source checkout saw nothing

        first = await client.ok("workspace.diff", session_id=one["id"])
        assert [(f["path"], f["status"]) for f in first["files"]] == [
            ("README.md", "modified"), ("src/one.txt", "added")]
        assert "+hello from one" in first["diff"] and "two" not in first["diff"]
        second = await client.ok("workspace.diff", session_id=two["id"], stat=True)
        assert second == {"diff": "", "truncated": False, "files": [
            {"path": "README.md", "status": "modified", "added": 1, "removed": 1},
            {"path": "two.txt", "status": "added", "added": 1, "removed": 0}]}

        merged = await client.ok("workspace.merge", session_id=one["id"], strategy="merge")
        assert git(repo, "rev-parse", "HEAD") == merged["commit"]
        assert (repo / "src" / "one.txt").read_text() == "from one\n"
        # (a ``changed`` recount after the turn's result may come first)
        announced = await client.events_until(
            one["id"], lambda f: f["event"]["type"] == "workspace" and f["event"]["state"] == "merged")
        assert announced[-1]["event"]["branch"] == "corral/one"

        worktrees = [Path(one["workspace"]["path"]), Path(two["workspace"]["path"])]
        before = fingerprint(repo, *worktrees) + git(repo, "for-each-ref")
        refused = await client.call("workspace.merge", session_id=two["id"], strategy="merge")
        assert refused["type"] == "error" and refused["code"] == "merge_conflict"
        assert refused["data"] == {"files": ["README.md"]}
        assert fingerprint(repo, *worktrees) + git(repo, "for-each-ref") == before

        busy = await client.call("workspace.discard", session_id=two["id"])
        assert busy["code"] == "session_busy"
        assert await client.ok("workspace.discard", session_id=two["id"], force=True) == {}
        gone = (await client.ok("session.get", session_id=two["id"]))["session"]
        assert gone["state"] == "closed" and gone["workspace"]["state"] == "discarded"
        assert not worktrees[1].exists() and git(repo, "branch", "--list", "corral/two") == ""


async def test_worktrees_and_their_sessions_cwd_survive_a_daemon_sigkill(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    state = tmp_path / "state"
    proc = await start_daemon(state)
    try:
        async with raw_client(proc) as client:
            sessions = [await _create(client, repo, name) for name in ("left", "right")]
            await client.ok("session.subscribe", session_id=sessions[0]["id"])
            await _turn(client, sessions[0]["id"], "echo kept > kept.txt")
    finally:
        proc.process.send_signal(signal.SIGKILL)
        await proc.process.wait()
    again = await start_daemon(state)
    try:
        async with raw_client(again) as client:
            listed = {s["id"]: s for s in (await client.ok("session.list"))["sessions"]}
            for before in sessions:
                after = listed[before["id"]]
                assert after["state"] == "closed" and after["cwd"] == before["cwd"]
                assert after["repo"] == str(repo) and after["workspace"] == before["workspace"]
                assert Path(before["cwd"]).is_dir()
            diff = await client.ok("workspace.diff", session_id=sessions[0]["id"], stat=True)
            assert [f["path"] for f in diff["files"]] == ["kept.txt"]
        assert "pruned the worktree" not in (state / "daemon.log").read_text()
    finally:
        await stop_daemon(again)


async def test_boot_prunes_worktrees_whose_session_is_gone_keeping_unmerged_branches(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    state = tmp_path / "state"
    proc = await start_daemon(state)
    try:
        async with raw_client(proc) as client:
            idle = await _create(client, repo, "idle")
            worked = await _create(client, repo, "worked")
    finally:
        await stop_daemon(proc)
    (Path(worked["cwd"]) / "precious.txt").write_text("work\n")
    precious = commit_all(Path(worked["cwd"]), "precious work")
    for session in (idle, worked):
        shutil.rmtree(state / "sessions" / session["id"])
    again = await start_daemon(state)
    try:
        for session in (idle, worked):
            assert not Path(session["cwd"]).exists()
        assert git(repo, "worktree", "list", "--porcelain").count("worktree ") == 1
        assert git(repo, "branch", "--list", "corral/idle") == ""
        assert git(repo, "rev-parse", "corral/worked") == precious
        log = (state / "daemon.log").read_text()
        assert f"pruned the worktree {idle['cwd']}" in log and "branch corral/idle deleted" in log
        assert "branch corral/worked kept: 1 commit(s) on no other branch" in log
    finally:
        await stop_daemon(again)


async def test_refusals_are_typed(daemon: DaemonProc, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    plain = tmp_path / "plain"
    plain.mkdir()
    async with raw_client(daemon) as client:
        for branch in ("../x", "-f", "a..b", "x" * 300, "a\0b", "a\nb"):
            frame = await client.call("session.create", harness="fake", cwd=str(repo),
                                      workspace={"mode": "worktree", "branch": branch})
            assert frame["code"] == "bad_request" and "git" in frame["message"], frame
        frame = await client.call("session.create", harness="fake", cwd=str(repo),
                                  workspace={"mode": "worktree", "base": "--output=x"})
        assert frame["code"] == "bad_request" and "git" in frame["message"]
        frame = await client.call("session.create", harness="fake", cwd=str(plain),
                                  workspace={"mode": "worktree"})
        assert frame["code"] == "bad_request" and "git" in frame["message"]
        frame = await client.call("session.create", harness="no-such-harness", cwd=str(repo),
                                  workspace={"mode": "worktree"})
        assert frame["code"] == "harness_unavailable"
        assert git(repo, "worktree", "list", "--porcelain").count("worktree ") == 1
        assert git(repo, "branch", "--list", "corral/*") == ""
        plain_session = (await client.ok("session.create", harness="fake", cwd=str(plain)))["session"]
        assert plain_session["repo"] is None and plain_session["workspace"] is None
        for method, params in (("workspace.diff", {}), ("workspace.commit", {"message": "m"}),
                               ("workspace.merge", {}), ("workspace.discard", {})):
            frame = await client.call(method, session_id=plain_session["id"], **params)
            assert frame["code"] == "unsupported", frame
            frame = await client.call(method, session_id="s-nope", **params)
            assert frame["code"] == "unknown_session", frame


async def _corral(state: Path, *args: str) -> tuple[int, str, str]:
    env = {k: v for k, v in os.environ.items() if k != "CORRAL_STATE_DIR"}
    done = await trio.run_process([sys.executable, "-m", "actors.app", *args, "--state-dir", str(state)],
                                  check=False, capture_stdout=True, capture_stderr=True,
                                  env={**env, "PYTHONPATH": str(REPO), "NO_COLOR": "1"}, cwd=str(REPO))
    return done.returncode, done.stdout.decode(), done.stderr.decode()


async def test_the_command_line_runs_a_worktree_from_new_to_discard(daemon: DaemonProc, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    state = daemon.state_dir
    code, out, err = await _corral(state, "new", "--harness", "fake", "--worktree", "--name", "cli run",
                                   "--cwd", str(repo))
    assert code == 0, err
    sid = out.splitlines()[0]
    async with raw_client(daemon) as client:
        info = (await client.ok("session.get", session_id=sid))["session"]
    work = Path(info["cwd"])
    (work / "feature.txt").write_text("a feature\n")  # as the agent would
    code, out, err = await _corral(state, "diff", sid, "--stat")
    assert (code, out) == (0, "A  +1 -0  feature.txt\n1 file(s) changed\n"), err
    code, out, _ = await _corral(state, "ls")
    header, row = out.splitlines()[:2]
    assert header.split()[-2:] == ["BRANCH", "CHANGED"] and row.split()[-2:] == ["corral/cli-run", "1"]
    code, out, _ = await _corral(state, "diff", sid)
    assert code == 0 and "+a feature" in out
    code, out, err = await _corral(state, "commit", sid, "-m", "add the feature")
    assert code == 0 and out.strip() == git(work, "rev-parse", "HEAD"), err
    code, out, err = await _corral(state, "merge", sid, "--rebase")
    assert code == 0 and out.strip() == git(repo, "rev-parse", "HEAD"), err
    assert git(repo, "log", "-1", "--format=%s") == "add the feature"
    code, _, err = await _corral(state, "discard", sid)
    assert code == 1 and err.startswith("corral: ") and len(err.splitlines()) == 1
    code, _, err = await _corral(state, "discard", sid, "--force")
    assert code == 0 and not work.exists(), err
    code, _, err = await _corral(state, "new", "--harness", "fake", "--branch", "x")
    assert code == 2 and "--worktree" in err


@pytest.mark.vendor
async def test_a_real_claude_session_in_a_worktree_writes_there_and_not_in_the_checkout(tmp_path: Path) -> None:
    from tests.fakes.anthropic_server import bash, text

    from .test_claude_e2e import BINARY, IDLE, INSTALL_HINT, TIMEOUT, claude_session

    if BINARY is None and not os.environ.get("CI"):
        pytest.skip(f"Claude Code is not installed ({INSTALL_HINT})")
    make_repo(tmp_path / "work")
    script = [bash("echo made-by-claude > made.txt && pwd"), text("Created made.txt.")]
    with trio.fail_after(TIMEOUT):
        async with claude_session(tmp_path, *script, permissions={"allow_tools": ["Bash"]},
                                  workspace={"mode": "worktree"}, ready=False) as (rig, _):
            info = await rig.info()
            worktree = Path(info["cwd"])
            assert info["repo"] == str(rig.work) and worktree != rig.work
            events = [*await rig.until(IDLE), *await rig.turn("create made.txt")]
            assert [e["cwd"] for e in events if e["type"] == "init"] == [str(worktree)]
            assert (worktree / "made.txt").read_text() == "made-by-claude\n"
            assert not (rig.work / "made.txt").exists()
            assert git(rig.work, "status", "--porcelain") == ""
            diff = await rig.client.ok("workspace.diff", session_id=rig.sid, stat=True)
            assert [f["path"] for f in diff["files"]] == ["made.txt"]
