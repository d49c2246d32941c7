"""The git runner: a process child bounded in time and output, in a predictable environment."""

from __future__ import annotations

import json
from pathlib import Path

import psutil
import pytest
import trio

from actors.workspace.git import FALLBACK_IDENTITY, Git, identity_env
from protocol.errors import GitFailed, Timeout
from supervisor.ledger.store import Ledger

from .gitrig import git, make_repo

pytestmark = pytest.mark.timeout(120)


async def test_a_command_past_its_time_is_killed_with_its_whole_group(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    marker = tmp_path / "sleeper"
    # An alias starting with '!' runs in a shell: git and the shell (then sleep) form one group.
    alias = f"alias.nap=!echo $$ > {marker}; exec sleep 60"
    runner = Git(timeout=1.0)
    with trio.fail_after(30):
        with pytest.raises(Timeout, match="git -c alias"):
            await runner.run(str(repo), "-c", alias, "nap")
    sleeper = int(marker.read_text())
    try:
        assert psutil.Process(sleeper).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        pass  # killed and reaped


async def test_children_are_recorded_in_the_ledger_and_dropped_after(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    (tmp_path / "state").mkdir()
    ledger = Ledger(tmp_path / "state")
    # The row is written just after the spawn: the child waits (bounded by the runner's
    # timeout) until its own key is on disk, then prints the ledger.
    ledger_file = '"$CORRAL_STATE_DIR/ledger.json"'
    alias = (f"alias.look=!until grep -qF \"$CORRAL_CHILD_KEY\" {ledger_file} 2>/dev/null; "
             f"do sleep 0.01; done; cat {ledger_file}")
    rows = json.loads((await Git(ledger=ledger, timeout=30).run(str(repo), "-c", alias, "look")).text)
    assert [row["kind"] for row in rows["rows"]] == ["git"]
    assert ledger.rows() == []


async def test_the_daemons_git_variables_do_not_leak_into_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = make_repo(tmp_path / "repo")
    monkeypatch.setenv("GIT_DIR", str(tmp_path / "nowhere"))
    monkeypatch.setenv("GIT_INDEX_FILE", str(tmp_path / "bogus-index"))
    found = await Git().run(str(repo), "rev-parse", "--git-dir")
    assert found.text == ".git" and not (tmp_path / "bogus-index").exists()


async def test_a_failure_carries_gits_own_words(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    with pytest.raises(GitFailed, match="unknown revision") as caught:
        await Git().run(str(repo), "log", "no-such-branch")
    assert caught.value.data is not None and caught.value.data["exit_code"] == 128
    with pytest.raises(GitFailed, match="cannot run git"):
        await Git(binary=str(tmp_path / "no-git")).run(str(repo), "status")


async def test_output_past_the_limit_is_counted_not_kept(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"big.txt": "x" * 100_000 + "\n"})
    found = await Git().run(str(repo), "cat-file", "-p", "HEAD:big.txt", limit=1000)
    assert len(found.out) == 1000 and found.dropped == 100_001 - 1000


async def test_without_an_identity_corrals_commits_are_by_corral(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = make_repo(tmp_path / "repo")
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")  # dropped like every GIT_* variable…
    monkeypatch.setenv("EMAIL", "")
    git(repo, "config", "--unset-all", "user.email", check=False)
    assert await identity_env(Git(), str(repo)) in ({}, dict(FALLBACK_IDENTITY))
    git(repo, "config", "user.useConfigOnly", "true")  # …so make git certain it knows no one
    assert await identity_env(Git(), str(repo)) == dict(FALLBACK_IDENTITY)
    git(repo, "config", "user.name", "Someone")
    git(repo, "config", "user.email", "someone@example.com")
    assert await identity_env(Git(), str(repo)) == {}
