"""The import direction is protocol <- supervisor <- actors; protocol imports nothing of ours nor trio."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FORBIDDEN = {
    "protocol": {"supervisor", "actors", "trio", "trio_websocket", "psutil"},
    "supervisor": {"actors"},
    "actors": set(),
}
# The daemon wiring is the one place that sees every actor kind.
WIRING = {"supervisor/daemon.py", "supervisor/cli.py", "supervisor/harnesses.py"}


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_import_direction(package: str) -> None:
    offenders = []
    for path in sorted((ROOT / package).rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel in WIRING:
            continue
        bad = _imports(path) & FORBIDDEN[package]
        if bad:
            offenders.append(f"{rel}: {sorted(bad)}")
    assert offenders == []
