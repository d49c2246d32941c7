"""``git_rules`` on real repositories: what a worktree session's git may write, and what not."""

from __future__ import annotations

from pathlib import Path

from actors.sandboxing.gitrules import git_rules
from actors.sandboxing.profiles import state_paths
from tests.actors.workspace.gitrig import git, make_repo


def test_a_linked_worktree_writes_its_admin_dir_objects_and_its_branch_dir_only(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    git(repo, "branch", "corral/other")
    git(repo, "pack-refs", "--all")  # every ref only in packed-refs now
    git(repo, "worktree", "add", "-q", "-b", "corral/mine", str(tmp_path / "wt"))
    common = repo / ".git"
    rules = git_rules(str(tmp_path / "wt"))
    assert rules.top == tmp_path / "wt" and rules.readable == (common.resolve(),)
    assert set(rules.writable) == {common / "worktrees" / "wt", common / "objects",
                                   common / "refs" / "heads" / "corral", common / "logs" / "refs" / "heads" / "corral"}
    # the packed sibling was written out loose (same value), so it can be bound read-only in place
    other = common / "refs" / "heads" / "corral" / "other"
    assert other.read_text().strip() == git(repo, "rev-parse", "corral/other")
    assert other in rules.protected and common / "hooks" in rules.protected and common / "config" in rules.protected
    assert common / "refs" / "heads" / "corral" / "mine" not in rules.protected
    assert git(repo, "rev-parse", "corral/other") == git(repo, "rev-parse", "main")  # nothing moved


def test_an_ordinary_checkout_keeps_hooks_and_config_read_only_and_no_repo_none(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    rules = git_rules(str(repo))
    assert rules.writable == () and set(rules.protected) == {repo / ".git" / "hooks", repo / ".git" / "config"}
    assert git_rules(str(tmp_path)).protected == ()


def test_harness_state_is_its_home_variable_or_its_defaults() -> None:
    assert state_paths("codex", {"CODEX_HOME": "/h/codex", "HOME": "/h"}) == [Path("/h/codex")]
    assert state_paths("codex", {"HOME": "/h"}) == [Path("/h/.codex")]
    assert Path("/h/.claude.json") in state_paths("claude", {"HOME": "/h"})
    assert state_paths("claude", {"CLAUDE_CONFIG_DIR": "/c", "HOME": "/h"}) == [Path("/c")]
    assert state_paths("gemini-acp", {"HOME": "/h"}) == [Path("/h/.gemini")]
    assert state_paths("fake", {"HOME": "/h"}) == []
