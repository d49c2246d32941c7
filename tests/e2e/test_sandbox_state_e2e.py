"""A sandboxed session cannot touch its own record: through a real daemon, the fake harness's
``bash`` tool under real bubblewrap and real Landlock, with the session's cwd a home that holds
corral's state directory (the hard case: a writable cwd around the masked state directory).

Inside, the session's ``events.jsonl`` and ``meta.json`` can be neither appended to, overwritten
nor read, another session's log and the token are unreadable, nothing can be made in the state
directory; the session still works: its turns complete and its log stays whole.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import pytest

from supervisor.sandbox import landlock

from .daemonproc import raw_client, start_daemon, stop_daemon
from .test_sandbox_e2e import _tool
from tests.needs import need_bwrap

pytestmark = [pytest.mark.timeout(240)]


@pytest.mark.parametrize("mode", ["bwrap", "landlock"])
async def test_a_sandboxed_session_cannot_rewrite_its_log_nor_read_other_sessions(mode: str) -> None:
    if mode == "bwrap":
        need_bwrap()
    if mode == "landlock" and landlock.abi() < 1:
        pytest.skip("needs a kernel with Landlock")
    # Outside /tmp, which bubblewrap replaces with a private one: the state directory is in sight.
    home = Path(tempfile.mkdtemp(prefix="corral-state-box-", dir="/var/tmp"))
    state = home / ".local" / "state" / "corral"
    (home / "proj").mkdir()  # (under Landlock nothing can be made right in the home: the mask splits it)
    daemon = await start_daemon(state)
    try:
        async with raw_client(daemon) as client:
            other = (await client.ok("session.create", harness="fake", cwd=str(home)))["session"]["id"]
            created = await client.ok("session.create", harness="fake", cwd=str(home),
                                      options={"sandbox": {"mode": mode, "net": "on"}})
            sid = created["session"]["id"]
            assert created["session"]["sandbox"]["effective"] == mode
            await client.ok("session.subscribe", session_id=sid)
            own = state / "sessions" / sid
            log_before = (own / "events.jsonl").read_bytes()
            meta_before = json.loads((own / "meta.json").read_text())
            token = (state / "token").read_text().strip()
            assert token

            attacks = (f"echo forged >> {own}/events.jsonl", f"echo '{{}}' > {own}/meta.json",
                       f"truncate -s 0 {own}/events.jsonl", f"rm {own}/meta.json",
                       f"mv {own}/events.jsonl {own}/old", f"cat {own}/events.jsonl",
                       f"cat {state}/sessions/{other}/events.jsonl", f"cat {state}/token",
                       f"echo x > {state}/sessions/{other}/events.jsonl", f"echo x > {state}/x")
            for attack in attacks:
                result = await _tool(client, sid, attack)
                assert result["is_error"], (attack, result)
                assert '"seq"' not in result["output"] and token not in result["output"], (attack, result)
            ok = await _tool(client, sid, "echo in > proj/made && cat proj/made")
            assert not ok["is_error"] and ok["output"] == "in\n", ok
            if mode == "bwrap":  # (Landlock keeps names listable: docs/sandbox.md)
                listing = await _tool(client, sid, f"ls -a {state}/sessions {state}")
                assert other not in listing["output"] and "token" not in listing["output"], listing

            log = (own / "events.jsonl").read_bytes()
            assert log.startswith(log_before) and b"forged\n" not in log.splitlines(keepends=True)
            events = [json.loads(line) for line in log.splitlines()]  # every line a whole frame
            assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
            assert sum(1 for e in events if e["event"]["type"] == "result") == \
                len(attacks) + (2 if mode == "bwrap" else 1)  # every turn ended
            meta = json.loads((own / "meta.json").read_text())
            assert meta["id"] == sid and meta["sandbox"] == meta_before["sandbox"]
            assert not (state / "x").exists() and not (own / "old").exists()
            got = await client.ok("session.get", session_id=sid)
            assert got["session"]["state"] == "idle"
    finally:
        await stop_daemon(daemon)
        shutil.rmtree(home)
