"""Sandboxed sessions through a real daemon: the fake harness's ``bash`` tool under real
bubblewrap and real Landlock, in a worktree of a real repository.

What must hold inside (``net = "on"`` here: the network part is ``test_sandbox_net_e2e``):
writes land in the worktree only (not ``/etc``, not beside the worktree, not in the original
checkout); ``deny_read`` and corral's token are unreadable; ``git add``/``git commit`` work on the
session's branch while ``main``, tags and hooks cannot be touched. And a mode this machine cannot
honour is ``sandbox_unavailable``, never an unconfined session.
"""

from __future__ import annotations

import os
import shutil
import socket
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
import trio

from supervisor.sandbox import landlock
from tests.actors.workspace.gitrig import git, make_repo

from .daemonproc import REPO, RawClient, raw_client, start_daemon, stop_daemon

pytestmark = [pytest.mark.timeout(240),
              pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap (Debian bubblewrap)")]


async def _tool(client: RawClient, sid: str, command: str) -> dict[str, Any]:
    """Run ``command`` as the fake harness's bash tool; its completed ``tool`` event."""
    await client.ok("session.prompt", session_id=sid, text=f"/tool {command}")
    frames = await client.events_until(sid, lambda f: f["event"]["type"] == "result", timeout=60)
    done = [f["event"] for f in frames if f["event"]["type"] == "tool" and f["event"]["phase"] == "completed"]
    assert done, frames
    event: dict[str, Any] = done[-1]
    return event


async def _sandboxed(client: RawClient, repo: Path, secret: Path, mode: str) -> dict[str, Any]:
    frame = await client.call("session.create", harness="fake", cwd=str(repo), name=f"box-{mode}",
                              workspace={"mode": "worktree"},
                              options={"sandbox": {"mode": mode, "net": "on", "deny_read": [str(secret)]}})
    assert frame["type"] == "ok", frame
    session: dict[str, Any] = frame["result"]["session"]
    await client.ok("session.subscribe", session_id=session["id"])
    return session


@pytest.mark.parametrize("mode", ["bwrap", "landlock"])
async def test_a_sandboxed_worktree_session_writes_only_its_worktree_and_commits_only_its_branch(
        tmp_path: Path, mode: str) -> None:
    repo = make_repo(tmp_path / "repo")
    git(repo, "tag", "v1")
    main_before = git(repo, "rev-parse", "main")
    # Outside /tmp, which bubblewrap replaces with a private one: these are visible in there.
    var = Path(tempfile.mkdtemp(prefix="corral-sandbox-test-", dir="/var/tmp"))
    secret = var / "secret"
    secret.mkdir()
    (secret / "key").write_text("s3cr3t")
    outside = var / "outside"
    outside.mkdir()
    state = tmp_path / "state"
    daemon = await start_daemon(state)
    try:
        async with raw_client(daemon) as client:
            session = await _sandboxed(client, repo, secret, mode)
            sid, top = session["id"], session["workspace"]["path"]
            assert session["sandbox"] == {"mode": mode, "effective": mode, "net": "on", "allow_hosts": [],
                                          "extra_rw": [], "deny_read": [
                                              *(os.path.expanduser(p) for p in
                                                ("~/.ssh", "~/.aws", "~/.config/gcloud", "~/.gnupg", "~/.netrc")),
                                              str(secret)]}

            ok = await _tool(client, sid, "echo hi > made.txt && cat made.txt")
            assert not ok["is_error"] and ok["output"] == "hi\n"
            assert Path(top, "made.txt").read_text() == "hi\n"
            for target in ("/etc/corral-escape", str(outside / "x"), str(repo / "x"),
                           str(Path(top).parent / "x"), str(state / "x")):
                denied = await _tool(client, sid, f"echo no > {target}")
                # (under bubblewrap a path in /tmp lands in the private /tmp: gone with it)
                assert denied["is_error"] or (mode == "bwrap" and target.startswith("/tmp/")), (target, denied)
                assert not os.path.exists(target)
            for unreadable in (secret / "key", state / "token"):
                read = await _tool(client, sid, f"cat {unreadable}")
                assert read["is_error"] and "s3cr3t" not in read["output"], (unreadable, read["output"])
            assert "s3cr3t" not in (await _tool(client, sid, f"cat {secret}/* ; ls {secret}"))["output"]

            committed = await _tool(client, sid, "git add made.txt && git commit -q -m 'in the box' && git log --oneline -1")
            assert not committed["is_error"], committed
            branch = session["workspace"]["branch"]
            assert git(repo, "log", "--format=%s", "-1", branch) == "in the box"
            for attack in ("git branch -f main HEAD", "git update-ref refs/heads/main HEAD",
                           "git branch -D main", "git tag -f v1 HEAD", "git tag v2",
                           "git push . HEAD:main", "git checkout -q main && git reset -q --hard HEAD~0 && git commit -q --allow-empty -m evil",
                           "echo 'exit 0' > $(git rev-parse --git-common-dir)/hooks/pre-commit",
                           "git config user.name evil"):
                result = await _tool(client, sid, attack)
                assert result["is_error"], (attack, result)
            assert git(repo, "rev-parse", "main") == main_before
            assert git(repo, "rev-parse", "v1") == main_before
            assert git(repo, "tag", "--list") == "v1"
            assert not (Path(git(repo, "rev-parse", "--absolute-git-dir")) / "hooks" / "pre-commit").exists()
            assert git(repo, "config", "--get", "user.name") != "evil"
            refs = git(repo, "for-each-ref", "--format=%(refname)")
            if mode == "bwrap":  # the branch's own directory takes a new ref; the repository never sees it
                made = await _tool(client, sid, "git branch corral/another && git branch corral/x/y && (git tag t2 2>/dev/null; "
                                                "git rev-parse --verify -q corral/x/y)")
                assert made["output"].strip() == git(repo, "rev-parse", branch), made
                assert git(repo, "for-each-ref", "--format=%(refname)") == refs
                common = Path(git(repo, "rev-parse", "--path-format=absolute", "--git-common-dir"))
                assert (common / "refs" / "heads" / branch).is_symlink()
                await client.ok("workspace.discard", session_id=sid, force=True)
                assert not (common / "corral").exists() and branch not in git(repo, "branch")
    finally:
        await stop_daemon(daemon)
        shutil.rmtree(var)


async def test_bwrap_absent_and_landlock_off_is_sandbox_unavailable(tmp_path: Path) -> None:
    """PATH without bwrap (every other program of /usr/bin and /bin kept) and ``landlock = false``."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for directory in ("/usr/local/bin", "/usr/bin", "/bin"):
        for entry in os.scandir(directory):
            link = bin_dir / entry.name
            if entry.name != "bwrap" and not link.exists():
                link.symlink_to(entry.path)
    config = tmp_path / "corral.toml"
    config.write_text('[sandbox]\nlandlock = false\nnet = "on"\n')
    path = os.environ.get("PATH")
    os.environ["PATH"] = f"{bin_dir}{os.pathsep}{Path(sys.executable).parent}"
    try:
        daemon = await start_daemon(tmp_path / "state", config=str(config))
    finally:
        os.environ["PATH"] = path or ""
    try:
        async with raw_client(daemon) as client:
            for mode in ("auto", "bwrap", "landlock"):
                frame = await client.call("session.create", harness="fake", cwd=str(tmp_path),
                                          options={"sandbox": {"mode": mode}})
                assert frame["type"] == "error" and frame["code"] == "sandbox_unavailable", frame
                assert "bwrap" in frame["message"] or "Landlock" in frame["message"]
            listed = await client.ok("session.list")
            assert listed["sessions"] == []  # nothing was created, confined or not
            plain = await client.ok("session.create", harness="fake", cwd=str(tmp_path))
            assert plain["session"]["sandbox"] is None
    finally:
        await stop_daemon(daemon)


async def test_corral_new_sandbox_flags_reach_the_session(tmp_path: Path) -> None:
    state = tmp_path / "state"
    daemon = await start_daemon(state)
    try:
        env = {k: v for k, v in os.environ.items() if k != "CORRAL_STATE_DIR"}
        done = await trio.run_process(
            [sys.executable, "-m", "actors.app", "new", "--harness", "fake", "--sandbox=bwrap", "--net", "on",
             "--cwd", str(tmp_path), "--state-dir", str(state)],
            check=False, capture_stdout=True, capture_stderr=True, env={**env, "PYTHONPATH": str(REPO)}, cwd=str(REPO))
        assert done.returncode == 0, done.stderr
        sid = done.stdout.decode().splitlines()[0]
        async with raw_client(daemon) as client:
            got = await client.ok("session.get", session_id=sid)
            assert got["session"]["sandbox"]["effective"] == "bwrap"
            assert got["session"]["sandbox"]["net"] == "on"
            await client.ok("session.subscribe", session_id=sid)
            inside = await _tool(client, sid, "grep CapEff /proc/self/status; echo x > /etc/corral-escape")
            assert "CapEff:\t0000000000000000" in inside["output"] and inside["is_error"], inside
    finally:
        await stop_daemon(daemon)


async def test_a_resumed_sandboxed_session_is_confined_again(tmp_path: Path) -> None:
    """The stored settings come back with ``session.resume`` (re-checked), and so does the box."""
    state = tmp_path / "state"
    daemon = await start_daemon(state)
    work = tmp_path / "work"
    work.mkdir()
    try:
        async with raw_client(daemon) as client:
            created = await client.ok("session.create", harness="fake", cwd=str(work),
                                      options={"sandbox": {"mode": "landlock", "net": "on"}})
            sid = created["session"]["id"]
            await client.ok("session.subscribe", session_id=sid)
            await client.ok("session.close", session_id=sid)
            await client.events_until(sid, lambda f: f["event"]["type"] == "status"
                                      and f["event"]["state"] == "closed", timeout=60)
            closed = (await client.ok("session.get", session_id=sid))["session"]
            assert closed["sandbox"] == created["session"]["sandbox"]
            resumed = (await client.ok("session.resume", session_id=sid))["session"]
            assert resumed["sandbox"]["effective"] == "landlock"
            inside = await _tool(client, sid, f"echo in > made && echo no > {state}/x")
            assert inside["is_error"] and (work / "made").exists() and not (state / "x").exists()
    finally:
        await stop_daemon(daemon)


@pytest.mark.parametrize("mode", ["bwrap", "landlock"])
async def test_net_off_reaches_no_local_server(tmp_path: Path, mode: str) -> None:
    """``net = "off"``: a new network namespace (bubblewrap) or Landlock's TCP rules; a server on
    the host's loopback that this test reaches is not reachable from inside."""
    if mode == "landlock" and landlock.abi() < 4:
        pytest.skip("needs Landlock's TCP rules")
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    port = listener.getsockname()[1]
    state = tmp_path / "state"
    daemon = await start_daemon(state)
    try:
        async with raw_client(daemon) as client:
            created = await client.ok("session.create", harness="fake", cwd=str(tmp_path),
                                      options={"sandbox": {"mode": mode, "net": "off"}})
            sid = created["session"]["id"]
            await client.ok("session.subscribe", session_id=sid)
            probe = (f"{sys.executable} -c \"import socket; socket.create_connection(('127.0.0.1', {port}), 5); "
                     f"print('CONNECTED')\"")
            inside = await _tool(client, sid, probe)
            assert inside["is_error"] and "CONNECTED" not in inside["output"], inside
    finally:
        listener.close()
        await stop_daemon(daemon)
