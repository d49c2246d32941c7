"""``workspace`` events through a real daemon and real git: ``changed`` after a turn's result
when the count of changed files moved, and ``merged``/``discarded`` also for sessions that have
ended (their log takes the event, their subscribers see it). Waits on events, never sleeps."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.actors.workspace.gitrig import git, make_repo

from .daemonproc import DaemonProc, raw_client
from .test_workspaces import _create, _turn

pytestmark = pytest.mark.timeout(180)


def _workspace(frame: dict[str, Any], state: str | None = None) -> bool:
    event = frame.get("event") or {}
    return bool(event["type"] == "workspace" and (state is None or event["state"] == state))


async def _log(daemon: DaemonProc, sid: str) -> list[dict[str, Any]]:
    """Every event frame of the session's log so far (a fresh subscription from seq 1)."""
    async with raw_client(daemon) as other:
        last = (await other.ok("session.get", session_id=sid))["session"]["last_seq"]
        await other.ok("session.subscribe", session_id=sid)
        frames = await other.events_until(sid, lambda f: f.get("seq") == last)
    return [f for f in frames if f["type"] == "event"]


async def test_a_turn_that_changes_the_count_is_followed_by_a_changed_event(
        daemon: DaemonProc, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    async with raw_client(daemon) as client:
        session = await _create(client, repo, "counted")
        sid = session["id"]
        await client.ok("session.subscribe", session_id=sid)
        first = await _turn(client, sid, "echo a > a.txt")
        changed = await client.events_until(sid, lambda f: _workspace(f, "changed"), timeout=60)
        assert changed[-1]["event"] == {
            "type": "workspace", "state": "changed", "branch": "corral/counted",
            "path": session["workspace"]["path"], "changed_files": 1}
        assert changed[-1]["seq"] > max(f["seq"] for f in first)  # after the turn's result
        await _turn(client, sid, "true")  # nothing changes: no event
        await _turn(client, sid, "echo b > b.txt && rm a.txt && echo c > README.md")
        await client.events_until(sid, lambda f: _workspace(f, "changed"), timeout=60)
        listed = (await client.ok("session.get", session_id=sid))["session"]
        assert listed["workspace"]["changed_files"] == 2  # b.txt added, README.md modified
        log = await _log(daemon, sid)
    spaces = [(f["event"]["state"], f["event"]["changed_files"]) for f in log if _workspace(f)]
    assert spaces == [("created", 0), ("changed", 1), ("changed", 2)]


async def test_merge_and_discard_of_ended_sessions_reach_their_logs(
        daemon: DaemonProc, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    async with raw_client(daemon) as client:
        one = await _create(client, repo, "one")
        two = await _create(client, repo, "two")
        three = await _create(client, repo, "three")
        for session in (one, two, three):
            await client.ok("session.subscribe", session_id=session["id"])
        await _turn(client, one["id"], "echo one > one.txt")
        for session in (one, two):
            await client.ok("session.close", session_id=session["id"])
            await client.events_until(session["id"], lambda f: f["event"]["type"] == "exit")

        # Ended: the subscription that saw the session close sees the event too.
        merged = await client.ok("workspace.merge", session_id=one["id"], strategy="squash")
        assert git(repo, "rev-parse", "HEAD") == merged["commit"]
        [event] = [f["event"] for f in await client.events_until(
            one["id"], lambda f: _workspace(f, "merged")) if _workspace(f)]
        assert (event["branch"], event["changed_files"]) == ("corral/one", 0)

        assert await client.ok("workspace.discard", session_id=two["id"]) == {}
        await client.events_until(two["id"], lambda f: _workspace(f, "discarded"))
        last = (await client.ok("session.get", session_id=two["id"]))["session"]["last_seq"]
        assert await client.ok("workspace.discard", session_id=two["id"]) == {}  # a no-op
        assert (await client.ok("session.get", session_id=two["id"]))["session"]["last_seq"] == last

        # Live, with force: closed first, then discarded; the event follows the exit.
        assert await client.ok("workspace.discard", session_id=three["id"], force=True) == {}
        tail = await client.events_until(three["id"], lambda f: _workspace(f, "discarded"))
        kinds = [f["event"]["type"] for f in tail]
        assert kinds.index("exit") < kinds.index("workspace")

        # One was closed right after its turn: the count that turn moved is logged all the same.
        for session, states in ((one, ["changed", "merged"]), (two, ["discarded"]),
                                (three, ["discarded"])):
            log = await _log(daemon, session["id"])
            assert [f["event"]["state"] for f in log if _workspace(f)] == ["created", *states]
            assert [f["seq"] for f in log] == list(range(1, len(log) + 1))


async def test_a_session_closed_right_after_a_result_still_logs_its_changed_event(
        daemon: DaemonProc, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    async with raw_client(daemon) as client:
        session = await _create(client, repo, "hasty")
        sid = session["id"]
        await client.ok("session.subscribe", session_id=sid)
        await _turn(client, sid, "echo a > a.txt")
        await client.ok("session.close", session_id=sid)  # while git counts the changes
        log = await _log(daemon, sid)
    kinds = [f["event"]["type"] for f in log]
    assert [(f["event"]["state"], f["event"]["changed_files"]) for f in log if _workspace(f)] == [
        ("created", 0), ("changed", 1)]
    changed = next(n for n, f in enumerate(log) if _workspace(f, "changed"))
    assert kinds.index("result") < changed < kinds.index("exit")
