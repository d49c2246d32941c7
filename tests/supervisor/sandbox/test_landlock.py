"""``supervisor.sandbox.landlock`` against the running kernel: what a confined child can do."""

from __future__ import annotations

import socket
import subprocess
from pathlib import Path

import pytest

from supervisor.sandbox import SandboxPlan, landlock

pytestmark = pytest.mark.skipif(landlock.abi() < 1, reason="needs a kernel with Landlock")


def _run(plan: SandboxPlan, script: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["/bin/sh", "-c", script], cwd=cwd, capture_output=True, text=True,
                          timeout=60, preexec_fn=landlock.preexec_hook(plan), check=False)


def test_split_names_the_siblings_on_the_way_to_an_excluded_path(tmp_path: Path) -> None:
    for name in ("a/x", "a/y/z", "b"):
        (tmp_path / name).mkdir(parents=True)
    (tmp_path / "link").symlink_to(tmp_path / "a")
    assert landlock.split(tmp_path, [tmp_path / "a" / "y"]) == [tmp_path / "a" / "x", tmp_path / "b"]
    assert landlock.split(tmp_path, [Path("/elsewhere")]) == [tmp_path]
    assert landlock.split(tmp_path, [tmp_path]) == []


def test_writes_only_beneath_the_writable_paths_and_hidden_ones_are_unreadable(tmp_path: Path) -> None:
    # (a hidden path splits the directories on its way: new entries cannot be made right in
    # them, so the secret is beside the cwd here; docs/sandbox.md says so)
    work, other, secret = tmp_path / "work", tmp_path / "other", tmp_path / "other" / ".secret"
    for path in (work, other, secret):
        path.mkdir(parents=True, exist_ok=True)
    (secret / "key").write_text("s3cr3t")
    (other / "readme").write_text("readable")
    plan = SandboxPlan(cwd=work, writable=(work,), hidden=(secret,), tmp=False)
    done = _run(plan, f"echo in > made; cat {other}/readme; echo no > {other}/x; "
                      f"cat {secret}/key; echo no > {secret}/new; true", work)
    assert (work / "made").read_text() == "in\n"
    assert "readable" in done.stdout and "s3cr3t" not in done.stdout
    assert not (other / "x").exists() and not (secret / "new").exists()
    assert done.stderr.count("Permission denied") >= 3, done


@pytest.mark.skipif(landlock.abi() < 4, reason="needs Landlock's TCP rules (ABI 4)")
def test_net_off_refuses_tcp_even_on_loopback(tmp_path: Path) -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        script = (f"python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}), 5); print('CONNECTED')\"")
        free = _run(SandboxPlan(cwd=tmp_path, writable=(tmp_path,), tmp=False), script, tmp_path)
        assert "CONNECTED" in free.stdout, free
        boxed = _run(SandboxPlan(cwd=tmp_path, writable=(tmp_path,), tmp=False, net="off"), script, tmp_path)
        assert "CONNECTED" not in boxed.stdout and "PermissionError" in boxed.stderr, boxed


@pytest.mark.skipif(landlock.abi() < 4, reason="needs Landlock's TCP rules (ABI 4)")
@pytest.mark.parametrize("how", ["plan", "net_hook"])
def test_net_model_connects_to_the_proxy_port_only_and_binds_nothing(tmp_path: Path, how: str) -> None:
    """The whole plan (a spawned harness) and the bash layer (``net_hook``, a native worker's
    commands) alike: the proxy's port connects, another port is refused, and so is a bind, even
    of the proxy's port number on another loopback address."""
    with socket.socket() as proxy, socket.socket() as other:
        for server in (proxy, other):
            server.bind(("127.0.0.1", 0))
            server.listen()
        proxy_port, other_port = proxy.getsockname()[1], other.getsockname()[1]
        script = ("python3 -c \"import socket\nfor port in ({0}, {1}):\n"
                  "  try: socket.create_connection(('127.0.0.1', port), 5); print(port, 'ok')\n"
                  "  except OSError as e: print(port, e.errno)\n"
                  "try: socket.socket().bind(('127.0.0.2', {0})); print('bind ok')\n"
                  "except OSError as e: print('bind', e.errno)\"").format(proxy_port, other_port)
        if how == "plan":
            plan = SandboxPlan(cwd=tmp_path, writable=(tmp_path,), tmp=False, net="model", proxy_port=proxy_port)
            hook = landlock.preexec_hook(plan)
        else:
            hook = landlock.net_hook("model", proxy_port)
        done = subprocess.run(["/bin/sh", "-c", script], cwd=tmp_path, capture_output=True, text=True,
                              timeout=60, preexec_fn=hook, check=False)
        assert done.stdout.split("\n")[:3] == [f"{proxy_port} ok", f"{other_port} 13", "bind 13"], done


def test_a_mask_inside_the_writable_cwd_hides_the_session_log_and_keeps_only_its_parts(tmp_path: Path) -> None:
    """Landlock's form of the bubblewrap case (``test_bwrap``): the masked state directory inside
    a writable cwd grants nothing but the session's parts (the names stay listable)."""
    from tests.supervisor.sandbox.test_bwrap import _home_holding_state

    home, state, plan = _home_holding_state(tmp_path)
    own = state / "sessions" / "s-1"
    done = _run(plan, f"echo forged >> {own}/events.jsonl; echo forged > {own}/meta.json; "
                      f"cat {own}/events.jsonl {state}/sessions/s-2/events.jsonl {state}/token; "
                      f"echo x > {state}/new; echo x > {own}/harness/new; cat {own}/harness/mcp.json; "
                      f"echo stored > {own}/native/store && echo in > proj/f && echo ok; true", home)
    assert (own / "events.jsonl").read_text() == '{"seq":1}\n', done
    assert (own / "meta.json").read_text() == '{"id":"x"}'
    assert not (state / "new").exists() and not (own / "harness" / "new").exists()
    assert done.stdout.splitlines() == ["launch-file", "ok"], done
    assert (own / "native" / "store").read_text() == "stored\n" and (home / "proj" / "f").exists()
    assert done.stderr.count("Permission denied") >= 7, done.stderr
