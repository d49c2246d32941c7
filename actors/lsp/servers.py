"""The built-in language servers, and finding the workspace root a file belongs to.

Each definition says how to run the server, which file extensions it checks (and the LSP
``languageId`` of each), and which files mark a workspace root for it. The timings behind the
``settle`` values are in the team's measurements: ts-ls publishes without versions after a
~400 ms debounce, the others say which version a publish is for.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

import msgspec

__all__ = ["BUILTIN", "ServerDef", "find_root"]


class ServerDef(msgspec.Struct, frozen=True, kw_only=True):
    """One language server: ``command`` is its argv; ``languages`` maps ``.ext`` to languageId."""

    id: str
    command: tuple[str, ...]
    languages: dict[str, str]
    root_markers: tuple[str, ...] = (".git",)
    initialization_options: dict[str, Any] | None = None
    settings: dict[str, Any] | None = None
    env: dict[str, str] = {}
    settle: float = 0.5

    def language_of(self, path: str) -> str | None:
        """The languageId this server gives ``path``, None if it does not check such files."""
        return self.languages.get(os.path.splitext(path)[1].lower())


_PY = {".py": "python", ".pyi": "python"}
_TS = {".ts": "typescript", ".mts": "typescript", ".cts": "typescript",
       ".tsx": "typescriptreact", ".js": "javascript", ".mjs": "javascript",
       ".cjs": "javascript", ".jsx": "javascriptreact"}
_C = {".c": "c", ".h": "c", ".cc": "cpp", ".cpp": "cpp", ".cxx": "cpp", ".hh": "cpp",
      ".hpp": "cpp", ".hxx": "cpp"}
_PY_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", "requirements.txt", "Pipfile", ".git")

BUILTIN: dict[str, ServerDef] = {
    d.id: d for d in (
        ServerDef(id="ruff", command=("ruff", "server"), languages=_PY,
                  root_markers=("ruff.toml", ".ruff.toml", *_PY_MARKERS)),
        ServerDef(id="pyright", command=("pyright-langserver", "--stdio"), languages=_PY,
                  root_markers=("pyrightconfig.json", *_PY_MARKERS)),
        # Automatic type acquisition would run npm against the registry on the user's behalf.
        ServerDef(id="typescript", command=("typescript-language-server", "--stdio"),
                  languages=_TS, root_markers=("tsconfig.json", "jsconfig.json", "package.json", ".git"),
                  initialization_options={"disableAutomaticTypingAcquisition": True}, settle=0.6),
        ServerDef(id="gopls", command=("gopls",), languages={".go": "go"},
                  root_markers=("go.work", "go.mod", ".git")),
        ServerDef(id="clangd", command=("clangd",), languages=_C,
                  root_markers=("compile_commands.json", "compile_flags.txt", ".clangd", ".git")),
    )
}
"""The servers corral knows without any configuration, by id."""


def find_root(path: str, markers: Iterable[str], cwd: str) -> str:
    """The nearest directory at or above ``path``'s own, up to the session's ``cwd``, that holds
    one of ``markers``; else ``cwd`` itself.

    The walk stops at ``cwd`` on purpose: a stray marker higher up (a ``~/.git`` of dotfiles,
    a ``/tmp/.git``) would otherwise make a server analyse a whole home directory. A file
    outside ``cwd`` is looked up to the filesystem root.
    """
    names = tuple(markers)
    top = os.path.abspath(cwd)
    directory = os.path.dirname(os.path.abspath(path))
    inside = directory == top or directory.startswith(top.rstrip(os.sep) + os.sep)
    while True:
        if any(os.path.exists(os.path.join(directory, name)) for name in names):
            return directory
        parent = os.path.dirname(directory)
        if (inside and directory == top) or parent == directory:
            return top
        directory = parent
