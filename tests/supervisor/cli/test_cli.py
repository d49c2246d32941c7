"""The real ``corral`` command line, run as subprocesses against a daemon it started itself.

Conditions are waited for with the client library (events), never with sleeps; every test
runs under a generous real-time ``fail_after`` because real processes are involved.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator, Iterator, Mapping
from contextlib import aclosing
from pathlib import Path

import pytest
import trio

from protocol.events import Permission, PermissionDecided, Result, Tool
from protocol.schema import client_protocol_schema
from supervisor.client import open_client
from tests.daemonconfig import without_prewarm

REPO = Path(__file__).resolve().parents[3]
LIMIT = 180  # generous: each command is a fresh Python process, slow on a loaded machine


class Ran:
    def __init__(self, done: subprocess.CompletedProcess[bytes]) -> None:
        self.code = done.returncode
        self.out = done.stdout.decode()
        self.err = done.stderr.decode()

    def one_error_line(self) -> str:
        """The single stderr line of a failed command (no traceback, no second line)."""
        lines = self.err.splitlines()
        assert len(lines) == 1, self.err
        assert "Traceback" not in self.err
        return lines[0]


def _env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "CORRAL_STATE_DIR"}
    env.update(PYTHONPATH=str(REPO), NO_COLOR="1", XDG_STATE_HOME=str(REPO / ".no-such-state"))
    env.update(extra or {})
    return env


async def corral(*args: str, env: Mapping[str, str] | None = None, cwd: Path | None = None) -> Ran:
    """``corral ARGS``; a daemon it starts without ``--config`` has the background warm-ups off."""
    if args[0] in ("start", "daemon") and "--config" not in args and "--state-dir" in args:
        state = Path(args[args.index("--state-dir") + 1])
        args = (*args, "--config", without_prewarm(state.parent / f"{state.name}-config"))
    done = await trio.run_process([sys.executable, "-m", "actors.app", *args], check=False,
                                  capture_stdout=True, capture_stderr=True, env=_env(env),
                                  cwd=str(cwd or REPO))
    return Ran(done)


@pytest.fixture
def short_dir() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="cc-", dir="/tmp"))
    yield path
    _stop_leftover_daemons(path)
    shutil.rmtree(path, ignore_errors=True)


def _stop_leftover_daemons(path: Path) -> None:
    """Stop a daemon a failed or timed-out test left running on a state dir under ``path``
    (``corral start`` detaches it: cancelling the command does not stop the daemon)."""
    for found in path.glob("**/daemon.json"):
        subprocess.run([sys.executable, "-m", "actors.app", "stop", "--state-dir", str(found.parent)],
                       env=_env(), cwd=str(REPO), capture_output=True, timeout=LIMIT, check=False)


@pytest.fixture
async def state(short_dir: Path) -> AsyncIterator[Path]:
    """A daemon started with ``corral start`` (stopped with ``corral stop`` afterwards)."""
    root = short_dir / "state"
    with trio.fail_after(LIMIT):
        started = await corral("start", "--state-dir", str(root), "--port", "0")
    assert started.code == 0, started.err
    assert "started" in started.out
    try:
        yield root
    finally:
        with trio.fail_after(LIMIT):
            stopped = await corral("stop", "--state-dir", str(root))
        assert stopped.code == 0, stopped.err


async def _new(root: Path, cwd: Path) -> str:
    made = await corral("new", "--state-dir", str(root), "--harness", "fake", cwd=cwd)
    assert made.code == 0, made.err
    return made.out.splitlines()[0]


async def _wait_for(root: Path, sid: str, kind: type, from_seq: int = 1) -> list[object]:
    """The session's events from ``from_seq`` up to and including the first of ``kind``."""
    seen: list[object] = []
    async with open_client(root) as client:
        async with aclosing(client.events(sid, from_seq)) as events:
            async for frame in events:
                seen.append(frame.event)
                if isinstance(frame.event, kind):
                    return seen
    raise AssertionError("events ended")


