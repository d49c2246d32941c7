"""``supervisor.sandbox.wrap`` against the real bubblewrap, as root and as an unprivileged user.

As root, bubblewrap without a user namespace would leave every capability: these show that
inside ``CapEff`` is 0, ``/etc`` cannot be written and ``/`` cannot be remounted read-write;
that a writable directory under ``/tmp`` stays visible behind the private ``/tmp`` (mount
order); that a hidden file or directory cannot be read even when it lies inside the writable
cwd; and the same as a user made for the test (``useradd`` + ``setpriv``) where the machine
allows it.
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from supervisor.sandbox import SandboxPlan, void_file, wrap

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap")


def _run(plan: SandboxPlan, script: str, *, user: str | None = None) -> subprocess.CompletedProcess[str]:
    argv, env = wrap(["/bin/sh", "-c", script], {}, plan)
    if user is not None:
        argv = ["setpriv", f"--reuid={user}", f"--regid={user}", "--init-groups", "--", *argv]
    merged = {k: v for k, v in {**os.environ, **env}.items() if v is not None}
    # in a new session, as corral's spawn starts every child (``wrap`` relies on it)
    return subprocess.run(argv, capture_output=True, text=True, timeout=60, env=merged, check=False,
                          start_new_session=True)


@pytest.fixture
def box(tmp_path: Path) -> tuple[Path, SandboxPlan]:
    work = tmp_path / "work"
    (work / ".env").mkdir(parents=True)
    (work / ".env" / "key").write_text("s3cr3t")
    (work / "token").write_text("t0ken")
    plan = SandboxPlan(cwd=work, writable=(work,), hidden=(work / ".env", work / "token"),
                       void=void_file(tmp_path / "void"))
    return work, plan


@pytest.mark.skipif(os.geteuid() != 0, reason="the root case")
def test_root_inside_has_no_capabilities_and_cannot_write_etc_or_remount(box: tuple[Path, SandboxPlan]) -> None:
    _, plan = box
    done = _run(plan, "grep CapEff /proc/self/status; id -u; "
                      "touch /etc/corral-escape && echo WROTE; "
                      "mount -o remount,rw / && echo REMOUNTED; "
                      "mount -t tmpfs none /etc && echo MOUNTED; true")
    assert "CapEff:\t0000000000000000" in done.stdout, done
    assert "WROTE" not in done.stdout and "REMOUNTED" not in done.stdout and "MOUNTED" not in done.stdout
    assert "Read-only file system" in done.stderr
    assert not os.path.exists("/etc/corral-escape")


def test_a_writable_dir_under_tmp_survives_the_private_tmp_and_hidden_paths_win(
        box: tuple[Path, SandboxPlan]) -> None:
    work, plan = box
    assert str(work).startswith("/tmp/")  # pytest's tmp_path: the mount-order case itself
    done = _run(plan, "echo in > made && cat made; ls -a /tmp | wc -l; cat .env/key; cat token; "
                      "echo x > .env/new; echo x > token; true")
    assert done.stdout.splitlines()[0] == "in", done
    assert (work / "made").read_text() == "in\n"
    assert "s3cr3t" not in done.stdout and "t0ken" not in done.stdout
    assert (work / "token").read_text() == "t0ken" and not (work / ".env" / "new").exists()


def test_no_terminal_is_reachable_to_inject_into(box: tuple[Path, SandboxPlan]) -> None:
    """No controlling terminal (the spawn's new session) and none of the host's terminals in the
    fresh ``/dev``: there is nothing to ``TIOCSTI`` into (bubblewrap's own ``--new-session`` is not
    needed)."""
    _, plan = box
    done = _run(plan, "cat /proc/self/stat | cut -d' ' -f7; ls /dev/pts; (exec 3</dev/tty) || echo NO-TTY")
    tty_nr, *rest = done.stdout.split()
    assert tty_nr == "0" and "NO-TTY" in rest, done  # no controlling terminal
    assert [name for name in rest if name.isdigit()] == [], done  # no pty of the host's


def test_the_sandbox_dies_with_the_process_that_started_it(box: tuple[Path, SandboxPlan]) -> None:
    """``--die-with-parent`` covers bubblewrap itself as well as its tree, which is why a sandboxed
    spawn needs no ``setpriv --pdeathsig`` in front (``actors.session.child``)."""
    _, plan = box
    argv, _ = wrap(["/bin/sh", "-c", "echo started; exec sleep 600"], {}, plan)
    parent = subprocess.Popen([sys.executable, "-c", "import subprocess, sys, time; "
                               "subprocess.Popen(sys.argv[1:], start_new_session=True); time.sleep(600)", *argv],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert parent.stdout is not None and parent.stdout.readline() == "started\n"  # the sandbox runs
        sandboxed = psutil.Process(parent.pid).children(recursive=True)
        # The shell that printed is the process that becomes ``sleep`` (same pid); it may not have
        # exec'd yet, so it is found by not being bubblewrap rather than by name.
        assert any(p.name() != "bwrap" for p in sandboxed), sandboxed
    finally:
        parent.kill()
        parent.wait()
        if parent.stdout is not None:
            parent.stdout.close()
    gone, alive = psutil.wait_procs(sandboxed, timeout=30)
    assert alive == [], alive


@pytest.fixture
def user() -> Iterator[str]:
    """An unprivileged user made for the test (removed after it); skips where that cannot be."""
    if os.geteuid() != 0 or shutil.which("useradd") is None or shutil.which("setpriv") is None:
        pytest.skip("needs root, useradd and setpriv to run as a fresh unprivileged user")
    name = f"cbx{os.getpid() % 100000}"
    made = subprocess.run(["useradd", "--no-create-home", "--shell", "/bin/sh", name],
                          capture_output=True, text=True, check=False)
    if made.returncode != 0:
        pytest.skip(f"useradd failed: {made.stderr.strip()}")
    try:
        yield name
    finally:
        subprocess.run(["userdel", name], capture_output=True, check=False)


def test_as_an_unprivileged_user_only_the_cwd_is_writable(user: str) -> None:
    uid = pwd.getpwnam(user).pw_uid
    base = Path(tempfile.mkdtemp(prefix="corral-bwrap-user-", dir="/var/tmp"))
    try:
        work, other = base / "work", base / "other"
        for path in (work, other):
            path.mkdir()
            os.chown(path, uid, uid)
        base.chmod(0o755)
        plan = SandboxPlan(cwd=work, writable=(work,))
        done = _run(plan, f"id -u; grep CapEff /proc/self/status; echo in > made; cat made; "
                          f"echo no > {other}/x; true", user=user)
        assert done.stdout.splitlines()[0] == str(uid), done
        assert "CapEff:\t0000000000000000" in done.stdout
        assert (work / "made").read_text() == "in\n"
        assert not (other / "x").exists() and "Read-only file system" in done.stderr
    finally:
        shutil.rmtree(base)


def _home_holding_state(tmp: Path) -> tuple[Path, Path, SandboxPlan]:
    """A writable cwd (a home) that holds corral's state directory, masked but for one
    session's parts: its launch files read-only, its store writable."""
    home = tmp / "home"
    state = home / ".local" / "state" / "corral"
    own, other = state / "sessions" / "s-1", state / "sessions" / "s-2"
    for path in (home / "proj", own / "harness", own / "native", other):
        path.mkdir(parents=True)
    for log in (own, other):
        (log / "events.jsonl").write_text('{"seq":1}\n')
        (log / "meta.json").write_text('{"id":"x"}')
    (other / "events.jsonl").write_text("other-log\n")
    (own / "harness" / "mcp.json").write_text("launch-file\n")
    (state / "token").write_text("t0ken")
    plan = SandboxPlan(cwd=home, writable=(home, own / "native"), read_only=(own / "harness",),
                       masked=(state,), void=void_file(tmp / "void"))
    return home, state, plan


def test_a_mask_inside_the_writable_cwd_hides_the_session_log_and_keeps_only_its_parts(tmp_path: Path) -> None:
    """The state directory inside a writable cwd stays masked (and read-only): the session's
    log and ``meta.json`` can be neither read nor written, another session's log and the token
    not read; its launch files are readable, its store writable."""
    home, state, plan = _home_holding_state(tmp_path)
    own = state / "sessions" / "s-1"
    done = _run(plan, f"echo forged >> {own}/events.jsonl; echo forged > {own}/meta.json; "
                      f"cat {state}/sessions/s-2/events.jsonl {state}/token; echo x > {state}/new; "
                      f"echo x > {own}/harness/new; cat {own}/harness/mcp.json; ls {state}/sessions; "
                      f"echo stored > {own}/native/store && echo in > proj/f && echo ok; true")
    assert (own / "events.jsonl").read_text() == '{"seq":1}\n', done
    assert (own / "meta.json").read_text() == '{"id":"x"}'
    assert "other-log" not in done.stdout and "t0ken" not in done.stdout
    assert not (state / "new").exists() and not (own / "harness" / "new").exists()
    assert done.stdout.splitlines() == ["launch-file", "s-1", "ok"], done
    assert (own / "native" / "store").read_text() == "stored\n" and (home / "proj" / "f").exists()
    assert done.stderr.count("Read-only file system") >= 4, done.stderr
