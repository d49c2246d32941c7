"""The worktree requests that involve a session (``WorktreeRequests``), with real git and a fake
session table that writes down what it was asked, in order.

What they promise: the worktree comes before its session and goes with a session that could not
be made; the ``workspace`` event comes before the first prompt; discard is ``unknown_session``
first, ``unsupported`` before anything is closed, ``session_busy`` for a running session unless
``force`` closes it; a merge removes the worktree only of a session that has ended.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from actors.workspace.requests import WorktreeRequests
from protocol import events as ev
from protocol.errors import BadRequest, SessionBusy, StorageFailed, UnknownSession, Unsupported
from protocol.events import SessionState
from protocol.messages import SessionCreate
from protocol.models import SessionInfo, WorkspaceSpec

from .gitrig import git, make_repo, new_session, workspaces

pytestmark = pytest.mark.timeout(120)


class _FakeSession:
    """A session of the fake table: its state, and what was asked of it (into the journal)."""

    def __init__(self, table: _FakeTable, session_id: str, cwd: str) -> None:
        self.table = table
        self.id = session_id
        self.cwd = cwd
        self.state: SessionState = "idle"

    def info(self) -> SessionInfo:
        return SessionInfo(id=self.id, name=None, harness="fake", cwd=self.cwd, model=None,
                           state=self.state, created_at="2026-01-01T00:00:00Z", last_seq=0,
                           restarts=0, pid=None)

    async def prompt(self, text: str, by: str) -> None:
        self.table.journal.append(("prompt", self.id, text, by))

    async def close(self, by: str) -> None:
        self.table.journal.append(("close", self.id, by))
        self.state = "closed"
        self.table.ended[self.id] = self.table.sessions.pop(self.id)


class _FakeTable:
    """A session table in memory: ``create`` makes the session directory the worktree record is
    kept in (unless ``make_directory`` is off, which makes ``bind`` fail)."""

    def __init__(self, sessions_dir: Path) -> None:
        self.sessions_dir = sessions_dir
        self.sessions: dict[str, _FakeSession] = {}
        self.ended: dict[str, _FakeSession] = {}
        self.journal: list[tuple[Any, ...]] = []
        self.make_directory = True
        self.refuse: Exception | None = None

    @property
    def live(self) -> Mapping[str, _FakeSession]:
        return self.sessions

    def get(self, session_id: str) -> _FakeSession:
        found = self.sessions.get(session_id) or self.ended.get(session_id)
        if found is None:
            raise UnknownSession(f"no session {session_id!r}")
        return found

    async def current(self, session_id: str) -> _FakeSession:
        return self.get(session_id)

    async def create(self, request: SessionCreate, *, session_id: str | None = None) -> SessionInfo:
        assert session_id is not None
        self.journal.append(("create", session_id, request))
        if self.refuse is not None:
            raise self.refuse
        if self.make_directory:
            (self.sessions_dir / session_id).mkdir()
        self.sessions[session_id] = _FakeSession(self, session_id, request.cwd)
        return self.sessions[session_id].info()

    async def announce(self, session_id: str, event: ev.Event) -> None:
        self.journal.append(("announce", session_id, event))

    def add(self, session_id: str, cwd: Path) -> _FakeSession:
        """A session made elsewhere (``gitrig.new_session`` made its worktree)."""
        self.sessions[session_id] = _FakeSession(self, session_id, str(cwd))
        return self.sessions[session_id]


def _rig(tmp_path: Path) -> tuple[Path, _FakeTable, WorktreeRequests]:
    repo = make_repo(tmp_path / "repo")
    spaces = workspaces(tmp_path / "state")
    table = _FakeTable(spaces.sessions_dir)
    return repo, table, WorktreeRequests(spaces, table)


def _branches(repo: Path) -> str:
    return git(repo, "branch", "--list", "corral/*")


async def test_create_makes_the_worktree_then_the_session_in_it_then_announces_then_prompts(
        tmp_path: Path) -> None:
    repo, table, requests = _rig(tmp_path)
    info = await requests.create(SessionCreate(id=1, harness="fake", cwd=str(repo), name="tidy",
                                               prompt="hello", workspace=WorkspaceSpec(mode="worktree")))
    assert info.workspace is not None and info.repo == str(repo)
    worktree = Path(info.workspace.path)
    assert worktree.is_dir() and info.workspace.branch in _branches(repo)
    (create, sid, plain), (announce, *announced), prompt = table.journal
    assert (create, sid) == ("create", info.id) and announce == "announce"
    # the session runs in the worktree, and the prompt waits for the ``workspace`` event
    assert plain.cwd == info.cwd == str(worktree) and plain.workspace is None and plain.prompt is None
    assert announced == [info.id, ev.Workspace(state="created", branch=info.workspace.branch,
                                               path=str(worktree), changed_files=0)]
    assert prompt == ("prompt", info.id, "hello", "session")
    assert (tmp_path / "state" / "sessions" / info.id / "workspace.json").is_file()


async def test_create_with_mode_none_is_a_plain_create_with_the_chosen_id(tmp_path: Path) -> None:
    repo, table, requests = _rig(tmp_path)
    request = SessionCreate(id=1, harness="fake", cwd=str(repo), prompt="hello",
                            workspace=WorkspaceSpec(mode="none"))
    info = await requests.create(request)
    assert table.journal == [("create", info.id, request)]  # the prompt goes with the create
    assert info.workspace is None and _branches(repo) == ""


async def test_create_refused_leaves_no_worktree_or_branch(tmp_path: Path) -> None:
    repo, table, requests = _rig(tmp_path)
    table.refuse = BadRequest("no such model")
    with pytest.raises(BadRequest):
        await requests.create(SessionCreate(id=1, harness="fake", cwd=str(repo),
                                            workspace=WorkspaceSpec(mode="worktree")))
    assert [entry[0] for entry in table.journal] == ["create"]
    assert _branches(repo) == "" and git(repo, "worktree", "list").count("\n") == 0


async def test_a_session_whose_record_cannot_be_kept_is_closed_and_its_worktree_goes(
        tmp_path: Path) -> None:
    repo, table, requests = _rig(tmp_path)
    table.make_directory = False  # ``bind`` has no session directory to write into
    with pytest.raises(StorageFailed):
        await requests.create(SessionCreate(id=1, harness="fake", cwd=str(repo), prompt="hello",
                                            workspace=WorkspaceSpec(mode="worktree")))
    (_, sid, _), close = table.journal
    assert close == ("close", sid, "session") and table.get(sid).state == "closed"
    assert _branches(repo) == "" and git(repo, "worktree", "list").count("\n") == 0


async def test_create_of_a_bad_workspace_creates_no_session(tmp_path: Path) -> None:
    _, table, requests = _rig(tmp_path)
    with pytest.raises(BadRequest):
        await requests.create(SessionCreate(id=1, harness="fake", cwd=str(tmp_path),
                                            workspace=WorkspaceSpec(mode="worktree")))
    assert table.journal == []


async def test_discard_of_an_unknown_session_is_unknown_session(tmp_path: Path) -> None:
    _, table, requests = _rig(tmp_path)
    with pytest.raises(UnknownSession):
        await requests.discard("s-nope", force=True, by="c-1")
    assert table.journal == []


async def test_discard_of_a_session_without_worktree_is_unsupported_and_closes_nothing(
        tmp_path: Path) -> None:
    repo, table, requests = _rig(tmp_path)
    table.add("s-1", repo)
    with pytest.raises(Unsupported):
        await requests.discard("s-1", force=True, by="c-1")
    assert table.journal == [] and table.get("s-1").state == "idle"


async def test_discard_of_a_running_session_is_busy_without_force(tmp_path: Path) -> None:
    repo, table, requests = _rig(tmp_path)
    record = await new_session(requests.workspaces, "s-1", repo)
    table.add("s-1", Path(record.path))
    with pytest.raises(SessionBusy, match="session s-1 is idle: close it first"):
        await requests.discard("s-1", force=False, by="c-1")
    assert table.journal == [] and Path(record.path).is_dir() and record.branch in _branches(repo)


async def test_discard_with_force_closes_the_session_then_discards_once(tmp_path: Path) -> None:
    repo, table, requests = _rig(tmp_path)
    record = await new_session(requests.workspaces, "s-1", repo)
    table.add("s-1", Path(record.path))
    await requests.discard("s-1", force=True, by="c-7")
    assert table.journal == [
        ("close", "s-1", "c-7"),
        ("announce", "s-1", ev.Workspace(state="discarded", branch=record.branch, path=record.path,
                                         changed_files=0)),
    ]
    assert not Path(record.path).exists() and _branches(repo) == ""
    await requests.discard("s-1", force=False, by="c-7")  # the session has ended; nothing to do
    assert len(table.journal) == 2  # a second discard announces nothing


async def test_merge_keeps_a_running_sessions_worktree_and_removes_an_ended_ones(tmp_path: Path) -> None:
    repo, table, requests = _rig(tmp_path)
    running = await new_session(requests.workspaces, "s-1", repo, name="one")
    ended = await new_session(requests.workspaces, "s-2", repo, name="two")
    table.add("s-1", Path(running.path))
    await table.add("s-2", Path(ended.path)).close("c-1")
    (Path(running.path) / "one.txt").write_text("one\n")
    (Path(ended.path) / "two.txt").write_text("two\n")

    await requests.merge("s-1", "merge")
    await requests.merge("s-2", "merge")

    assert (repo / "one.txt").read_text() == "one\n" and (repo / "two.txt").read_text() == "two\n"
    assert Path(running.path).is_dir() and running.branch in _branches(repo)
    assert not Path(ended.path).exists() and ended.branch not in _branches(repo)
    announced = [(entry[1], entry[2].state) for entry in table.journal if entry[0] == "announce"]
    assert announced == [("s-1", "merged"), ("s-2", "merged")]


async def test_merge_of_an_unknown_session_is_unknown_session(tmp_path: Path) -> None:
    _, _, requests = _rig(tmp_path)
    with pytest.raises(UnknownSession):
        await requests.merge("s-nope", "merge")
