"""The house rules on imports, checked on the transitive closure of each module, no exemptions.

* ``protocol`` imports nothing of ours (and neither trio nor any process library);
* ``supervisor`` imports only ``protocol`` of ours;
* ``supervisor.proc`` does not import ``supervisor.ledger`` (the ledger imports ``proc``);
* only ``actors/app.py`` (the composition root) imports ``supervisor.server``,
  ``supervisor.client`` or ``supervisor.cli``;
* importing ``supervisor`` alone does not import the websocket client (or anything else);
* the server owns its websocket on wsproto's public API: ``supervisor.server`` reaches no
  ``trio_websocket`` and touches no private member (``x._y``) of any object but its own (``self``);
* the native worker (``actors.native.worker``) imports nothing of the daemon side (of the
  native harness: the ``actors.native.daemon`` folder);
* a sans-IO core, imported alone in a fresh interpreter, loads no trio, psutil, subprocess or
  socket (so it is sans-IO by construction, not by convention).
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
OURS = ("protocol", "supervisor", "actors")
WIRING_ROOMS = ("supervisor.server", "supervisor.client", "supervisor.cli")
COMPOSITION_ROOT = "actors.app"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {_module_name(p): p for pkg in OURS for p in sorted((ROOT / pkg).rglob("*.py"))}


@cache
def _direct(module: str) -> frozenset[str]:
    """Modules named by ``module``'s imports (ours resolved to modules, others to top names)."""
    path = MODULES[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)
    resolved: set[str] = set()
    for name in names:
        if name.split(".")[0] in OURS:
            while name and name not in MODULES:
                name = name.rpartition(".")[0]
            if name:
                resolved.add(name)
                # importing a.b.c runs a/__init__ and a/b/__init__ too
                parent = name.rpartition(".")[0]
                while parent:
                    resolved.add(parent)
                    parent = parent.rpartition(".")[0]
        else:
            resolved.add(name.split(".")[0])
    resolved.discard(module)
    return frozenset(resolved)


@cache
def _closure(module: str) -> frozenset[str]:
    seen: set[str] = set()
    todo = [module]
    while todo:
        for name in _direct(todo.pop()):
            if name not in seen:
                seen.add(name)
                if name in MODULES:
                    todo.append(name)
    return frozenset(seen)


def _ours(names: frozenset[str], top: str) -> set[str]:
    return {n for n in names if n.split(".")[0] == top}


@pytest.mark.parametrize("module", sorted(m for m in MODULES if m.startswith("protocol")))
def test_protocol_imports_nothing_of_ours(module: str) -> None:
    reach = _closure(module)
    assert _ours(reach, "supervisor") | _ours(reach, "actors") == set()
    assert reach & {"trio", "trio_websocket", "psutil", "wsproto"} == set()


@pytest.mark.parametrize("module", sorted(m for m in MODULES if m.startswith("supervisor")))
def test_supervisor_imports_only_protocol(module: str) -> None:
    assert _ours(_closure(module), "actors") == set()


@pytest.mark.parametrize("module", sorted(m for m in MODULES if m.startswith("actors")))
def test_only_the_composition_root_wires_server_client_and_cli(module: str) -> None:
    if module == COMPOSITION_ROOT:
        return
    wired = {n for n in _closure(module) if n.startswith(WIRING_ROOMS)}
    assert wired == set(), f"{module} reaches {sorted(wired)}"


@pytest.mark.parametrize("module", sorted(m for m in MODULES if m.startswith("supervisor.proc")))
def test_process_children_do_not_import_the_ledger(module: str) -> None:
    """The ledger builds on ``proc`` (identity, killing); a child is handed a ``SpawnRecorder``
    (``supervisor.proc.recorder``) instead of importing the ledger, so there is no cycle."""
    reach = {n for n in _closure(module) if n.startswith("supervisor.ledger")}
    assert reach == set(), f"{module} reaches {sorted(reach)}"


def test_the_checker_sees_transitive_imports() -> None:
    """A module of the composition root's imports is seen through a chain, not only directly."""
    assert "supervisor.server.listener" in _closure(COMPOSITION_ROOT)
    assert "supervisor.tree.mailbox" in _closure("supervisor.server.listener")