async def test_new_ls_send_logs(state: Path, short_dir: Path) -> None:
    with trio.fail_after(LIMIT):
        sid = await _new(state, short_dir)
        assert sid.startswith("s-") and sid == sid.strip()
        listed = await corral("ls", "--state-dir", str(state))
        assert listed.code == 0 and sid in listed.out
        as_json = json.loads((await corral("ls", "--json", "--state-dir", str(state))).out)
        assert [(s["id"], s["cwd"]) for s in as_json] == [(sid, str(short_dir))]

        sent = await corral("send", sid, "hello", "there", "--state-dir", str(state))
        assert (sent.code, sent.out.strip()) in ((0, "prompted"), (0, "held"))
        await _wait_for(state, sid, Result)

        logs = await corral("logs", sid, "--json", "--state-dir", str(state))
        assert logs.code == 0, logs.err
        frames = [json.loads(line) for line in logs.out.splitlines()]
        assert [f["seq"] for f in frames] == list(range(1, len(frames) + 1))
        assert {f["type"] for f in frames} == {"event"} and {f["session_id"] for f in frames} == {sid}
        assert all(set(f) == {"type", "session_id", "seq", "ts", "event"} for f in frames)
        kinds = [f["event"]["type"] for f in frames]
        assert "user" in kinds and kinds.index("user") < kinds.index("result")

        text = await corral("logs", sid, "--state-dir", str(state))
        assert "> hello there (prompted)" in text.out
        assert "echo: hello there\n" in text.out
        assert "— end_turn · in 10 / out 3 tokens" in text.out
        tail = await corral("logs", sid, "--json", "--from", str(len(frames)), "--state-dir", str(state))
        assert [json.loads(line)["seq"] for line in tail.out.splitlines()] == [len(frames)]

        status = await corral("status", "--state-dir", str(state))
        assert status.code == 0 and sid in status.out and "children (1)" in status.out


async def test_state_dir_before_after_and_from_the_environment(state: Path, short_dir: Path) -> None:
    with trio.fail_after(LIMIT):
        sid = await _new(state, short_dir)
        wrong = str(short_dir / "elsewhere")
        for args, env in ((["--state-dir", str(state), "ls"], None),
                          (["ls", "--state-dir", str(state)], None),
                          (["--state-dir", wrong, "ls", "--state-dir", str(state)], None),
                          (["ls"], {"CORRAL_STATE_DIR": str(state)}),
                          (["ls", "--state-dir", str(state)], {"CORRAL_STATE_DIR": wrong})):
            listed = await corral(*args, env=env)
            assert (listed.code, sid in listed.out) == (0, True), (args, listed.err)
        missing = await corral("--state-dir", wrong, "ls", env={"CORRAL_STATE_DIR": str(state)})
        assert missing.code == 1 and wrong in missing.one_error_line()


async def test_unknown_id_is_one_line_and_exit_1(state: Path) -> None:
    commands = [["send", "s-nope", "hi"], ["attach", "s-nope"], ["logs", "s-nope"],
                ["logs", "s-nope", "--follow"], ["close", "s-nope"], ["interrupt", "s-nope"],
                ["approve", "s-nope", "p1"]]
    with trio.fail_after(LIMIT):
        for args in commands:
            ran = await corral(*args, "--state-dir", str(state))
            assert ran.code == 1, args
            line = ran.one_error_line()
            assert line.startswith("corral: ") and "s-nope" in line, args


@pytest.mark.parametrize("args", [["ls"], ["status"], ["new", "--harness", "fake"], ["logs", "s-1"]])
async def test_daemon_not_running_is_one_line_and_exit_1(short_dir: Path, args: list[str]) -> None:
    with trio.fail_after(LIMIT):
        ran = await corral(*args, "--state-dir", str(short_dir))
    assert ran.code == 1
    assert "not running" in ran.one_error_line()
    assert ran.out == ""


@pytest.mark.parametrize("args", [[], ["frob"], ["new"], ["send", "s-1"], ["approve", "s", "p", "--deny", "--always"],
                                  ["new", "--harness", "fake", "--permissions", "never"],
                                  ["new", "--harness", "fake", "--option", "novalue"]])
async def test_usage_errors_exit_2(short_dir: Path, args: list[str]) -> None:
    with trio.fail_after(LIMIT):
        ran = await corral(*args, "--state-dir", str(short_dir))
    assert ran.code == 2
    assert "error:" in ran.one_error_line()


async def test_protocol_schema_needs_no_daemon(short_dir: Path) -> None:
    with trio.fail_after(LIMIT):
        ran = await corral("protocol", "schema", "--state-dir", str(short_dir))
    assert ran.code == 0
    assert json.loads(ran.out) == json.loads(json.dumps(client_protocol_schema()))


