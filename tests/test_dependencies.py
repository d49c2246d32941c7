"""Every third-party package our code imports is declared in pyproject.toml.

The packages (``protocol``, ``supervisor``, ``actors``) may use only ``[project.dependencies]``
and the optional extras a user installs for a feature (``corral[otel]``, ``corral[ray]``:
imported only when the feature is configured, never by an idle daemon, which
tests/e2e/test_daemon_imports.py checks); the tests may also use the ``test`` extra. A module name maps to its distribution through the
installed metadata (``trio_websocket`` is ``trio-websocket``).
"""

from __future__ import annotations

import ast
import importlib.metadata
import re
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
OURS = {"protocol", "supervisor", "actors", "tests"}
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def _declared(requirements: list[str]) -> set[str]:
    return {_normal(re.split(r"[\s<>=!~;\[]", req, maxsplit=1)[0]) for req in requirements}


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _imported(package: str) -> dict[str, str]:
    """Third-party top-level modules imported under ``package``, each with one file that does."""
    found: dict[str, str] = {}
    for path in sorted((ROOT / package).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                if top not in OURS and top not in sys.stdlib_module_names:
                    found.setdefault(top, str(path.relative_to(ROOT)))
    return found


def _undeclared(packages: list[str], declared: set[str]) -> list[str]:
    distributions = importlib.metadata.packages_distributions()
    missing = []
    for package in packages:
        for module, where in sorted(_imported(package).items()):
            names = {_normal(d) for d in distributions.get(module, [module])}
            if not names & declared:
                missing.append(f"{module} ({where})")
    return missing


EXTRAS = PYPROJECT["project"]["optional-dependencies"]
RUNTIME = _declared(PYPROJECT["project"]["dependencies"])
FEATURES = RUNTIME.union(*(_declared(reqs) for name, reqs in EXTRAS.items() if name != "test"))
TEST = FEATURES | _declared(EXTRAS["test"])


@pytest.mark.parametrize("package", ["protocol", "supervisor", "actors"])
def test_the_code_imports_only_declared_dependencies(package: str) -> None:
    assert _undeclared([package], FEATURES) == []


def test_a_feature_extra_is_in_the_test_extra() -> None:
    for name, reqs in EXTRAS.items():
        assert set(reqs) <= set(EXTRAS["test"]), f"the {name} extra's packages are tested too"


def test_the_tests_import_only_declared_dependencies() -> None:
    assert _undeclared(["tests"], TEST) == []