def test_importing_supervisor_alone_is_light() -> None:
    code = ("import sys, supervisor; "
            "print(','.join(sorted(m for m in sys.modules if m.startswith(('trio_websocket', 'supervisor.')))))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


@pytest.mark.parametrize("module", sorted(m for m in MODULES if m.startswith("supervisor.server")))
def test_the_server_owns_its_websocket(module: str) -> None:
    assert "trio_websocket" not in _closure(module)


@pytest.mark.parametrize("module", sorted(m for m in MODULES if m.startswith("supervisor.server")))
def test_the_server_touches_no_private_member_of_another_object(module: str) -> None:
    """A library's internals (``ws._wsproto``, ``conn._reader_task``) change without notice; only
    a class's own methods reach its private members (``self._x``, ``cls._x``)."""
    path = MODULES[module]
    assert _foreign_private(ast.parse(path.read_text(), filename=str(path))) == []


def test_the_private_member_check_sees_an_access() -> None:
    tree = ast.parse("ws._wsproto.state\nawait request.accept()\nself._lock\ncls._x\nx.__class__")
    assert _foreign_private(tree) == ["1: ws._wsproto"]


def _foreign_private(tree: ast.AST) -> list[str]:
    """Each ``x._y`` in ``tree`` (not dunder) where ``x`` is not ``self`` or ``cls``."""
    return [f"{node.lineno}: {ast.unparse(node)}" for node in ast.walk(tree)
            if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__")
            and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))]


_DAEMON_SIDE = ("actors.app", "actors.harness", "actors.session", "actors.mcp", "actors.lsp",
                "actors.vendors", "actors.native.daemon")
"""The daemon's packages; of the native harness, its ``daemon`` folder, whatever it holds."""


@pytest.mark.parametrize("module", sorted(m for m in MODULES if m.startswith("actors.native.worker")))
def test_the_native_worker_never_imports_the_daemon_side(module: str) -> None:
    """The worker reaches MCP and language servers by asks over its pipes, never by importing
    the actors that run them (a worker is a separate process that may crash alone)."""
    reach = {n for n in _closure(module) if n.startswith(_DAEMON_SIDE)}
    assert reach == set(), f"{module} reaches {sorted(reach)}"


SANS_IO = (
    "actors.lsp.core",
    "actors.native.daemon.translate",
    "actors.session.clientrequests",
    "actors.session.core",
    "actors.vendors.acp.translate",
    "actors.vendors.claude.translate",
    "actors.vendors.codex.translate",
    "actors.vendors.opencode.translate",
    "actors.vendors.opencode.wire",
    "actors.vendors.pi.translate",
    "protocol.framing",
    "protocol.jsonrpc",
    "supervisor.acp.turns",
    "supervisor.mcpserver.turn",
    "supervisor.placement.policy",
    "supervisor.sandbox.httphead",
    "supervisor.server.connection_core",
)
"""The sans-IO cores: every module whose docstring's summary says so, and the wire they share."""

_IO_MODULES = ("trio", "psutil", "subprocess", "socket")
"""Not one of them (nor a submodule) may be loaded by a core. The stdlib modules that would bring
``socket`` or ``subprocess`` in (``asyncio``, ``ssl``, ``http.client``, ``importlib.metadata``
through ``email.utils``) are then out of a core's reach too: a core takes bytes and gives bytes."""


def _summary(path: Path) -> str:
    doc = ast.get_docstring(ast.parse(path.read_text(), filename=str(path))) or ""
    return doc.split("\n\n")[0]


def test_every_module_that_says_it_is_sans_io_is_checked() -> None:
    """A module whose summary says "sans-IO" is in ``SANS_IO`` (a package's summary speaks of
    its modules, so packages are not asked)."""
    said = {m for m, p in MODULES.items()
            if p.name != "__init__.py" and re.search(r"sans[- ]io", _summary(p), re.IGNORECASE)}
    assert said - set(SANS_IO) == set()


@pytest.mark.parametrize("module", SANS_IO)
def test_a_sans_io_core_loads_no_io_module(module: str) -> None:
    """Python runs every parent package's ``__init__`` first, so a package that re-exports an
    I/O object (a driver, a process child) does so lazily (``supervisor.lazy``), and the data a
    core takes lives in a data module (``supervisor.proc.spec``, ``actors.session.logfile``)."""
    code = (f"import sys, {module}; "
            f"print(' '.join(sorted(m for m in sys.modules if m.split('.')[0] in {_IO_MODULES!r})))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.split() == [], f"importing {module} loads {out.stdout.strip()}"
