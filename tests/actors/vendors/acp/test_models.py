"""ACP models probe (``actors.vendors.acp.models``) against a scripted agent: the handshake,
requests from the agent refused, ``authenticate``, failures as reasons, nothing left behind."""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest
import trio

from actors.vendors.acp import PROFILES
from actors.vendors.acp.detect import probe
from actors.vendors.acp.models import list_models
from actors.vendors.probe import ProbeFailed

AGENT = """#!{python}
import json, os, sys, time
if sys.argv[1:] == ["--version"]:
    print("1.0.102")
    sys.exit(0)
mode = os.environ["FAKE_MODE"]
log = open(os.environ["FAKE_LOG"], "a")
def send(message):
    print(json.dumps({{"jsonrpc": "2.0", **message}}), flush=True)
print("a warning on stdout", flush=True)
for line in sys.stdin:
    message = json.loads(line)
    log.write(json.dumps([message.get("method"), message.get("params"), os.getcwd()]) + "\\n")
    log.flush()
    method, mid = message.get("method"), message.get("id")
    if method == "initialize":
        send({{"id": mid, "result": {{"protocolVersion": 1,
              "authMethods": [{{"id": "cached_token"}}, {{"id": "other"}}]}}}})
    elif method == "authenticate":
        send({{"id": mid, "result": {{}}}})
    elif method == "session/new":
        if mode == "exit":
            sys.stderr.write("BYOK providers require an explicit model.\\n\\n")
            sys.exit(1)
        if mode == "hang":
            time.sleep(600)
        if mode == "auth":
            send({{"id": mid, "error": {{"code": -32000, "message": "Authentication required",
                  "data": "key sk-abcdef123456 rejected"}}}})
            continue
        send({{"id": "agent-1", "method": "fs/read_text_file", "params": {{"path": "/x"}}}})
        send({{"method": "session/update", "params": {{"update": {{"sessionUpdate": "plan"}}}}}})
        answer = json.loads(sys.stdin.readline())
        log.write(json.dumps(["answer", answer.get("error", {{}}).get("code")]) + "\\n")
        log.flush()
        models = {{"currentModelId": "a", "availableModels": [{{"modelId": "a"}}, {{"modelId": "b"}}]}}
        options = [{{"id": "model", "category": "model", "currentValue": "p/x",
                    "options": [{{"value": "p/x"}}, {{"value": "p/y"}}]}}]
        result = {{"sessionId": "s1", **({{"models": models}} if mode == "models" else
                                          {{"configOptions": options}})}}
        send({{"id": mid, "result": result}})
"""


@pytest.fixture
def private_tmp(tmp_path: Path) -> Iterator[Path]:
    """``tempfile``'s directory, private to the test: what the probe leaves there shows."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    was = tempfile.tempdir
    tempfile.tempdir = str(folder)
    try:
        yield folder
    finally:
        tempfile.tempdir = was


def agent(tmp: Path, mode: str) -> tuple[str, dict[str, str]]:
    path = tmp / "agent"
    path.write_text(AGENT.format(python=sys.executable))
    path.chmod(0o755)
    return str(path), {**os.environ, "FAKE_MODE": mode, "FAKE_LOG": str(tmp / "log")}


def log(tmp: Path) -> list[list[object]]:
    return [msgspec.json.decode(line) for line in (tmp / "log").read_text().splitlines()]


async def test_models_of_a_new_session_in_a_throwaway_directory(tmp_path: Path,
                                                                 private_tmp: Path) -> None:
    path, env = agent(tmp_path, "models")
    assert await list_models(PROFILES["omp"], path, env, timeout=30) == ["a", "b"]
    (init, _, _), (new, params, cwd), answer = log(tmp_path)
    assert (init, new, answer) == ("initialize", "session/new", ["answer", -32601])
    assert isinstance(params, dict) and params == {"cwd": cwd, "mcpServers": []}
    assert str(cwd).startswith(str(private_tmp)) and list(private_tmp.iterdir()) == []


async def test_a_model_config_option_and_the_profiles_auth_method(tmp_path: Path,
                                                                  private_tmp: Path) -> None:
    path, env = agent(tmp_path, "config")
    assert await list_models(PROFILES["grok"], path, env, timeout=30) == ["p/x", "p/y"]
    assert [entry[0] for entry in log(tmp_path)][:3] == ["initialize", "authenticate", "session/new"]
    assert log(tmp_path)[1][1] == {"methodId": "cached_token"}


async def test_an_agent_that_wants_a_login_is_a_reason_not_an_error(tmp_path: Path,
                                                                    private_tmp: Path) -> None:
    path, env = agent(tmp_path, "auth")
    failed = await list_models(PROFILES["omp"], path, env, timeout=30)
    assert failed == ProbeFailed(reason="omp session/new failed (-32000): Authentication required: "
                                        "key sk-*** rejected")
    detection = await probe(PROFILES["copilot"], path, env, with_models=True)
    assert (detection.available, detection.version, detection.features.models) == (True, "1.0.102", [])
    assert detection.reason == ("models not listed: copilot session/new failed (-32000): "
                                "Authentication required: key sk-*** rejected")
    assert list(private_tmp.iterdir()) == []


async def test_an_agent_that_exits_is_a_reason_quoting_it(tmp_path: Path, private_tmp: Path) -> None:
    path, env = agent(tmp_path, "exit")
    assert await list_models(PROFILES["omp"], path, env, timeout=30) == ProbeFailed(
        reason="omp session/new exited (status 1) without answering: "
               "BYOK providers require an explicit model.")
    assert list(private_tmp.iterdir()) == []


async def test_a_silent_agent_times_out_and_leaves_nothing(tmp_path: Path, private_tmp: Path) -> None:
    path, env = agent(tmp_path, "hang")
    with trio.fail_after(60):
        failed = await list_models(PROFILES["omp"], path, env, timeout=3)
    assert failed == ProbeFailed(reason="omp session/new did not answer within 3s", timed_out=True)
    assert list(private_tmp.iterdir()) == []
    with trio.move_on_after(2):  # the caller's cancellation: the directory goes too
        await list_models(PROFILES["omp"], path, env, timeout=30)
    assert list(private_tmp.iterdir()) == []
