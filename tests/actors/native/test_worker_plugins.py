"""Python plugins from the ``corral.native_plugins`` entry points, registered through a temporary
dist-info directory on ``sys.path`` (nothing is installed)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from protocol.events import Error
from protocol.native_context import ContextSettings, SubagentDef
from tests.fakes.model_script import call, say

from .workerkit import WorkerRig, responses, result, run, tools

_MODULE = "corral_plugin_under_test"

_SOURCE = '''
from google.adk.plugins.base_plugin import BasePlugin

CALLS = []


class Recorder(BasePlugin):
    def __init__(self):
        super().__init__(name="recorder")

    async def before_model_callback(self, *, callback_context, llm_request):
        CALLS.append("before_model")

    async def after_model_callback(self, *, callback_context, llm_response):
        CALLS.append("after_model")

    async def before_tool_callback(self, *, tool, tool_args, tool_context):
        CALLS.append("before_tool:" + tool.name)

    async def after_tool_callback(self, *, tool, tool_args, tool_context, result):
        CALLS.append("after_tool:" + tool.name)
        if tool.name == "ls":
            return {"output": "rewritten by the plugin"}


class Boom(BasePlugin):
    def __init__(self):
        super().__init__(name="boom")

    async def before_tool_callback(self, *, tool, tool_args, tool_context):
        raise RuntimeError("the plugin broke")


def make_all():
    return [Recorder(), Boom()]
'''


@pytest.fixture
def plugin_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    root = tmp_path / "site"
    dist = root / "corral_plugin_under_test-1.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: corral-plugin-under-test\n"
                                   "Version: 1.0\n")
    (dist / "entry_points.txt").write_text(
        f"[corral.native_plugins]\nboth = {_MODULE}:make_all\n"
        f"missing = {_MODULE}_absent:Plugin\n")
    (root / f"{_MODULE}.py").write_text(_SOURCE)
    monkeypatch.syspath_prepend(str(root))
    yield root
    sys.modules.pop(_MODULE, None)


def test_plugins_see_model_and_tool_calls_and_a_failing_one_is_a_warning(
        tmp_path: Path, plugin_path: Path) -> None:
    async def body() -> None:
        async with WorkerRig(tmp_path, [call("ls", path="."), say("done")]) as rig:
            events = await rig.turn("list")
            assert not result(events).is_error
            calls = sys.modules[_MODULE].CALLS
            # after_model runs for each streamed chunk too: compare runs of the same call
            calls = [c for i, c in enumerate(calls) if i == 0 or calls[i - 1] != c]
            assert calls == ["before_model", "after_model", "before_tool:ls", "after_tool:ls",
                             "before_model", "after_model"]
            assert responses(rig.llm.requests[1])[-1] == {"output": "rewritten by the plugin"}
            codes = [e.code for e in rig.events if isinstance(e, Error)]
            assert codes.count("native.plugin.load_failed") == 1
            failed = [e for e in rig.events
                      if isinstance(e, Error) and e.code == "native.plugin.failed"]
            assert len(failed) == 1 and "the plugin broke" in failed[0].message
            assert "before_tool" in failed[0].message
            assert [t.phase for t in tools(events)] == ["started", "completed"]

    run(body)


def test_plugins_run_in_subagents_too(tmp_path: Path, plugin_path: Path) -> None:
    context = ContextSettings(subagents={"lister": SubagentDef(instructions="List.")},
                              agent_files=False)
    steps = [call("lister", task="list"), call("ls", path="."), say("listed"), say("done")]

    async def body() -> None:
        async with WorkerRig(tmp_path, steps, context=context) as rig:
            await rig.turn("go")
            calls = sys.modules[_MODULE].CALLS
            assert "before_tool:lister" in calls and "after_tool:ls" in calls
            assert calls.index("before_tool:lister") < calls.index("before_tool:ls") \
                < calls.index("after_tool:lister")

    run(body)
