"""The worker's tools answered by the daemon (in process, scripted model, scripted daemon):
MCP tools listed before every model request and called by ask, their permissions, the
``diagnostics`` tool and the diagnostics that decorate write and edit results."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from protocol.events import Init, Permission, Result
from protocol.native import (
    Answer,
    Ask,
    AskDiagnostics,
    CallMcpTool,
    DiagnosticsReport,
    ListMcpTools,
    McpResult,
    McpToolDecl,
    McpTools,
)
from tests.fakes.model_script import call, say

from .workerkit import WorkerRig, is_, responses, result, run, tools

SCHEMA = {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}
BLOCK = "Diagnostics:\na.py:1:7: error [Ruff F821] Undefined name `x`"


class Daemon:
    """The daemon's answers: a tool list that tests may change, call results, diagnostics."""

    def __init__(self, *names: str) -> None:
        self.tools = [McpToolDecl(name=n, description=f"{n} tool", input_schema=SCHEMA) for n in names]
        self.results: dict[str, McpResult] = {}
        self.report = DiagnosticsReport(id=0, path="a.py", text=BLOCK, lines=[BLOCK.splitlines()[1]],
                                        servers={"ruff": "ok"})

    def __call__(self, ask: Ask) -> Answer:
        match ask:
            case ListMcpTools(id=ask_id):
                return McpTools(id=ask_id, tools=list(self.tools))
            case CallMcpTool(id=ask_id, name=name, arguments=arguments):
                found = self.results.get(name)
                if found is not None:
                    return McpResult(id=ask_id, text=found.text, is_error=found.is_error,
                                     error_code=found.error_code)
                return McpResult(id=ask_id, text=f"{name} got {arguments}")
            case AskDiagnostics(id=ask_id, path=path):
                return DiagnosticsReport(id=ask_id, path=path, text=self.report.text,
                                         lines=self.report.lines, servers=self.report.servers)
        raise AssertionError(ask)


def offered(request: Any) -> set[str]:
    return set(request.tools_dict)


def of_kind(asks: list[Ask], kind: type) -> list[Any]:
    return [a for a in asks if isinstance(a, kind)]


def test_mcp_tools_are_listed_before_every_model_request_and_called_through_the_daemon(
        tmp_path: Path) -> None:
    daemon = Daemon("mcp__fs__read")
    script = [call("mcp__fs__read", path="notes.txt"), call("mcp__fs__grown", path="b"), say("done")]

    # One turn: read; the server's list grows meanwhile; the next request offers grown.
    async def body() -> None:
        async with WorkerRig(tmp_path, script, daemon=daemon) as rig:
            async def grow_after_first_call() -> None:
                await rig.wait_for(lambda: bool(of_kind(rig.asks, CallMcpTool)))
                daemon.tools.append(McpToolDecl(name="mcp__fs__grown", input_schema=SCHEMA))

            grower = asyncio.get_running_loop().create_task(grow_after_first_call())
            events = await rig.turn("read it")
            await grower
            [init] = [e for e in rig.events if isinstance(e, Init)]
        assert "diagnostics" in init.tools
        used = tools(events)
        assert [(t.name, t.kind, t.phase) for t in used] == [
            ("mcp__fs__read", "mcp", "started"), ("mcp__fs__read", "mcp", "completed"),
            ("mcp__fs__grown", "mcp", "started"), ("mcp__fs__grown", "mcp", "completed")]
        assert used[1].output == "mcp__fs__read got {'path': 'notes.txt'}" and not used[1].is_error
        assert of_kind(rig.asks, CallMcpTool)[0] == CallMcpTool(
            id=of_kind(rig.asks, CallMcpTool)[0].id, name="mcp__fs__read", arguments={"path": "notes.txt"})
        first, second, _third = rig.llm.requests
        assert "mcp__fs__read" in offered(first) and "mcp__fs__grown" not in offered(first)
        assert "mcp__fs__grown" in offered(second)  # no per-invocation caching of the list
        assert {"read", "write", "diagnostics"} <= offered(first)
        assert responses(second)[-1] == {"output": "mcp__fs__read got {'path': 'notes.txt'}"}
        assert len(of_kind(rig.asks, ListMcpTools)) >= 3  # one per model request at least
        assert result(events).stop_reason == "end_turn"

    run(body)


