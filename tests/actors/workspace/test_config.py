"""``[workspaces]``: a section of the daemon's config, decoded and warned about like the others."""

from __future__ import annotations

from pathlib import Path

from actors.app import Config
from actors.workspace.config import WorkspacesConfig, workspaces_root
from supervisor.config import parse_config


def test_no_table_is_the_defaults() -> None:
    loaded = parse_config(Config, "[sessions]\nclose_timeout = 3.0\n")
    assert loaded.config.workspaces == WorkspacesConfig() and loaded.warnings == []


def test_the_table_is_read() -> None:
    loaded = parse_config(Config, '[workspaces]\nroot = "/srv/trees"\ntimeout = 30.0\ndiff_limit = 4096\n')
    assert loaded.warnings == []
    assert loaded.config.workspaces == WorkspacesConfig(root="/srv/trees", timeout=30.0, diff_limit=4096)


def test_a_bad_value_keeps_its_default_with_a_warning_naming_it() -> None:
    loaded = parse_config(Config, '[workspaces]\ntimeout = -1\nroot = "/srv/trees"\n')
    assert loaded.config.workspaces == WorkspacesConfig(root="/srv/trees")
    assert len(loaded.warnings) == 1 and "workspaces.timeout" in loaded.warnings[0]
    assert "workspaces.roots" in parse_config(Config, "[workspaces]\nroots = 'typo'\n").warnings[0]


def test_the_root_is_under_the_state_directory_unless_absolute(tmp_path: Path) -> None:
    state = tmp_path / "state"
    assert workspaces_root(WorkspacesConfig(), state) == state / "worktrees"
    assert workspaces_root(WorkspacesConfig(root="trees"), state) == state / "trees"
    assert workspaces_root(WorkspacesConfig(root="/srv/trees"), state) == Path("/srv/trees")
    assert workspaces_root(WorkspacesConfig(root="~/t"), state) == Path.home() / "t"
