"""The registry: one actor per fingerprint under the mcp supervisor, and session bindings."""

from __future__ import annotations

from pathlib import Path

import pytest
import trio

from actors.mcp.config import McpConfig, McpServerConfig
from actors.mcp.inject import harness_servers
from protocol.errors import McpUnknownServer, McpUnknownTool
from protocol.models import McpServer

from tests.actors.mcp.support import fake_table, marks, running_registry

pytestmark = pytest.mark.timeout(60)


def _session_entry(table: McpServerConfig, name: str, **keys: object) -> McpServer:
    return McpServer(name=name, command=table.command, args=list(table.args), env=dict(table.env),
                     cwd=table.cwd, **keys)  # type: ignore[arg-type]


async def test_config_servers_are_listed_idle_and_disabled_ones_not_at_all(tmp_path: Path) -> None:
    config = McpConfig(servers={"fake": fake_table(tmp_path),
                                "off": McpServerConfig(command="x", enabled=False)})
    async with running_registry(config) as registry:
        infos = registry.infos()
        assert [(i.name, i.state, i.pid, i.tools) for i in infos] == [("fake", "idle", None, [])]
        assert [c.id for c in registry._supervisor.which_children()] == ["mcp:fake"]  # type: ignore[union-attr]
        with pytest.raises(McpUnknownServer):
            await registry.restart("off")


async def test_sessions_share_one_process_per_definition_whatever_its_name(tmp_path: Path) -> None:
    table = fake_table(tmp_path)
    async with running_registry(McpConfig()) as registry:
        one = await registry.bind("s1", [_session_entry(table, "fs")])
        two = await registry.bind("s2", [_session_entry(table, "files", tools=["pid", "echo"])])
        pid_one = (await one.call("fs", "pid")).text()
        pid_two = (await two.call("files", "pid")).text()
        assert pid_one == pid_two and len(marks(tmp_path, "start-")) == 1
        assert [i.name for i in registry.infos()] == ["fs"]
        assert {t.name for t in await two.tools()} == {"mcp__files__pid", "mcp__files__echo"}
        with pytest.raises(McpUnknownTool):
            await two.call("files", "crash")  # outside this session's allow-list
        outcome = await two.call_named("mcp__files__crash")
        assert outcome.is_error and outcome.error_code == "mcp.unknown_tool"
        assert (await one.call_named("mcp__fs__echo", {"text": "hi"})).text() == "hi"


async def test_a_name_taken_by_another_definition_gets_a_suffix(tmp_path: Path) -> None:
    async with running_registry(McpConfig()) as registry:
        first = await registry.ensure(_definition(tmp_path / "a"))
        second = await registry.ensure(_definition(tmp_path / "b"))
        assert first == "fake" and second.startswith("fake-") and second != first
        assert await registry.ensure(_definition(tmp_path / "a")) == first


def _definition(marks_dir: Path) -> object:
    from actors.mcp.config import definition_of
    return definition_of("fake", fake_table(marks_dir))


async def test_a_binding_offers_config_servers_and_its_own_win_on_a_clash(tmp_path: Path) -> None:
    config = McpConfig(servers={"fake": fake_table(tmp_path / "config"),
                                "other": fake_table(tmp_path / "other")})
    async with running_registry(config) as registry:
        mine = fake_table(tmp_path / "mine")
        binding = await registry.bind("s1", [_session_entry(mine, "fake")])
        assert binding.names == ["fake", "other"]
        await binding.call("fake", "pid")
        assert marks(tmp_path / "mine", "start-") and not marks(tmp_path / "config", "start-")
        registry.unbind("s1")
        assert registry.by_token(binding.token) is None


async def test_tools_for_and_call_by_registry_name(tmp_path: Path) -> None:
    config = McpConfig(servers={"fake": fake_table(tmp_path, tools=["echo"])})
    async with running_registry(config) as registry:
        tools = await registry.tools_for(["fake"])
        assert [t.name for t in tools] == ["mcp__fake__echo"]
        assert (await registry.call("fake", "echo", {"text": "x"})).text() == "x"
        assert registry.infos()[0].tools == ["mcp__fake__echo"]
        with pytest.raises(McpUnknownServer):
            await registry.tools_for(["nope"])


async def test_harness_servers_point_at_the_endpoint_unless_direct(tmp_path: Path) -> None:
    config = McpConfig(servers={"fake": fake_table(tmp_path)})
    async with running_registry(config) as registry:
        registry.endpoint_url = "http://127.0.0.1:9/mcp"
        own = McpServer(name="web", url="http://example.invalid/mcp", headers={"X-K": "v"})
        shared = await harness_servers(registry, "s1", [own], {})
        token = registry.binding("s1").token  # type: ignore[union-attr]
        assert [(s.name, s.url, s.headers) for s in shared] == [
            ("fake", "http://127.0.0.1:9/mcp/fake", {"Authorization": f"Bearer {token}"}),
            ("web", "http://127.0.0.1:9/mcp/web", {"Authorization": f"Bearer {token}"}),
        ]
        direct = await harness_servers(registry, "s2", [own], {"mcp_direct": True})
        assert [(s.name, s.command is not None) for s in direct] == [("fake", True), ("web", False)]
        assert direct[1] == own and registry.binding("s2") is None
    await trio.lowlevel.checkpoint()
