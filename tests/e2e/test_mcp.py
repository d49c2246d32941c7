"""MCP servers in a real daemon: mcp.list/mcp.restart on the wire, the CLI, and no orphan after
a daemon SIGKILL."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import trio

from .daemonproc import REPO, env_without_corral, raw_client, start_daemon, stop_daemon, wait_gone

pytestmark = pytest.mark.timeout(120)


def _config(tmp_path: Path, *extra: str) -> str:
    marks = tmp_path / "marks"
    marks.mkdir(exist_ok=True)
    path = tmp_path / "corral.toml"
    args = json.dumps(["-m", "tests.fakes.mcp_server", *extra])
    path.write_text(f"""
[mcp.servers.fake]
command = {json.dumps(sys.executable)}
args = {args}
cwd = {json.dumps(str(REPO))}
env = {{ MCP_FAKE_DIR = {json.dumps(str(marks))} }}
call_timeout = 20
""")
    return str(path)


async def test_mcp_list_and_restart_over_the_websocket(tmp_path: Path) -> None:
    daemon = await start_daemon(tmp_path / "state", config=_config(tmp_path))
    try:
        async with raw_client(daemon) as client:
            [idle] = (await client.ok("mcp.list"))["servers"]
            assert idle == {"name": "fake", "state": "idle", "pid": None, "tools": [], "restarts": 0,
                            "last_error": None, "transport": "stdio"}
            running = (await client.ok("mcp.restart", name="fake"))["server"]
            assert running["state"] == "running" and running["pid"]
            assert "mcp__fake__echo" in running["tools"]
            status = await client.ok("daemon.status")
            assert [(c["kind"], c["pid"]) for c in status["children"] if c["kind"] == "mcp"] == \
                [("mcp", running["pid"])]
            again = (await client.ok("mcp.restart", name="fake"))["server"]
            assert again["pid"] != running["pid"] and again["restarts"] == 1
            missing = await client.call("mcp.restart", name="nope")
            assert missing["type"] == "error" and missing["code"] == "mcp.unknown_server"
            pid = again["pid"]
        assert await stop_daemon(daemon) == 0
        assert wait_gone([pid]) == []
    finally:
        await stop_daemon(daemon)


async def test_corral_mcp_ls_json_and_restart(tmp_path: Path) -> None:
    daemon = await start_daemon(tmp_path / "state", config=_config(tmp_path))
    try:
        def corral(*args: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run([sys.executable, "-m", "actors.app", *args, "--state-dir", str(daemon.state_dir)],
                                  capture_output=True, text=True, cwd=REPO, env=env_without_corral(), timeout=60)

        listed = await trio.to_thread.run_sync(corral, "mcp", "ls", "--json")
        assert listed.returncode == 0, listed.stderr
        [server] = json.loads(listed.stdout)
        assert server["name"] == "fake" and server["state"] == "idle"
        restarted = await trio.to_thread.run_sync(corral, "mcp", "restart", "fake")
        assert restarted.returncode == 0, restarted.stderr
        assert "fake" in restarted.stdout and "running" in restarted.stdout
        table = await trio.to_thread.run_sync(corral, "mcp", "ls")
        assert table.stdout.splitlines()[0].split()[:3] == ["NAME", "STATE", "PID"]
        unknown = await trio.to_thread.run_sync(corral, "mcp", "restart", "nope")
        assert unknown.returncode == 1 and "nope" in unknown.stderr and "Traceback" not in unknown.stderr
    finally:
        await stop_daemon(daemon)


async def test_a_daemon_sigkill_leaves_no_server_process(tmp_path: Path) -> None:
    config = _config(tmp_path)
    daemon = await start_daemon(tmp_path / "state", config=config)
    try:
        async with raw_client(daemon) as client:
            pid = (await client.ok("mcp.restart", name="fake"))["server"]["pid"]
        assert pid
        os.kill(daemon.process.pid, signal.SIGKILL)
        await daemon.process.wait()
        assert wait_gone([pid]) == []
        again = await start_daemon(tmp_path / "state", config=config)
        try:
            ledger = json.loads((tmp_path / "state" / "ledger.json").read_text()) \
                if (tmp_path / "state" / "ledger.json").exists() else {"rows": []}
            assert not [row for row in ledger.get("rows", []) if row.get("pid") == pid]
        finally:
            await stop_daemon(again)
    finally:
        await stop_daemon(daemon)