async def test_approve_and_deny(state: Path, short_dir: Path) -> None:
    with trio.fail_after(LIMIT):
        sid = await _new(state, short_dir)
        await corral("send", sid, "/ask echo hi", "--state-dir", str(state))
        asked = await _wait_for(state, sid, Permission)
        assert asked[-1].permission_id == "p1"  # type: ignore[attr-defined]
        approved = await corral("approve", sid, "p1", "--state-dir", str(state))
        assert (approved.code, approved.err) == (0, "")
        after = await _wait_for(state, sid, Result)
        decided = [e for e in after if isinstance(e, PermissionDecided)]
        assert [(d.permission_id, d.decision) for d in decided] == [("p1", "allow")]
        assert [e.output for e in after if isinstance(e, Tool) and e.phase == "completed"] == ["hi\n"]

        again = await corral("approve", sid, "p1", "--deny", "--state-dir", str(state))
        assert again.code == 1 and "decided" in again.one_error_line()

        await corral("send", sid, "/ask echo two", "--state-dir", str(state))
        seq = len(after) + 1
        await _wait_for(state, sid, Permission, seq)
        denied = await corral("approve", sid, "p2", "--deny", "--state-dir", str(state))
        assert denied.code == 0
        tools = [e for e in await _wait_for(state, sid, Result, seq) if isinstance(e, Tool)]
        assert tools[-1].is_error and tools[-1].output == "denied by user"


async def test_attach_streams_the_turn_and_detaches_on_sigint(state: Path, short_dir: Path) -> None:
    with trio.fail_after(LIMIT):
        sid = await _new(state, short_dir)
        argv = [sys.executable, "-m", "actors.app", "attach", sid, "--state-dir", str(state)]
        process = await trio.lowlevel.open_process(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                                   stderr=subprocess.PIPE, env=_env())
        argv = [sys.executable, "-m", "actors.app", "logs", sid, "--json", "--follow",
                "--state-dir", str(state)]
        follower = await trio.lowlevel.open_process(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                                    stderr=subprocess.DEVNULL, env=_env())
        try:
            assert process.stdout is not None and process.stderr is not None
            await _read_until(process.stderr, "Ctrl-C detaches")
            async with open_client(state) as client:
                await client.prompt(sid, "/ask echo hi")
                out = await _read_until(process.stdout, "? permission p1")
                hint = await _read_until(process.stderr, "--always]")
                assert f"corral approve {sid} p1 [--deny | --always]" in hint
                await client.permission(sid, "p1", "allow")
                out += await _read_until(process.stdout, "— end_turn")
                await client.prompt(sid, "stream me")
                out += await _read_until(process.stdout, "echo: stream me\n")
            assert "allow bash" not in out  # stdin is not a terminal: nothing is asked
            assert "permission p1: allow (by cli)" in out  # the name the client gave in hello
            assert "✓ bash [exec] completed hi" in out
            process.send_signal(signal.SIGINT)
            assert await process.wait() == 0

            assert follower.stdout is not None
            lines = (await _read_until(follower.stdout, '"type":"result"', count=2)).splitlines()
            follower.send_signal(signal.SIGINT)
            assert await follower.wait() == 0
            frames = [json.loads(line) for line in lines if line.strip()]
            assert [f["seq"] for f in frames] == list(range(1, len(frames) + 1))
            assert "stream me" in {f["event"].get("text") for f in frames}
        finally:
            for proc in (process, follower):
                if proc.returncode is None:
                    proc.kill()
                    await proc.wait()
        async with open_client(state) as client:
            assert (await client.get(sid)).state == "idle"  # detaching did not close it


async def test_attach_on_a_terminal_asks_and_answers(state: Path, short_dir: Path) -> None:
    with trio.fail_after(LIMIT):
        sid = await _new(state, short_dir)
        terminal, tty = os.openpty()
        argv = [sys.executable, "-m", "actors.app", "attach", sid, "--state-dir", str(state)]
        process = await trio.lowlevel.open_process(argv, stdin=tty, stdout=subprocess.PIPE,
                                                   stderr=subprocess.PIPE, env=_env())
        os.close(tty)
        try:
            assert process.stdout is not None and process.stderr is not None
            await _read_until(process.stderr, "Ctrl-C detaches")
            async with open_client(state) as client:
                await client.prompt(sid, "/ask echo hi")
                out = await _read_until(process.stdout, "? [y/N/a(lways)] ")
                assert 'allow bash {"command": "echo hi"}? [y/N/a(lways)] ' in out
                os.write(terminal, b"y\n")
                out += await _read_until(process.stdout, "— end_turn")
                assert "permission p1: allow (by cli)" in out and "✓ bash [exec] completed hi" in out
                assert out.count("allow bash") == 1  # not again after "· waiting"

                await client.prompt(sid, "/ask echo two")  # answered elsewhere: the question goes
                await _read_until(process.stdout, "? [y/N/a(lways)] ")
                async with open_client(state, name="my-editor") as other:
                    await other.permission(sid, "p2", "deny")
                out = await _read_until(process.stdout, "— end_turn")
                assert "permission p2: deny (by my-editor)" in out  # its client's name, not c-N
            process.send_signal(signal.SIGINT)
            assert await process.wait() == 0
        finally:
            os.close(terminal)
            if process.returncode is None:
                process.kill()
                await process.wait()


