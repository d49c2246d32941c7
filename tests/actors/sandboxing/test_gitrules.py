"""``git_rules`` on real repositories: what a worktree session's git may write, and what not."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from actors.sandboxing.gitrules import GitRules, git_rules
from actors.sandboxing.profiles import state_paths
from supervisor.sandbox import SandboxPlan, landlock, void_file, wrap
from tests.actors.workspace.gitrig import git, make_repo
from tests.needs import need_bwrap


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


def _in_sandbox(mode: str, plan_cwd: Path, rules: GitRules, script: str, void: Path) -> subprocess.CompletedProcess[str]:
    plan = SandboxPlan(cwd=plan_cwd, writable=(plan_cwd, *rules.writable), protected=rules.protected,
                       redirects=rules.redirects, read_only=rules.readable, tmp=False, void=void_file(void))
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.com", GIT_COMMITTER_NAME="t",
               GIT_COMMITTER_EMAIL="t@example.com")
    if mode == "bwrap":
        argv, changed = wrap(["/bin/sh", "-c", script], env, plan)
        return subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False,
                              env={k: v for k, v in changed.items() if v is not None})
    return subprocess.run(["/bin/sh", "-c", script], cwd=plan_cwd, capture_output=True, text=True, timeout=60,
                          env=env, check=False, preexec_fn=landlock.preexec_hook(plan))


def _refs(repo: Path) -> dict[str, str]:
    listed = git(repo, "for-each-ref", "--format=%(refname) %(objectname)")
    return dict(line.split(" ") for line in listed.splitlines())


@pytest.mark.parametrize(("mode", "sibling"), [("bwrap", None), ("bwrap", "packed"), ("bwrap", "loose"),
                                               ("landlock", None)])
def test_in_the_sandbox_git_commits_on_its_branch_and_no_other_ref_can_be_made_moved_or_deleted(
        mode: str, sibling: str | None) -> None:
    """Real git in a real sandbox (outside ``/tmp``, so bubblewrap's private ``/tmp`` hides
    nothing): a commit moves the session's branch; ``main``, a tag, a new branch or tag beside
    them, ``packed-refs``, the refs' files themselves and another session's branch in the
    branch's own directory stay as they were. Under bubblewrap the branch has a directory of its
    own: a new ref beside it (``corral/another``, ``corral/x/y``), or over a packed sibling, is
    made in there and the repository never sees it; a loose sibling is bound read-only in it."""
    if mode == "bwrap":
        need_bwrap()
    if mode == "landlock" and landlock.abi() < 1:
        pytest.skip("needs Landlock")
    base = Path(tempfile.mkdtemp(prefix="corral-gitrules-", dir="/var/tmp"))
    try:
        repo = make_repo(base / "repo")
        git(repo, "tag", "v1")
        if sibling is not None:
            git(repo, "branch", "corral/other")
        if sibling == "packed":
            git(repo, "pack-refs", "--all")  # only in packed-refs
        git(repo, "worktree", "add", "-q", "-b", "corral/mine", str(base / "wt"))
        common = repo / ".git"
        before = _refs(repo)
        rules = git_rules(str(base / "wt"), redirect=mode == "bwrap")
        done = _in_sandbox(mode, base / "wt", rules, "echo x > f && git add f && git commit -q -m boxed && echo COMMITTED", base / "void")
        assert "COMMITTED" in done.stdout, done
        assert git(repo, "log", "--format=%s", "-1", "corral/mine") == "boxed"
        assert git(repo, "reflog", "--format=%gs", "-1", "corral/mine") == "commit: boxed"
        head = git(repo, "rev-parse", "corral/mine")
        refused = ["git branch other", "git branch -f main HEAD", "git branch -D main",
                   "git branch -m corral/mine main", "git update-ref refs/heads/main HEAD",
                   "git update-ref -d refs/heads/main", "git tag t", "git tag -f v1 HEAD",
                   "git update-ref refs/tags/t HEAD", "git update-ref refs/notes/x HEAD",
                   "git pack-refs --all", "git branch newdir/x",
                   f"echo {head} > {common}/refs/heads/other", f"echo {head} > {common}/refs/tags/t",
                   f"echo {head} > {common}/refs/heads/main", f"rm {common}/refs/heads/main",
                   f"echo '{head} refs/heads/sneaky' >> {common}/packed-refs",
                   f"mkdir {common}/refs/heads/newdir", f"echo 'exit 0' > {common}/hooks/post-checkout",
                   f"mv {common}/refs/heads/corral/mine {common}/refs/heads/main"]
        if sibling is not None:  # (a packed one's reflog is loose: bound read-only too)
            refused += ["git branch -D corral/other", f"rm {common}/refs/heads/corral/other",
                        "git branch -f corral/other HEAD", "git update-ref refs/heads/corral/other HEAD"]
        if sibling == "loose":
            refused += [f"echo {head} > {common}/refs/heads/corral/other",
                        f"mv {common}/refs/heads/corral/mine {common}/refs/heads/corral/other"]
        for attack in refused:
            result = _in_sandbox(mode, base / "wt", rules, attack, base / "void")
            assert result.returncode != 0, (attack, result)
        if mode == "bwrap":  # made in the branch's own directory: real inside, absent outside
            beside = ["git branch corral/another && git rev-parse --verify corral/another",
                      "git branch corral/x/y && git rev-parse --verify corral/x/y",
                      f"echo {head} > {common}/refs/heads/corral/planted && git rev-parse --verify corral/planted"]
            if sibling == "packed":
                beside += [f"echo {head} > {common}/refs/heads/corral/other"]
            if sibling == "loose":  # visible, read-only
                beside += [f"test $(git rev-parse corral/other) = {before['refs/heads/corral/other']}"]
            for attempt in beside:
                result = _in_sandbox(mode, base / "wt", rules, attempt, base / "void")
                assert result.returncode == 0, (attempt, result)
        assert _refs(repo) == {**before, "refs/heads/corral/mine": head}
        assert not (common / "hooks" / "post-checkout").exists()
    finally:
        shutil.rmtree(base)