def test_mcp_tools_ask_in_ask_and_auto_edit_unless_allow_tools_matches(tmp_path: Path) -> None:
    daemon = Daemon("mcp__fs__read", "mcp__fs__write")
    script = [call("mcp__fs__write", path="x"), say("asked"), call("mcp__fs__read", path="y"),
              say("did not ask")]

    async def body() -> None:
        async with WorkerRig(tmp_path, script, mode="auto_edit", allow_tools=["mcp__fs__r*"],
                             daemon=daemon) as rig:
            await rig.prompt("write")
            ask = await rig.permission()
            assert (ask.tool, ask.kind, ask.input) == ("mcp__fs__write", "mcp", {"path": "x"})
            assert of_kind(rig.asks, CallMcpTool) == []  # nothing ran before the decision
            await rig.decide(ask.permission_id, "allow")
            events = await rig.until(is_(Result))
            [done] = tools(events, "completed")
            assert (done.name, done.is_error) == ("mcp__fs__write", False)
            events = await rig.turn("read")
            assert not [e for e in events if isinstance(e, Permission)]
            assert [t.name for t in tools(events, "completed")] == ["mcp__fs__read"]

    run(body)


def test_a_failed_server_is_an_error_result_and_the_turn_goes_on(tmp_path: Path) -> None:
    daemon = Daemon("mcp__fs__read")
    daemon.results["mcp__fs__read"] = McpResult(
        id=0, text="[mcp.server_failed] fs failed", is_error=True, error_code="mcp.server_failed")
    script = [call("mcp__fs__read", path="x"), say("it failed")]

    async def body() -> None:
        async with WorkerRig(tmp_path, script, daemon=daemon) as rig:
            events = await rig.turn("read")
        [done] = tools(events, "completed")
        assert (done.output, done.is_error) == ("[mcp.server_failed] fs failed", True)
        assert result(events).is_error is False
        assert responses(rig.llm.requests[1])[-1] == {"error": "[mcp.server_failed] fs failed"}

    run(body)


def test_write_and_edit_results_carry_the_daemons_diagnostics_and_the_tool_asks_for_them(
        tmp_path: Path) -> None:
    daemon = Daemon()
    script = [call("write", path="a.py", content="print(x)\n"), say("wrote"),
              call("edit", path="a.py", old_string="x", new_string="1"), say("edited"),
              call("diagnostics", path="a.py"), say("checked"),
              call("diagnostics", path="notes.txt"), say("nothing checks it")]

    async def body() -> None:
        async with WorkerRig(tmp_path, script, daemon=daemon) as rig:
            written = tools(await rig.turn("write"), "completed")[0]
            daemon.report = DiagnosticsReport(id=0, path="a.py", servers={"ruff": "ok"})
            edited = tools(await rig.turn("edit"), "completed")[0]
            checked = tools(await rig.turn("check"), "completed")[0]
            daemon.report = DiagnosticsReport(id=0, path="notes.txt")
            unchecked = tools(await rig.turn("check notes"), "completed")[0]
        assert written.output.startswith("Created a.py") and written.output.endswith(f"\n\n{BLOCK}")
        assert "Diagnostics" not in edited.output and not edited.is_error
        assert checked.kind == "read" and checked.output == "No errors or warnings in a.py."
        assert unchecked.output == "No language server checks notes.txt."
        diagnostics = of_kind(rig.asks, AskDiagnostics)
        assert [(d.path, d.text) for d in diagnostics] == [
            ("a.py", "print(x)\n"), ("a.py", None), ("a.py", None), ("notes.txt", None)]

    run(body)


def test_without_a_daemon_the_worker_asks_nothing_and_offers_its_coding_tools_alone(
        tmp_path: Path) -> None:
    async def body() -> None:
        async with WorkerRig(tmp_path, [call("write", path="a.py", content="x\n"), say("ok")]) as rig:
            events = await rig.turn("write")
            [init] = [e for e in rig.events if isinstance(e, Init)]
        assert "diagnostics" not in init.tools
        assert tools(events, "completed")[0].output.startswith("Created a.py")
        assert "Diagnostics" not in tools(events, "completed")[0].output
        assert not any(name.startswith(("mcp__", "diagnostics")) for name in offered(rig.llm.requests[0]))

    run(body)
