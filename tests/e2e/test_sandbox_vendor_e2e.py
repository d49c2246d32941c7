"""Claude Code and Codex sandboxed (``net = "on"``: the network part is the partner's), offline
against the fake model servers on 127.0.0.1: each completes a tool turn in its cwd, while a write
outside it, a read of a ``deny_read`` path and an append to its own log (the state directory is
outside ``/tmp`` here, in sight) fail inside its sandbox, and ``init`` carries the session's sandbox. The confinement is bubblewrap around the CLI's whole process tree.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest
import trio

from tests.fakes.anthropic_server import FakeAnthropic, bash, text
from tests.fakes.openai_server import Exec, FakeOpenAI, Text

from . import test_claude_e2e as claude
from . import test_codex_e2e as codex
from .vendor_rig import daemon_session, is_kind, of

pytestmark = [pytest.mark.vendor, pytest.mark.timeout(240),
              pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap")]


def _assert_log_whole(state: Path, sid: str) -> None:
    """The session's log (in sight of the sandbox: ``state`` is outside ``/tmp``) took no line
    from inside: the command's append to it failed."""
    lines = (state / "sessions" / sid / "events.jsonl").read_bytes().splitlines()
    assert lines and b"forged" not in lines and all(json.loads(line)["seq"] for line in lines)


def _outside() -> tuple[Path, Path]:
    """A directory outside ``/tmp`` (visible in the sandbox) with a secret in it, and the secret."""
    var = Path(tempfile.mkdtemp(prefix="corral-vendor-box-", dir="/var/tmp"))
    (var / "secret").mkdir()
    (var / "secret" / "key").write_text("s3cr3t")
    return var, var / "secret"


async def test_claude_code_sandboxed_completes_a_tool_turn_only_in_its_cwd(tmp_path: Path) -> None:
    if claude.BINARY is None:
        if os.environ.get("CI"):
            pytest.fail("Claude Code is not installed, and CI must run this test")
        pytest.skip("Claude Code is not installed")
    var, secret = _outside()
    script = [bash(f"echo in > made.txt; echo no > {var}/escaped.txt; cat {secret}/key; "
                   f"echo forged >> {var}/state/sessions/*/events.jsonl; echo done"),
              text("Done.")]
    server = FakeAnthropic(script)
    try:
        with trio.fail_after(claude.TIMEOUT):
            async with trio.open_nursery() as nursery:
                port = await nursery.start(server.serve)
                params = claude.create_params(tmp_path, port, permissions={"allow_tools": ["Bash"]}, options={
                    "sandbox": {"mode": "bwrap", "net": "on", "deny_read": [str(secret)]}})
                async with daemon_session(var / "state", params, timeout=claude.TIMEOUT,
                                          ready=claude.IDLE) as rig:
                    events = await rig.turn("make a file")
                    (init,) = of(events, "init")
                    assert init["sandbox"]["effective"] == "bwrap" and init["sandbox"]["net"] == "on"
                    assert (rig.work / "made.txt").read_text() == "in\n"
                    assert not (var / "escaped.txt").exists()
                    done = [t for t in of(events, "tool") if t["phase"] == "completed"]
                    assert done and "done" in str(done[-1]["output"]), done
                    assert "s3cr3t" not in str(done[-1]["output"])
                    assert "Read-only file system" in str(done[-1]["output"])
                    (result,) = of(events, "result")
                    assert result["is_error"] is False
                    _assert_log_whole(var / "state", rig.sid)
                nursery.cancel_scope.cancel()
    finally:
        shutil.rmtree(var)


async def test_codex_sandboxed_completes_a_tool_turn_only_in_its_cwd(tmp_path: Path) -> None:
    if codex.BINARY is None:
        if os.environ.get("CI"):
            pytest.fail("codex is not installed, and CI must run this test")
        pytest.skip("codex is not installed")
    var, secret = _outside()
    server = FakeOpenAI([Exec(cmd=f"echo in > made.txt; echo no > {var}/escaped.txt; cat {secret}/key; "
                              f"echo forged >> {var}/state/sessions/*/events.jsonl; echo done",
                              call_id="call_box"),
                         Text(text="Done.")])
    try:
        with trio.fail_after(codex.TIMEOUT):
            async with trio.open_nursery() as nursery:
                port = await nursery.start(server.serve)
                params = codex.create_params(tmp_path, port)
                params["options"]["sandbox"] = {"mode": "bwrap", "net": "on", "deny_read": [str(secret)]}
                async with daemon_session(var / "state", params, timeout=codex.TIMEOUT,
                                          ready=is_kind("init")) as rig:
                    events = await rig.turn("make a file")
                    assert (rig.work / "made.txt").exists(), codex.tool_outputs(server.responses()[1])
                    assert (rig.work / "made.txt").read_text() == "in\n"
                    assert not (var / "escaped.txt").exists()
                    done = [t for t in of(events, "tool") if t["phase"] == "completed"]
                    assert done and "done" in str(done[-1]["output"]), done
                    assert "s3cr3t" not in str(done[-1]["output"])
                    (result,) = of(events, "result")
                    assert result["is_error"] is False
                    info = await rig.info()
                    assert info["sandbox"]["effective"] == "bwrap"
                    _assert_log_whole(var / "state", rig.sid)
                nursery.cancel_scope.cancel()
    finally:
        shutil.rmtree(var)
