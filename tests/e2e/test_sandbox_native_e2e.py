"""A sandboxed native session through a real daemon: its worker runs under bubblewrap (exec'd,
not forked: the whole process inside the session's mounts), or confines itself with Landlock.

The fake model server (on 127.0.0.1, reached by the worker itself, which keeps its network) asks
for tool calls; each must be held by the kernel: ``bash`` cannot write outside the cwd nor read a
``deny_read`` path, the ``write`` tool cannot write outside it (even if its path check were
wrong, the mounts and Landlock refuse), with ``net = "off"`` ``bash`` cannot reach a local
HTTP server that answers outside the sandbox (under bubblewrap each command has an empty network
namespace of its own; under Landlock its TCP rules refuse), and ``bash`` cannot append to the
session's own log.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import tempfile
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import trio

from supervisor.sandbox import landlock
from supervisor.sandbox.available import bwrap_problem
from tests.fakes.model_script import call, say
from tests.fakes.model_server import FakeModels

from .test_native_e2e import TIMEOUT, create_params
from .vendor_rig import Rig, daemon_session, is_kind, of

pytestmark = [pytest.mark.timeout(240)]

_MODES = [
    pytest.param("bwrap", marks=pytest.mark.skipif(
        bwrap_problem() is not None and not os.environ.get("CI"), reason=f"no bubblewrap: {bwrap_problem()}")),
    pytest.param("landlock", marks=pytest.mark.skipif(
        landlock.abi() < 4, reason="needs Landlock with TCP rules (ABI 4)")),
]


@asynccontextmanager
async def _sandboxed(tmp: Path, server: FakeModels, sandbox: dict[str, Any]) -> AsyncIterator[Rig]:
    """A daemon with one subscribed, sandboxed native session (openai) whose worker is up."""
    async with trio.open_nursery() as nursery:
        port = await nursery.start(server.serve)
        params = create_params(tmp, "openai", port)
        params["options"] = {**params["options"], "sandbox": sandbox}
        async with daemon_session(tmp / "state", params, timeout=TIMEOUT, ready=is_kind("init")) as rig:
            yield rig
        nursery.cancel_scope.cancel()


class _Hello(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"REACHED")

    def log_message(self, *args: object) -> None:
        return None


_REFUSED = {"bwrap": "Network is unreachable", "landlock": "Permission denied"}


@pytest.mark.parametrize("mode", _MODES)
async def test_native_bash_and_file_tools_stay_in_the_cwd_and_net_off_reaches_nothing(
        tmp_path: Path, mode: str) -> None:
    var = Path(tempfile.mkdtemp(prefix="corral-native-box-", dir="/var/tmp"))
    secret = var / "secret"
    secret.mkdir()
    (secret / "key").write_text("s3cr3t")
    http = ThreadingHTTPServer(("127.0.0.1", 0), _Hello)
    port = http.server_address[1]
    threading.Thread(target=http.serve_forever, daemon=True).start()
    with socket.create_connection(("127.0.0.1", port), 5):
        pass  # reachable from outside the sandbox
    fetch = f"python3 -c \"import urllib.request as u; print(u.urlopen('http://127.0.0.1:{port}/', timeout=5).read())\""
    server = FakeModels([
        call("bash", command="echo in > made.txt && cat made.txt"), say("one"),
        call("bash", command=f"echo no > {var}/escaped.txt"), say("two"),
        call("bash", command=f"cat {secret}/key"), say("three"),
        call("write", path=str(var / "written.txt"), content="no\n"), say("four"),
        call("bash", command=fetch), say("five"),
        call("bash", command=f"echo forged >> {tmp_path}/state/sessions/*/events.jsonl"), say("six"),
        call("bash", command=f"echo stored > $(echo {tmp_path}/state/sessions/*/native)/x.txt"), say("seven"),
        call("bash", command="cat /proc/1/comm"), say("eight"),
    ])
    try:
        with trio.fail_after(TIMEOUT):
            async with _sandboxed(tmp_path, server, {"mode": mode, "net": "off",
                                                     "deny_read": [str(secret)]}) as rig:
                info = await rig.info()
                assert info.get("sandbox", {}).get("effective") == mode, info
                outputs = []
                for text in ("one", "two", "three", "four", "five", "six", "seven", "eight"):
                    events = await rig.turn(text)
                    done = [t for t in of(events, "tool") if t["phase"] == "completed"]
                    assert done, events
                    outputs.append(done[-1])
                assert (rig.work / "made.txt").read_text() == "in\n" and outputs[0]["is_error"] is False
                assert outputs[1]["is_error"] and not (var / "escaped.txt").exists()
                assert outputs[2]["is_error"] and "s3cr3t" not in str(outputs[2]["output"])
                assert outputs[3]["is_error"] and not (var / "written.txt").exists()
                assert outputs[4]["is_error"] and "REACHED" not in str(outputs[4]["output"]), outputs[4]
                # bubblewrap: an empty network namespace per command; Landlock: its TCP rules
                assert _REFUSED[mode] in str(outputs[4]["output"]), outputs[4]
                # its own log cannot be written (its native store can: the worker keeps it there)
                own = tmp_path / "state" / "sessions" / info["id"]
                assert outputs[5]["is_error"] and outputs[6]["is_error"] is False, [o["output"] for o in outputs[5:]]
                lines = (own / "events.jsonl").read_bytes().splitlines()
                assert b"forged" not in lines and all(json.loads(line)["seq"] for line in lines)
                assert (own / "native" / "x.txt").read_text() == "stored\n"
                # bubblewrap holds the whole worker: its PID namespace's first process is bwrap
                assert ("bwrap" in str(outputs[7]["output"])) == (mode == "bwrap"), outputs[7]
    finally:
        http.shutdown()
        shutil.rmtree(var)
