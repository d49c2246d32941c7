"""Notifications end to end: a real daemon posts to local receivers (``tests.fakes.webhook``) in
each format, while a dead endpoint (a refused port) and a slow one (never answers) are shown not to
hold the session up; ``corral notify test`` with and without a daemon."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import trio

from tests.fakes.webhook import open_receiver, refused_port

from .daemonproc import REPO, raw_client, start_daemon, stop_daemon

pytestmark = pytest.mark.timeout(180)


def _config(path: Path, *tables: str) -> str:
    path.write_text("\n".join(f"[[notify]]\n{t}\n" for t in tables), encoding="utf-8")
    return str(path)


async def _log_has(path: Path, needle: str, timeout: float = 60) -> str:
    """The daemon's log once it holds ``needle``."""
    with trio.fail_after(timeout):
        while needle not in (text := path.read_text(errors="replace")):
            await trio.sleep(0.05)
    return text


async def test_each_format_arrives_and_dead_or_slow_endpoints_never_hold_the_session_up(tmp_path: Path) -> None:
    dead = f"http://127.0.0.1:{refused_port()}/dead?token=s3cret"
    async with (open_receiver() as json_hook, open_receiver() as ntfy_hook, open_receiver() as slack_hook,
                open_receiver(hold=True) as slow_hook):
        config = _config(
            tmp_path / "notify.toml",
            f'url = "{dead}"\nevents = ["permission"]',
            f'url = "{slow_hook.url}"',
            f'url = "{json_hook.url}"\nheaders = {{ Authorization = "Bearer tok" }}',
            f'url = "{ntfy_hook.url}"\nformat = "ntfy"\nevents = ["turn_done"]',
            f'url = "{slack_hook.url}"\nformat = "slack"\nevents = ["permission"]')
        daemon = await start_daemon(tmp_path / "state", config=config, timeout=60)
        try:
            async with raw_client(daemon) as client:
                sid = (await client.ok("session.create", harness="fake", cwd=str(tmp_path),
                                       name="alpha"))["session"]["id"]
                await client.ok("session.subscribe", session_id=sid)
                await client.ok("session.prompt", session_id=sid, text="/ask echo hi")
                await client.events_until(sid, lambda f: f["event"]["type"] == "permission")
                with trio.fail_after(30):  # the slow endpoint holds the permission's post ...
                    await slow_hook.wait_for(1, held=1)
                await client.ok("session.permission", session_id=sid, permission_id="p1", decision="allow")
                await client.events_until(sid, lambda f: f["event"]["type"] == "result")
                # ... and still holds that same post (no answer for 10 s, then a retry) when the
                # rest of the turn has reached the client; the dead endpoint refused meanwhile.
                assert slow_hook.held == 1 and len(slow_hook.received) == 1
                with trio.fail_after(60):
                    [asked, done] = await json_hook.wait_for(2)
                    [ntfy] = await ntfy_hook.wait_for(1)
                    [slack] = await slack_hook.wait_for(1)
                page = f"http://127.0.0.1:{daemon.port}/#{sid}"
                assert asked.method == "POST" and asked.target == "/hook"
                assert asked.headers["authorization"] == "Bearer tok"
                assert asked.headers["content-type"] == "application/json"
                assert asked.json() == {"event": "permission", "session": {"id": sid, "name": "alpha", "harness": "fake"},
                                        "text": "alpha asks to run bash: echo hi", "url": page}
                assert done.json()["event"] == "turn_done"
                assert done.json()["text"].startswith("alpha: turn is done (end_turn, ")
                assert ntfy.body.decode() == done.json()["text"]
                assert (ntfy.headers["title"], ntfy.headers["tags"]) == ("corral: turn done", "white_check_mark")
                assert ntfy.headers["content-type"].startswith("text/plain")
                assert slack.json() == {"text": f"alpha asks to run bash: echo hi <{page}|open>"}
                # The page's URL without the browser's cookie: the login notice, nothing else.
                status, body = await _get(daemon.port, f"/#{sid}")
                assert status == 401 and b"not authorised" in body and b"corral ui" in body
            log = await _log_has(daemon.state_dir / "test-daemon.out", "/dead?token=***: gave up")
            assert (f"notify: http://127.0.0.1:{dead.split(':')[2].split('/')[0]}/dead?token=***: gave up on a "
                    "permission notification after 4 attempts: cannot connect to") in log
            assert "s3cret" not in log and "Bearer tok" not in log
        finally:
            assert await stop_daemon(daemon) == 0


async def _get(port: int, target: str) -> tuple[int, bytes]:
    """A plain GET as a browser without the cookie sends it (the fragment stays in the browser)."""
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    async with stream:
        path = target.split("#")[0] or "/"
        await stream.send_all(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
                              "Sec-Fetch-Site: none\r\nConnection: close\r\n\r\n".encode())
        data = b""
        while chunk := await stream.receive_some(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split()[1]), body


async def _notify_test(config: str, state: Path) -> subprocess.CompletedProcess[bytes]:
    return await trio.run_process(
        [sys.executable, "-m", "actors.app", "notify", "test", "--config", config, "--state-dir", str(state)],
        capture_stdout=True, capture_stderr=True, check=False, cwd=str(REPO))


async def test_notify_test_posts_to_every_endpoint_and_fails_if_one_does(tmp_path: Path) -> None:
    dead_port = refused_port()
    async with open_receiver() as good, open_receiver(status=500) as broken:
        everything = _config(
            tmp_path / "all.toml", f'url = "{good.url}?key=abc"\nformat = "ntfy"',
            f'url = "{broken.url}"', f'url = "http://127.0.0.1:{dead_port}/x"',
            'url = "http://example.com/plain"')
        with trio.fail_after(60):
            done = await _notify_test(everything, tmp_path / "no-daemon")
        out, err = done.stdout.decode(), done.stderr.decode()
        assert done.returncode == 1, err
        lines = out.splitlines()
        assert lines[:2] == [f"{good.url}?key=***  ntfy  200 OK", f"{broken.url}  json  500 Internal Server Error"]
        assert lines[2].startswith(f"http://127.0.0.1:{dead_port}/x  json  failed: cannot connect to "
                                   f"127.0.0.1:{dead_port}: ") and len(lines) == 3
        assert "abc" not in out
        assert "'notify[3]'" in err and "must be https" in err
        [test] = good.received
        assert test.body == b"corral: a test notification" and test.headers["title"] == "corral: test"
        assert test.target == "/hook?key=abc"
        assert len(broken.received) == 1  # one attempt, no retries

        only_good = _config(tmp_path / "good.toml", f'url = "{good.url}"')
        daemon = await start_daemon(tmp_path / "state", timeout=60)
        try:
            with trio.fail_after(60):
                done = await _notify_test(only_good, daemon.state_dir)
        finally:
            assert await stop_daemon(daemon) == 0
        assert done.returncode == 0, done.stderr.decode()
        assert done.stdout.decode() == f"{good.url}  json  200 OK\n"
        assert good.received[-1].json()["url"] == f"http://127.0.0.1:{daemon.port}/"  # the running daemon's page


async def test_notify_test_without_any_table_says_so(tmp_path: Path) -> None:
    empty = _config(tmp_path / "none.toml")
    with trio.fail_after(60):
        done = await _notify_test(empty, tmp_path / "state")
    assert done.returncode == 1 and done.stdout == b""
    assert "no [[notify]] table to test" in done.stderr.decode()
