"""Built-in servers, ``[lsp.servers.ID]`` overrides and new servers, and workspace roots."""

from __future__ import annotations

from pathlib import Path

import msgspec

from actors.lsp.config import LspConfig, LspServerConfig, resolve_servers
from actors.lsp.servers import BUILTIN, find_root


def by_id(config: LspConfig) -> dict[str, object]:
    servers, _ = resolve_servers(config)
    return {s.id: s for s in servers}


def test_the_builtins_are_enabled_by_default() -> None:
    servers = by_id(LspConfig())
    assert list(servers) == ["ruff", "pyright", "typescript", "gopls", "clangd"]
    assert BUILTIN["ruff"].command == ("ruff", "server")
    assert BUILTIN["pyright"].command == ("pyright-langserver", "--stdio")
    assert BUILTIN["typescript"].initialization_options == {"disableAutomaticTypingAcquisition": True}
    assert BUILTIN["ruff"].language_of("/x/A.PY") == "python"
    assert BUILTIN["typescript"].language_of("a.tsx") == "typescriptreact"
    assert BUILTIN["clangd"].language_of("a.hpp") == "cpp" and BUILTIN["gopls"].language_of("a.py") is None


def test_a_table_overrides_the_keys_it_sets_and_can_disable() -> None:
    config = msgspec.convert({"servers": {
        "pyright": {"command": ["/opt/pyright-langserver", "--stdio"], "settings": {"python": {}}},
        "ruff": {"enabled": False},
    }}, LspConfig)
    servers, warnings = resolve_servers(config)
    assert warnings == [] and "ruff" not in {s.id for s in servers}
    pyright = next(s for s in servers if s.id == "pyright")
    assert pyright.command == ("/opt/pyright-langserver", "--stdio")
    assert pyright.settings == {"python": {}}
    assert pyright.languages == BUILTIN["pyright"].languages
    assert pyright.root_markers == BUILTIN["pyright"].root_markers


def test_a_new_server_needs_a_command_and_extensions() -> None:
    config = LspConfig(servers={
        "pylsp": LspServerConfig(command=["pylsp"], extensions=["py"], language_id="python"),
        "broken": LspServerConfig(command=["x"]),
    })
    servers, warnings = resolve_servers(config)
    pylsp = next(s for s in servers if s.id == "pylsp")
    assert pylsp.command == ("pylsp",) and pylsp.languages == {".py": "python"}
    assert pylsp.root_markers == (".git",)
    assert warnings == ["lsp.servers.broken: a new server needs `command` and `extensions`; ignored"]


def test_lsp_can_be_turned_off() -> None:
    assert resolve_servers(LspConfig(enabled=False)) == ([], [])


def test_unknown_keys_in_a_server_table_are_refused() -> None:
    try:
        msgspec.convert({"comand": ["x"]}, LspServerConfig)
    except msgspec.ValidationError as exc:
        assert "comand" in str(exc)
    else:
        raise AssertionError("an unknown key was accepted")


def test_the_root_is_the_nearest_marked_directory_up_to_the_session_cwd(tmp_path: Path) -> None:
    (tmp_path / "repo" / ".git").mkdir(parents=True)
    pkg = tmp_path / "repo" / "pkg"
    (pkg / "src").mkdir(parents=True)
    (pkg / "pyproject.toml").write_text("")
    file = pkg / "src" / "a.py"
    markers = BUILTIN["ruff"].root_markers
    assert find_root(str(file), markers, str(tmp_path)) == str(pkg)
    assert find_root(str(tmp_path / "repo" / "b.py"), markers, str(tmp_path)) == str(tmp_path / "repo")
    # a marker above the session's cwd (a ~/.git of dotfiles) does not make the root
    inner = tmp_path / "repo" / "inner"
    inner.mkdir()
    assert find_root(str(inner / "deep" / "c.py"), markers, str(inner)) == str(inner)
    # a file outside the cwd is looked up all the way
    assert find_root(str(file), markers, str(inner)) == str(pkg)
