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


def find_root(path: str, markers: Iterable[str], fallback: str) -> str:
    """The nearest directory at or above ``path``'s own that holds one of ``markers``; else
    ``fallback`` (the session's working directory)."""
    names = tuple(markers)
    directory = os.path.dirname(os.path.abspath(path))
    while True:
        if any(os.path.exists(os.path.join(directory, name)) for name in names):
            return directory
        parent = os.path.dirname(directory)
        if parent == directory:
            return os.path.abspath(fallback)
        directory = parent
