"""A native agent gets pyright's type errors on what it writes, and its fix clears them.

A real daemon with the real ``pyright-langserver --stdio`` (ruff switched off in its config,
to keep the test to one server) runs a native worker against the fake model server: a
``write`` of a Python file with a type error (``x: int = "a"``) carries pyright's diagnostic in
its result (the first write waits for pyright's cold start, 1.5–3 s here, more under load), the
model sees it in its next request, and the fixed file's write carries none. Skipped when
pyright is not installed, unless ``CI`` is set (then it fails).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
import trio

from tests.fakes.model_script import call, say
from tests.fakes.model_server import FakeModels

from .test_native_e2e import create_params
from .vendor_rig import daemon_session, is_kind, of

TIMEOUT = 180
PROGRAM = "pyright-langserver"
TYPE_ERROR = "bad.py:1:10: error [Pyright reportAssignmentType] "

pytestmark = pytest.mark.skipif(shutil.which(PROGRAM) is None and not os.environ.get("CI"),
                                reason="pyright is not installed (npm install -g pyright)")


async def test_a_write_with_a_type_error_carries_pyrights_diagnostic_and_the_fix_clears_it(
        tmp_path: Path) -> None:
    if shutil.which(PROGRAM) is None:
        pytest.fail("CI is set but pyright is not installed (npm install -g pyright)")
    config = tmp_path / "corral.toml"
    config.write_text("[lsp.servers.ruff]\nenabled = false\n")
    server = FakeModels([
        call("write", path="bad.py", content='x: int = "a"\n'), say("Wrote it."),
        call("write", path="bad.py", content="x: int = 1\n"), say("Fixed."),
    ])
    with trio.fail_after(TIMEOUT):
        async with trio.open_nursery() as nursery:
            port = await nursery.start(server.serve)
            params = create_params(tmp_path, "openai", port)
            async with daemon_session(tmp_path / "state", params, timeout=TIMEOUT,
                                      ready=is_kind("init"), config=str(config)) as rig:
                outputs = []
                for prompt in ("write it", "fix it"):
                    events = await rig.turn(prompt)
                    [done] = [t for t in of(events, "tool") if t["phase"] == "completed"]
                    assert (done["name"], done["is_error"]) == ("write", False), done
                    outputs.append(done["output"])
                servers = (await rig.client.ok("lsp.list"))["servers"]
            nursery.cancel_scope.cancel()
    written, fixed = outputs
    head, _, diagnostics = written.partition("\n\nDiagnostics:\n")
    [line] = diagnostics.splitlines()
    assert line.startswith(TYPE_ERROR) and '"int"' in line, written
    assert "Diagnostics" not in fixed, fixed
    assert [(s["server"], s["state"]) for s in servers] == [("pyright", "running")]
    requests = server.model_requests()
    assert TYPE_ERROR in json.dumps(requests[1].body)  # the model saw the error it introduced
