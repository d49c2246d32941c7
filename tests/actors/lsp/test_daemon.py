"""The ``lsp`` supervisor inside a real daemon: ``[lsp]`` from the config file, ``lsp.list`` over
the websocket, ``corral lsp ls``, and ``corral stop`` leaving no language-server process."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from functools import partial
from pathlib import Path

import psutil
import pytest
import trio

from protocol.messages import LspList, LspListResult
from supervisor.client import open_client
from supervisor.ledger.store import Ledger
from tests.actors.lsp.rig import FAKE
from tests.daemonconfig import without_prewarm

REPO = Path(__file__).resolve().parents[3]

LIMIT = 60


@pytest.fixture
def short_dir() -> Iterator[Path]:
    """A short directory: a Unix socket path must fit in 108 bytes."""
    path = Path(tempfile.mkdtemp(prefix="cl-", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


async def corral(*args: str) -> str:
    done = await trio.run_process([sys.executable, "-m", "actors.app", *args],
                                  capture_stdout=True, capture_stderr=True, check=False)
    assert done.returncode == 0, done.stderr.decode()
    return done.stdout.decode()


async def test_lsp_ls_and_stop_leave_no_server_behind(short_dir: Path) -> None:
    config = short_dir / "config.toml"
    fake = json.dumps([sys.executable, FAKE, "--children"])
    config.write_text(f"""
[daemon]
port = 0

[lsp]
settle_timeout = 5.0

[lsp.servers.fake]
command = {fake}
extensions = [".fk"]

[lsp.servers.ruff]
enabled = false
""")
    state = short_dir / "state"
    work = short_dir / "work"
    work.mkdir()
    files = ["a.fk=ERROR"]
    wants_pyright = shutil.which("pyright-langserver") is not None
    if wants_pyright:
        files.append("b.py=print(nope)\n")
    # as a module, so tests/fakes (which has an http.py) does not shadow the standard library
    quiet = without_prewarm(short_dir / "quiet", config)
    argv = [sys.executable, "-m", "tests.fakes.lsp_daemon", str(state), quiet, str(work), *files]
    with trio.fail_after(LIMIT):
        async with trio.open_nursery() as nursery:
            daemon = await nursery.start(partial(trio.run_process, argv, stdout=subprocess.PIPE,
                                                 check=False, cwd=str(REPO)))
            assert daemon.stdout is not None
            line = b""
            async for chunk in daemon.stdout:
                line += chunk
                if line.endswith(b"\n"):
                    break
            states = json.loads(line)
            assert states["a.fk"] == {"fake": "ok"}
            if wants_pyright:
                assert states["b.py"] == {"pyright": "ok"}
            async with open_client(state) as client:
                result = await client.request(LspList(id=0))
            assert isinstance(result, LspListResult)
            assert [(s.server, s.root, s.state) for s in result.servers][:1] == [("fake", str(work), "running")]
            listed = json.loads(await corral("lsp", "ls", "--json", "--state-dir", str(state)))
            assert [row["server"] for row in listed] == ["fake", *(["pyright"] if wants_pyright else [])]
            assert {"root", "server", "state", "pid", "restarts"} == set(listed[0])
            table = await corral("lsp", "ls", "--state-dir", str(state))
            assert table.splitlines()[0].split() == ["SERVER", "STATE", "PID", "RESTARTS", "ROOT"]
            pids = [row["pid"] for row in listed]
            family = [p.pid for pid in pids for p in psutil.Process(pid).children(recursive=True)]
            assert len(family) >= 2  # the fake's two sleepers (one left its process group)
            await corral("stop", "--state-dir", str(state))
            await daemon.wait()
    assert daemon.returncode == 0
    alive = [pid for pid in [*pids, *family] if psutil.pid_exists(pid)
             and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE]
    assert alive == []
    assert Ledger(state).rows() == []
