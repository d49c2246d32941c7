"""``[workspaces]``: read from the config file beside the generic loader, warned about by name."""

from __future__ import annotations

from pathlib import Path

from actors.workspace.config import WorkspacesConfig, load_workspaces_config, workspaces_root


def test_no_file_and_no_table_are_the_defaults(tmp_path: Path) -> None:
    assert load_workspaces_config(None) == (WorkspacesConfig(), [])
    other = tmp_path / "corral.toml"
    other.write_text("[sessions]\nclose_timeout = 3.0\n")
    assert load_workspaces_config(other) == (WorkspacesConfig(), [])


def test_the_table_is_read(tmp_path: Path) -> None:
    file = tmp_path / "corral.toml"
    file.write_text('[workspaces]\nroot = "/srv/trees"\ntimeout = 30.0\ndiff_limit = 4096\n')
    config, warnings = load_workspaces_config(file)
    assert warnings == [] and config == WorkspacesConfig(root="/srv/trees", timeout=30.0, diff_limit=4096)


def test_a_bad_value_keeps_the_defaults_with_a_warning_naming_it(tmp_path: Path) -> None:
    file = tmp_path / "corral.toml"
    file.write_text("[workspaces]\ntimeout = -1\n")
    config, warnings = load_workspaces_config(file)
    assert config == WorkspacesConfig() and len(warnings) == 1 and "timeout" in warnings[0]
    file.write_text("[workspaces]\nroots = 'typo'\n")
    assert "roots" in load_workspaces_config(file)[1][0]


def test_the_root_is_under_the_state_directory_unless_absolute(tmp_path: Path) -> None:
    state = tmp_path / "state"
    assert workspaces_root(WorkspacesConfig(), state) == state / "worktrees"
    assert workspaces_root(WorkspacesConfig(root="trees"), state) == state / "trees"
    assert workspaces_root(WorkspacesConfig(root="/srv/trees"), state) == Path("/srv/trees")
    assert workspaces_root(WorkspacesConfig(root="~/t"), state) == Path.home() / "t"
