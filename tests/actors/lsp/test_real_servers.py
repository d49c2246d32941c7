"""The real ruff server and pyright (pinned, installed by ``.ci/run``): an undefined name comes
back as a diagnostic after the write, and fixing it clears it."""

from __future__ import annotations

import shutil
from pathlib import Path

import psutil
import pytest
import trio

from actors.lsp.config import LspConfig, LspServerConfig
from tests.actors.lsp.rig import running

pytestmark = pytest.mark.slow
OTHERS = ("typescript", "gopls", "clangd")


def only(*servers: str) -> LspConfig:
    off = {sid: LspServerConfig(enabled=False) for sid in ("ruff", "pyright", *OTHERS) if sid not in servers}
    return LspConfig(servers=off)


def require(program: str) -> None:
    if shutil.which(program) is None:  # .ci/run installs both; a bare checkout may lack them
        pytest.fail(f"{program} is not installed (run .ci/run, or see its install lines)")


@pytest.mark.parametrize(("server", "program", "expected"), [
    ("ruff", "ruff", "a.py:2:7: error [Ruff F821] Undefined name `undefined_name`"),
    ("pyright", "pyright-langserver",
     'a.py:2:7: error [Pyright reportUndefinedVariable] "undefined_name" is not defined'),
])
async def test_an_undefined_name_is_reported_and_its_fix_clears_it(
        tmp_path: Path, server: str, program: str, expected: str) -> None:
    require(program)
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'demo'\nversion = '0'\n")
    with trio.fail_after(60):
        async with running(only(server)) as lsp:
            report = await lsp.diagnostics_after_write(str(tmp_path), "a.py",
                                                       "x = 1\nprint(undefined_name)\n")
            assert [s.state for s in report.servers] == ["ok"]
            assert [d.render() for d in report.diagnostics] == [expected]
            assert report.text().startswith("Diagnostics:\n")
            fixed = await lsp.diagnostics_after_write(str(tmp_path), "a.py", "x = 1\nprint(x)\n")
            assert [s.state for s in fixed.servers] == ["ok"] and fixed.diagnostics == []
            broken = await lsp.diagnostics_after_write(str(tmp_path), "a.py",
                                                       "x = 1\nprint(undefined_name)\n")
            assert [d.render() for d in broken.diagnostics] == [expected]
            (info,) = lsp.infos()
            assert (info.root, info.server, info.state) == (str(tmp_path), server, "running")


async def test_pyright_type_errors_and_both_servers_on_one_file(tmp_path: Path) -> None:
    require("ruff")
    require("pyright-langserver")
    (tmp_path / ".git").mkdir()
    with trio.fail_after(60):
        async with running(only("ruff", "pyright")) as lsp:
            report = await lsp.diagnostics_after_write(
                str(tmp_path), "pkg/m.py", "import os\n\nx: int = 'text'\nprint(nope)\n")
            assert {s.server: s.state for s in report.servers} == {"ruff": "ok", "pyright": "ok"}
            lines = [d.render() for d in report.diagnostics]
            assert any("[Pyright reportAssignmentType]" in line and line.startswith("pkg/m.py:3:")
                       for line in lines), lines
            assert any("[Ruff F821]" in line for line in lines) and any("[Ruff F401]" in line for line in lines)
            assert not any("is not accessed" in line for line in lines)  # pyright's hints are dropped
            pids = [i.pid for i in lsp.infos()]
            family = [p.pid for pid in pids if pid for p in psutil.Process(pid).children(recursive=True)]
    assert not [pid for pid in [*pids, *family] if pid and psutil.pid_exists(pid)]
