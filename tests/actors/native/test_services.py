"""``DaemonServices``: native asks answered by a real MCP registry running the fake MCP server
(real processes, so real time under generous timeouts), and the diagnostics path guard."""

from __future__ import annotations

from pathlib import Path

import pytest
import trio

from actors.harness import HarnessRequest
from actors.lsp import DiagnosticLine, DiagnosticsQuery, ServerStatus
from actors.lsp import DiagnosticsReport as LspReport
from actors.mcp.config import McpConfig
from actors.native.daemon.services import DaemonServices
from protocol.errors import UnknownSession
from protocol.models import McpServer
from protocol.native import (
    AskDiagnostics,
    CallMcpTool,
    DiagnosticsReport,
    ListMcpTools,
    McpResult,
    McpTools,
)
from tests.actors.mcp.support import FAKE, REPO, fake_table, running_registry

LIMIT = 60


class FakeLsp:
    """Answers every query with one diagnostic; records the queries."""

    def __init__(self) -> None:
        self.asked: list[tuple[str, DiagnosticsQuery]] = []

    async def answer(self, cwd: str, query: DiagnosticsQuery) -> LspReport:
        self.asked.append((cwd, query))
        line = DiagnosticLine(path="a.py", line=1, column=7, severity="error", source="Ruff",
                              code="F821", message="Undefined name `x`")
        return LspReport(path="a.py", diagnostics=[line], servers=[ServerStatus(server="ruff", state="ok")])


def request(tmp: Path, *servers: McpServer) -> HarnessRequest:
    (tmp / "work").mkdir(exist_ok=True)
    return HarnessRequest(session_id="s-1", cwd=str(tmp / "work"), work_dir=str(tmp / "h"),
                          mcp_servers=list(servers))


async def test_tools_and_calls_of_config_and_session_servers_through_the_registry(tmp_path: Path) -> None:
    own = McpServer(name="mine", command=FAKE[0], args=[*FAKE[1:]], cwd=str(REPO),
                    env={"MCP_FAKE_DIR": str(tmp_path / "own")})
    (tmp_path / "own").mkdir()
    live = {"s-1": request(tmp_path, own)}
    config = McpConfig(servers={"fake": fake_table(tmp_path / "marks", call_timeout=20)})
    with trio.fail_after(LIMIT):
        async with running_registry(config) as registry:
            services = DaemonServices(mcp=registry, lsp=None, session=live.get)
            listed = await services.answer("s-1", ListMcpTools(id=1))
            assert isinstance(listed, McpTools) and listed.id == 1
            names = {tool.name for tool in listed.tools}
            assert {"mcp__fake__echo", "mcp__mine__echo", "mcp__fake__crash"} <= names
            echo = next(t for t in listed.tools if t.name == "mcp__fake__echo")
            assert echo.description and echo.input_schema["properties"]["text"]["type"] == "string"

            done = await services.answer("s-1", CallMcpTool(id=2, name="mcp__mine__echo",
                                                            arguments={"text": "hi"}))
            assert done == McpResult(id=2, text="hi")
            crashed = await services.answer("s-1", CallMcpTool(id=3, name="mcp__fake__crash"))
            assert isinstance(crashed, McpResult) and crashed.is_error
            assert crashed.error_code == "mcp.server_crashed"
            assert crashed.text.startswith("[mcp.server_crashed]")
            unknown = await services.answer("s-1", CallMcpTool(id=4, name="mcp__nope__x"))
            assert isinstance(unknown, McpResult) and unknown.error_code == "mcp.unknown_server"
            again = await services.answer("s-1", CallMcpTool(id=5, name="mcp__fake__echo",
                                                             arguments={"text": "back"}))
            assert again == McpResult(id=5, text="back")
            assert registry.binding("s-1") is not None  # bound at the first ask, once
            with pytest.raises(UnknownSession):
                await services.answer("s-2", ListMcpTools(id=6))


async def test_diagnostics_are_asked_for_paths_inside_the_session_cwd_only(tmp_path: Path) -> None:
    lsp = FakeLsp()
    live = {"s-1": request(tmp_path)}
    services = DaemonServices(mcp=None, lsp=lsp, session=live.get)  # type: ignore[arg-type]
    work = (tmp_path / "work").resolve()
    inside = await services.answer("s-1", AskDiagnostics(id=1, path="a.py", text="print(x)\n"))
    assert inside == DiagnosticsReport(
        id=1, path="a.py", text="Diagnostics:\na.py:1:7: error [Ruff F821] Undefined name `x`",
        lines=["a.py:1:7: error [Ruff F821] Undefined name `x`"], servers={"ruff": "ok"})
    assert lsp.asked == [(str(work), DiagnosticsQuery(path=str(work / "a.py"), text="print(x)\n"))]
    for outside in ("../elsewhere.py", "/etc/passwd.py"):
        report = await services.answer("s-1", AskDiagnostics(id=2, path=outside))
        assert report == DiagnosticsReport(id=2, path=outside)
    assert len(lsp.asked) == 1
    none = await DaemonServices(mcp=None, lsp=None, session=live.get).answer("s-1", ListMcpTools(id=3))
    assert none == McpTools(id=3)