async def test_start_twice_stop_twice_and_a_start_that_fails(short_dir: Path) -> None:
    root = short_dir / "state"
    with trio.fail_after(LIMIT):
        first = await corral("start", "--state-dir", str(root), "--port", "0")
        assert first.code == 0, first.err
        try:
            second = await corral("start", "--state-dir", str(root), "--port", "0")
            assert second.code == 0 and "already running" in second.out
            foreground = await corral("daemon", "--state-dir", str(root), "--port", "0")
            assert foreground.code == 1
            assert "another daemon" in foreground.err.splitlines()[-1]
        finally:
            stopped = await corral("stop", "--state-dir", str(root))
        assert stopped.code == 0 and "stopped" in stopped.out
        assert not (root / "daemon.json").exists()
        again = await corral("stop", "--state-dir", str(root))
        assert again.code == 0 and "not running" in again.one_error_line()

        broken = await corral("start", "--state-dir", str(root), "--config", str(short_dir / "no.toml"))
        assert broken.code == 1
        assert "before it was ready" in broken.one_error_line()
        assert "config file not found" in broken.err


async def _read_until(stream: trio.abc.ReceiveStream, needle: str, count: int = 1) -> str:
    """Read ``stream`` until ``needle`` has been seen ``count`` times; returns what was read."""
    data = b""
    while data.count(needle.encode()) < count:
        chunk = await stream.receive_some(65536)
        if not chunk:
            raise AssertionError(f"stream ended before {needle!r}: {data.decode()!r}")
        data += chunk
    return data.decode()


async def test_harnesses_json_and_new_says_when_it_waits_for_the_native_warm_up(
        short_dir: Path) -> None:
    root = short_dir / "state"
    config = short_dir / "providers.toml"
    config.write_text('[providers.local]\nkind = "openai-chat"\napi_key_env = "LOCAL_KEY"\n')
    secret = "sk-cli-secret-4242"
    env = {"OPENAI_API_KEY": secret, "GEMINI_API_KEY": "", "LOCAL_KEY": ""}
    with trio.fail_after(LIMIT):
        started = await corral("start", "--state-dir", str(root), "--port", "0", "--config",
                               without_prewarm(short_dir / "config", config), env=env)
        assert started.code == 0, started.err
        try:
            listed = await corral("harnesses", "--json", "--state-dir", str(root))
            assert listed.code == 0, listed.err
            assert secret not in listed.out
            found = {d["harness"]: d for d in json.loads(listed.out)}
            assert {"native", "fake", "claude"} <= set(found)
            assert all(d.get("login", "unknown") in ("logged_in", "logged_out", "unknown")
                       for d in found.values())
            providers = {p["name"]: p for p in found["native"]["features"]["providers"]}
            assert list(providers) == ["openai", "openai-chat", "anthropic", "gemini", "local"]
            assert providers["openai"]["api_key_env"] == "OPENAI_API_KEY"
            assert providers["openai"]["has_key"] is True
            assert providers["gemini"].get("has_key", False) is False
            assert providers["local"]["api_key_env"] == "LOCAL_KEY"
            assert providers["local"].get("has_key", False) is False
            table = await corral("harnesses", "--state-dir", str(root))
            assert "LOGIN / KEYS" in table.out and "keys: openai, openai-chat" in table.out

            new = ["new", "--harness", "native", "--model", "openai/fake-model", "--option",
                   "base_url=http://127.0.0.1:9/v1", "--state-dir", str(root)]
            first = await corral(*new, cwd=short_dir)
            assert first.code == 0, first.err
            assert first.err.splitlines() == [
                "corral: warming up the native agent (first session after start) …"]
            second = await corral(*new, cwd=short_dir)  # the fork server serves now
            assert second.code == 0 and second.err == "", second.err
            for made in (first, second):
                closed = await corral("close", made.out.split()[0], "--state-dir", str(root))
                assert closed.code == 0, closed.err
        finally:
            stopped = await corral("stop", "--state-dir", str(root))
        assert stopped.code == 0, stopped.err
