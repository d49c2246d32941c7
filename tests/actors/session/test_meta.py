"""Session metadata: round trips, no secret values on disk, atomic private writes, the boot listing."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

import msgspec
import pytest

from actors.session.meta import (
    SessionMeta,
    StoredMcpServer,
    list_sessions,
    meta_from_create,
    read_meta,
    write_meta,
)
from protocol.errors import StorageFailed
from protocol.messages import SessionCreate
from protocol.models import McpServer, Permissions

SECRETS = ("sk-live-0123456789", "ghp_secretvalue", "Bearer tok-abcdef")


def create_request() -> SessionCreate:
    return SessionCreate(
        id=1,
        harness="fake",
        cwd="/work/project",
        name="demo",
        model="m-1",
        permissions=Permissions(mode="auto_edit", allow_tools=["Read*"]),
        env={"OPENAI_API_KEY": SECRETS[0], "DEBUG": "1"},
        mcp_servers=[
            McpServer(name="gh", command="gh-mcp", args=["--stdio"], env={"GITHUB_TOKEN": SECRETS[1]}),
            McpServer(name="web", url="https://mcp.example/", headers={"Authorization": SECRETS[2]}),
        ],
        options={"effort": "high"},
    )


def a_meta(session_id: str = "s-1") -> SessionMeta:
    return meta_from_create(session_id, create_request(), created_at="2026-12-02T10:00:00.123Z")


def test_round_trip(tmp_path: Path) -> None:
    meta = a_meta()
    write_meta(tmp_path, meta)
    assert read_meta(tmp_path) == meta


def test_meta_from_create_keeps_keys_and_drops_values() -> None:
    meta = a_meta()
    assert meta.env_keys == ["DEBUG", "OPENAI_API_KEY"]
    assert meta.mcp_servers == [
        StoredMcpServer(name="gh", command="gh-mcp", args=["--stdio"], env_keys=["GITHUB_TOKEN"]),
        StoredMcpServer(name="web", url="https://mcp.example/", header_keys=["Authorization"]),
    ]
    assert (meta.state, meta.restarts, meta.closed_reason, meta.vendor_session_id) == ("starting", 0, None, None)
    assert meta.permissions == Permissions(mode="auto_edit", allow_tools=["Read*"])
    assert meta.options == {"effort": "high"}


def test_secret_values_never_reach_the_disk(tmp_path: Path) -> None:
    write_meta(tmp_path, a_meta())
    written = (tmp_path / "meta.json").read_bytes()
    for secret in (*SECRETS, "tok-abcdef"):
        assert secret.encode() not in written
    assert b"OPENAI_API_KEY" in written and b"GITHUB_TOKEN" in written


def test_write_is_private_and_leaves_no_temporary_file(tmp_path: Path) -> None:
    directory = tmp_path / "sessions" / "s-1"
    write_meta(directory, a_meta())
    write_meta(directory, msgspec.structs.replace(a_meta(), state="closed"))
    assert sorted(p.name for p in directory.iterdir()) == ["meta.json"]
    assert stat.S_IMODE(directory.stat().st_mode) == 0o700
    assert stat.S_IMODE((directory / "meta.json").stat().st_mode) == 0o600
    assert read_meta(directory).state == "closed"


def test_a_stale_temporary_file_is_replaced(tmp_path: Path) -> None:
    (tmp_path / ".meta.json.tmp").write_bytes(b"left over by a crash " * 100)
    os.chmod(tmp_path / ".meta.json.tmp", 0o644)
    write_meta(tmp_path, a_meta())
    assert sorted(p.name for p in tmp_path.iterdir()) == ["meta.json"]
    assert read_meta(tmp_path) == a_meta()
    assert stat.S_IMODE((tmp_path / "meta.json").stat().st_mode) == 0o600


def test_failed_write_keeps_the_old_file_and_no_temporary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_meta(tmp_path, a_meta())
    before = (tmp_path / "meta.json").read_bytes()

    def full_disk(fd: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", full_disk)
    with pytest.raises(StorageFailed, match="No space left"):
        write_meta(tmp_path, msgspec.structs.replace(a_meta(), restarts=3))
    monkeypatch.undo()
    assert (tmp_path / "meta.json").read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["meta.json"]


@pytest.mark.parametrize(
    "content",
    [
        b"",
        b"{not json",
        b"[]",
        b'{"id": "s-1"}',
        b'{"id":"s-1","harness":"fake","cwd":"/","created_at":"x","state":"bogus"}',
    ],
)
def test_read_corrupt_meta_raises_storage_failed(tmp_path: Path, content: bytes) -> None:
    (tmp_path / "meta.json").write_bytes(content)
    with pytest.raises(StorageFailed, match="corrupt"):
        read_meta(tmp_path)


def test_read_missing_meta_raises_storage_failed(tmp_path: Path) -> None:
    with pytest.raises(StorageFailed, match="cannot read"):
        read_meta(tmp_path)


def test_unknown_fields_are_ignored(tmp_path: Path) -> None:
    (tmp_path / "meta.json").write_bytes(
        b'{"id":"s-1","harness":"fake","cwd":"/","created_at":"t","state":"closed","added_later":[1]}'
    )
    assert read_meta(tmp_path) == SessionMeta(id="s-1", harness="fake", cwd="/", created_at="t", state="closed")


def test_list_sessions_reports_each_directory(tmp_path: Path) -> None:
    sessions = tmp_path / "sessions"
    write_meta(sessions / "s-a", a_meta("s-a"))
    write_meta(sessions / "s-c", a_meta("s-c"))
    (sessions / "s-b").mkdir()  # created, crashed before meta.json
    write_meta(sessions / "s-d", a_meta("s-other"))  # names another session
    (sessions / "s-e").mkdir()
    (sessions / "s-e" / "meta.json").write_bytes(b"{torn")
    (sessions / ".hidden").mkdir()
    (sessions / "stray-file").write_bytes(b"")
    listed = list_sessions(sessions)
    assert [path.name for path, _ in listed] == ["s-a", "s-b", "s-c", "s-d", "s-e"]
    outcome = dict((path.name, found) for path, found in listed)
    assert outcome["s-a"] == a_meta("s-a")
    assert outcome["s-c"] == a_meta("s-c")
    for name, match in (("s-b", "cannot read"), ("s-d", "names session 's-other'"), ("s-e", "corrupt")):
        assert isinstance(outcome[name], StorageFailed)
        assert match in str(outcome[name])


def test_list_sessions_of_a_missing_directory_is_empty(tmp_path: Path) -> None:
    assert list_sessions(tmp_path / "nothing") == []
