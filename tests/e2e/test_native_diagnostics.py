"""A native agent gets the diagnostics of what it writes from the daemon's language servers.

A real daemon with the real ``ruff server`` (pyright switched off in its config, to keep the
test to one server) runs a native worker against the fake model server: a ``write`` of a Python
file with an undefined name carries ruff's diagnostic in its result (the first write waits for
the cold server), the ``diagnostics`` tool reports it too, and the fixed file's write carries
none; the model sees each in its next request.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import trio

from tests.fakes.model_script import call, say
from tests.fakes.model_server import FakeModels

from .test_native_e2e import create_params
from .vendor_rig import daemon_session, is_kind, of

TIMEOUT = 120
UNDEFINED = "bad.py:1:7: error [Ruff F821] Undefined name `undefined_name`"

pytestmark = pytest.mark.skipif(shutil.which("ruff") is None, reason="ruff is not installed")


async def test_write_results_and_the_diagnostics_tool_carry_ruffs_diagnostics(tmp_path: Path) -> None:
    config = tmp_path / "corral.toml"
    config.write_text("[lsp.servers.pyright]\nenabled = false\n")
    server = FakeModels([
        call("write", path="bad.py", content="print(undefined_name)\n"), say("Wrote it."),
        call("diagnostics", path="bad.py"), say("Checked."),
        call("write", path="bad.py", content="print('fine')\n"), say("Fixed."),
        call("diagnostics", path="bad.py"), say("Clean."),
    ])
    with trio.fail_after(TIMEOUT):
        async with trio.open_nursery() as nursery:
            port = await nursery.start(server.serve)
            params = create_params(tmp_path, "openai", port)
            async with daemon_session(tmp_path / "state", params, timeout=TIMEOUT,
                                      ready=is_kind("init"), config=str(config)) as rig:
                outputs = []
                for prompt in ("write it", "check it", "fix it", "check again"):
                    events = await rig.turn(prompt)
                    [done] = [t for t in of(events, "tool") if t["phase"] == "completed"]
                    assert done["is_error"] is False, done
                    outputs.append(done["output"])
                servers = (await rig.client.ok("lsp.list"))["servers"]
            nursery.cancel_scope.cancel()
    written, checked, fixed, clean = outputs
    assert written.endswith(f"\n\nDiagnostics:\n{UNDEFINED}"), written
    assert checked == f"Diagnostics:\n{UNDEFINED}"
    assert "Diagnostics" not in fixed
    assert clean == "No errors or warnings in bad.py."
    assert [(s["server"], s["state"]) for s in servers] == [("ruff", "running")]
    requests = server.model_requests()
    assert UNDEFINED in json.dumps(requests[1].body)  # the model saw the error it introduced
