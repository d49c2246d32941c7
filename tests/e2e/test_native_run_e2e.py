"""``corral run`` and ``corral probe`` as a user runs them: the console entry point in a child
process, the provider found in a config file's ``[providers.*]`` table and the key in the
environment, against the fake model server (OpenAI Responses API) of this test process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import trio

from actors.native.cli.oneshot import PING, PING_MARKER
from tests.fakes.model_script import call, say
from tests.fakes.model_server import FakeModels

TIMEOUT = 120
KEY = "sk-run-e2e-0123456789"
REPO = Path(__file__).resolve().parents[2]


async def corral(tmp: Path, port: int, *args: str) -> subprocess.CompletedProcess[bytes]:
    """``corral ARGS --config FILE`` with a config that points ``openai`` at the fake server."""
    config = tmp / "config.toml"
    config.write_text(f'[providers.openai]\nbase_url = "http://127.0.0.1:{port}/v1"\n')
    env = {k: v for k, v in os.environ.items() if k != "CORRAL_STATE_DIR"}
    env.update(PYTHONPATH=str(REPO), OPENAI_API_KEY=KEY, XDG_STATE_HOME=str(tmp / "state"))
    return await trio.run_process([sys.executable, "-m", "actors.app", *args, "--config",
                                   str(config)], check=False, capture_stdout=True,
                                  capture_stderr=True, env=env, cwd=str(tmp))


async def test_corral_run_and_probe_end_to_end(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    server = FakeModels([call("write", path="note.txt", content="hello"), say("wrote note.txt")])
    with trio.fail_after(TIMEOUT):
        async with trio.open_nursery() as nursery:
            port = await nursery.start(server.serve)
            done = await corral(tmp_path, port, "run", "--model", "openai/fake-model", "--cwd",
                                str(work), "--tools", "write,read", "write", "a", "note")
            assert done.returncode == 0, done.stderr.decode()
            assert done.stdout.decode() == "wrote note.txt\n"
            assert (work / "note.txt").read_text() == "hello"
            calls = server.model_requests()
            assert len(calls) == 2
            assert calls[0].headers.get("authorization") == f"Bearer {KEY}"
            assert sorted(t["name"] for t in calls[0].body["tools"]) == ["read", "write"]

            # a bound reached: exit 1, the outcome code on stderr, --json has it too
            server.add(call("write", path="other.txt", content="x"))
            done = await corral(tmp_path, port, "run", "--json", "--model", "openai/fake-model",
                                "--cwd", str(work), "--max-model-calls", "1", "again")
            assert done.returncode == 1
            report = json.loads(done.stdout)
            assert report["outcome"] == "max_model_calls" and report["usage"]["model_calls"] == 1
            assert not (work / "other.txt").exists()
            server.add(call("write", path="other.txt", content="x"))
            done = await corral(tmp_path, port, "run", "--model", "openai/fake-model",
                                "--cwd", str(work), "--max-model-calls", "1", "again")
            assert done.returncode == 1 and "outcome: max_model_calls" in done.stderr.decode()

            server.add(call(PING, marker=PING_MARKER))
            done = await corral(tmp_path, port, "probe", "openai/fake-model")
            assert done.returncode == 0, done.stderr.decode()
            assert "can call tools" in done.stdout.decode()
            probe_request = server.model_requests()[-1].body
            assert [t["name"] for t in probe_request["tools"]] == [PING]
            assert probe_request.get("stream") in (None, False)  # one plain request
            server.add(say("I would rather not"))
            done = await corral(tmp_path, port, "probe", "openai/fake-model")
            assert done.returncode == 1
            assert "outcome: tool_calling_unsupported" in done.stderr.decode()
            nursery.cancel_scope.cancel()
