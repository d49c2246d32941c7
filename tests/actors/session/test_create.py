"""``session.create`` refuses what a session could not survive, before anything exists.

Bad values are ``bad_request`` naming the field (never an ``ok`` and a session that dies of
them), and ``options.log_path`` writes only a new file of its own, outside the state directory,
leaking no descriptor on any refusal. In process, against the real fake harness.
"""

from __future__ import annotations

import os
import stat
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import trio

from actors.harnesses import drivers
from actors.session.sessions import SessionTable
from protocol.errors import (BadRequest, CorralError, PlacementBinaryMissing, PlacementCwdMissing,
                             SandboxUnavailable)
from protocol.messages import SessionCreate
from protocol.models import McpServer
from actors.app import Config
from supervisor.ledger.store import Ledger


@pytest.fixture
async def table(tmp_path: Path) -> AsyncIterator[SessionTable]:
    config = Config()
    state = tmp_path / "state"
    table = SessionTable(state, config, Ledger(state), drivers(config))
    table.boot()
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            await nursery.start(table.run)
            yield table
            nursery.cancel_scope.cancel()


def _create(cwd: Path | str, **fields: Any) -> SessionCreate:
    return SessionCreate(id=1, harness="fake", cwd=str(cwd), **fields)


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"model": "opus\0"}, "model"),
        ({"env": {"TOKEN": "a\0b"}}, "env.TOKEN"),
        ({"env": {"A=B": "x"}}, "env"),
        ({"env": {"": "x"}}, "env"),
        ({"env": {"A\0": "x"}}, "env"),
        ({"cwd": ""}, "cwd"),
        ({"cwd": "relative/dir"}, "cwd"),
        ({"cwd": "/no/such/directory"}, "cwd"),
        ({"options": {"script": "echo hi\0"}}, "options.script"),
        ({"mcp_servers": [McpServer(name="fs", command="mcp", args=["--root", "/\0"])]}, "mcp_servers[0].args[1]"),
        ({"mcp_servers": [McpServer(name="fs", command="mcp", env={"K=V": "x"})]}, "mcp_servers[0].env"),
    ],
)
async def test_values_no_child_could_take_are_a_bad_request_naming_the_field(
        table: SessionTable, tmp_path: Path, fields: dict[str, Any], field: str) -> None:
    cwd = fields.pop("cwd", str(tmp_path))
    with pytest.raises(BadRequest) as info:
        await table.create(_create(cwd, **fields))
    assert info.value.data == {"field": field}
    assert field.split("[")[0].split(".")[0] in info.value.message
    assert table.infos() == [] and list(table.root.iterdir()) == []


async def test_rejected_log_paths_leak_no_descriptor(table: SessionTable, tmp_path: Path) -> None:
    before = len(os.listdir("/proc/self/fd"))
    for _ in range(200):
        with pytest.raises(BadRequest):
            await table.create(_create(tmp_path, options={"log_path": "/proc/self/mem"}))
    assert len(os.listdir("/proc/self/fd")) == before


async def test_log_paths_inside_the_state_directory_are_refused(table: SessionTable, tmp_path: Path) -> None:
    state = table.state_dir
    (state / "token").write_text("secret-token\n")
    (state / "token").chmod(0o600)
    (state / "sessions" / "s-other").mkdir()
    link = tmp_path / "into-state"
    link.symlink_to(state)
    for path in (state / "token", state / "ledger.json", state / "new.ndjson",
                 state / "sessions" / "s-other" / "frames.ndjson", link / "frames.ndjson"):
        with pytest.raises(BadRequest, match="state directory") as info:
            await table.create(_create(tmp_path, options={"log_path": str(path)}))
        assert info.value.data == {"field": "options.log_path"}
    assert (state / "token").read_text() == "secret-token\n"
    assert stat.S_IMODE((state / "token").stat().st_mode) == 0o600
    assert not (state / "ledger.json").exists() and not (state / "new.ndjson").exists()


async def test_existing_files_and_symlinks_are_never_taken_over(table: SessionTable, tmp_path: Path) -> None:
    existing = tmp_path / "notes.txt"
    existing.write_text("mine\n")
    existing.chmod(0o644)
    target = tmp_path / "target.ndjson"
    link = tmp_path / "link.ndjson"
    link.symlink_to(target)
    for path in (existing, link):
        with pytest.raises(BadRequest, match="log_path"):
            await table.create(_create(tmp_path, options={"log_path": str(path)}))
    assert existing.read_text() == "mine\n" and stat.S_IMODE(existing.stat().st_mode) == 0o644
    assert not target.exists()


async def test_a_relative_log_path_is_taken_from_the_session_cwd_and_created_0600(
        table: SessionTable, tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    info = await table.create(_create(work, options={"log_path": "frames.ndjson"}, prompt="hi"))
    await table.live_session(info.id).close("c-1")
    created = work / "frames.ndjson"
    assert stat.S_IMODE(created.stat().st_mode) == 0o600
    assert b'"text":"hi"' in created.read_bytes()
    assert not Path("frames.ndjson").exists() or Path("frames.ndjson").resolve() == created


@pytest.mark.parametrize("refusal", [PlacementCwdMissing, PlacementBinaryMissing])
async def test_a_node_without_the_cwd_or_binary_refuses_the_create(
        table: SessionTable, tmp_path: Path, refusal: type[CorralError]) -> None:
    """A placement backend's opener that finds the cwd or binary missing on its node: the
    create is refused with that code and message (naming the node), once, not a crash loop."""
    opened: list[str] = []

    @asynccontextmanager
    async def opener(spec: Any, ledger: Any, *, node: str) -> AsyncIterator[Any]:
        opened.append(spec.key)
        raise refusal("cwd '/w' does not exist on node n1 (10.0.0.7)")
        yield  # an async generator that never yields

    table.opener = opener
    with pytest.raises(refusal, match=r"node n1 \(10\.0\.0\.7\)"):
        await table.create(_create(tmp_path))
    (info,) = table.infos()
    assert info.state in ("closed", "failed")
    assert len(opened) == 1


async def test_a_sandboxed_session_on_a_placement_backend_is_sandbox_unavailable(
        table: SessionTable, tmp_path: Path) -> None:
    """A placed child runs on another node, out of reach of the Landlock ruleset and the
    session's proxy: asking for a sandbox there is refused, never run unconfined."""
    opened: list[str] = []

    @asynccontextmanager
    async def opener(spec: Any, ledger: Any, *, node: str) -> AsyncIterator[Any]:
        opened.append(spec.key)
        raise AssertionError("no child may be opened")
        yield  # an async generator that never yields

    table.opener = opener
    with pytest.raises(SandboxUnavailable, match="local placement backend"):
        await table.create(_create(tmp_path, options={"sandbox": {"mode": "auto", "net": "off"}}))
    assert opened == [] and table.infos() == []
