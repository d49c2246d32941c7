"""Record what a real ACP agent and our translator said to each other, for the replay tests.

    .ci/vendor-netns python3 -m tests.actors.vendors.acp.record AGENT SCENARIO

writes ``recordings/AGENT-SCENARIO.jsonl`` (see ``live`` for the line format). The agent runs
offline against the fake model server (``tests.fakes.acp_offline``), in a temporary directory
that is the same for every run (``/tmp/corral-acp-record/AGENT``), so paths in the frames are
stable. Scenarios:

* ``write``: ask mode, the session runs ``Work``; the model writes ``hello.txt`` through the
  agent's file tool; the agent's permission is allowed and the write goes through ``fs/*``.
* ``shell``: ask mode, client-side terminals; the model runs ``echo made > made.txt``, allowed.
* ``deny``: ask mode, no client-side services; the model's shell command is denied.
* ``cancel``: the model's answer hangs; the turn is interrupted; one more turn follows.
* ``turns``: three text turns on one process.
* ``resume``: a turn, the agent is killed, a new one resumes the session (``session/load`` or
  ``session/resume``) and takes one more turn (Gemini waits for the next minute).
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

import msgspec
import trio

from actors.harness import HarnessRequest
from protocol.events import Event, Permission, Result
from protocol.models import Permissions
from tests.fakes.acp_offline import MODELS, aside, binary, offline
from tests.fakes.model_script import Turn, call, custom, hang, say
from tests.fakes.model_server import FakeModels

from .live import LiveAcp

HERE = Path(__file__).parent / "recordings"
ROOT = Path("/tmp/corral-acp-record")


def write_call(agent: str, path: str, text: str, client_fs: bool) -> Turn:
    if agent == "gemini":
        return call("write_file", file_path=path, content=text)
    if agent == "copilot":
        return call("create", path=path, file_text=text)
    if agent == "codex-acp":
        lines = "".join(f"+{line}\n" for line in text.splitlines())
        return custom("apply_patch", f"*** Begin Patch\n*** Add File: {path}\n{lines}*** End Patch")
    if agent == "opencode-acp":
        return call("write", filePath=path, content=text)
    return call(("mcp__acp__" if client_fs else "") + "Write", file_path=path, content=text)


def shell_call(agent: str, command: str, client: bool) -> Turn:
    if agent == "gemini":
        return call("run_shell_command", command=command)
    if agent in ("copilot", "opencode-acp"):
        return call("bash", command=command, description="run it")
    if agent == "codex-acp":
        return call("exec_command", cmd=command)
    return call(("mcp__acp__" if client else "") + "Bash", command=command, timeout=10000)


def is_(kind: type[Event]) -> Any:
    return lambda event: isinstance(event, kind)


async def record(agent: str, scenario: str) -> None:
    tmp = ROOT / agent
    shutil.rmtree(tmp, ignore_errors=True)
    for name in ("work", "run"):
        (tmp / name).mkdir(parents=True)
    work = tmp / "work"
    client = scenario in ("write", "shell")
    steps: list[Turn] = {
        "write": [write_call(agent, str(work / "hello.txt"), "hi\n", True), say("Done.")],
        "shell": [shell_call(agent, "echo made > made.txt", True), say("Done.")],
        "deny": [shell_call(agent, "touch denied.txt", False), say("Not done.")],
        "cancel": [hang("Thinking"), say("After.")],
        "turns": [say("One."), say("Two."), say("Three.")],
        "resume": [say("Noted: apricot."), say("Apricot.")],
    }[scenario]
    out = (HERE / f"{agent}-{scenario}.jsonl").open("w")

    def line(entry: dict[str, Any]) -> None:
        out.write(json.dumps(entry) + "\n")

    server = FakeModels(steps, aside=aside(agent))
    async with trio.open_nursery() as nursery:
        port = await nursery.start(server.serve)
        env, options = offline(agent, port, tmp / "home")
        mode = "ask" if scenario in ("write", "shell", "deny") else "auto_edit"
        request = HarnessRequest(
            session_id="s-record", cwd=str(work), model=MODELS[agent], env=env,
            options={**options, "binary": binary(agent)}, work_dir=str(tmp / "run"),
            permissions=Permissions(mode=mode), runs_work=client)
        with trio.fail_after(150):
            live = await nursery.start(_run, agent, request, tmp, line)
            await live.wait_until(lambda: live.translator.ready)
            await _scenario(agent, scenario, live, server)
            if scenario == "resume":
                vendor = live.translator.vendor_session_id
                await live.close()
                line({"dir": "restart"})
                again = msgspec.structs.replace(request, resume=vendor)
                live = LiveAcp(agent, again, stderr_path=tmp / "stderr", record=line,
                               driver=live.driver)
                await nursery.start(live.run)
                await live.wait_until(lambda: live.translator.ready)
                start = len(live.events)
                await live.call("prompt", "which word?")
                await live.wait_for(is_(Result), start)
            await live.close()
        nursery.cancel_scope.cancel()
    out.close()


async def _run(agent: str, request: HarnessRequest, tmp: Path, line: Any,
               task_status: trio.TaskStatus[LiveAcp] = trio.TASK_STATUS_IGNORED) -> None:
    live = LiveAcp(agent, request, stderr_path=tmp / "stderr", record=line)
    await live.run(task_status=task_status)


async def _scenario(agent: str, scenario: str, live: LiveAcp, server: FakeModels) -> None:
    prompts = {"turns": ["first", "second", "third"], "cancel": ["slowly", "again"],
               "resume": ["remember apricot"]}.get(scenario, ["do it"])
    for index, text in enumerate(prompts):
        start = len(live.events)
        await live.call("prompt", text)
        if scenario == "cancel" and index == 0:
            await server.wait_for(lambda: server.hanging == 1)
            await live.call("interrupt")
        while True:
            found = await live.index_of(lambda e: isinstance(e, (Permission, Result)), start)
            event, start = live.events[found], found + 1
            if isinstance(event, Result):
                break
            decision = "deny" if scenario == "deny" else "allow"
            await live.call("decide", event.permission_id, decision)


def main() -> None:
    agent, scenario = sys.argv[1], sys.argv[2]
    trio.run(record, agent, scenario)


if __name__ == "__main__":
    main()
