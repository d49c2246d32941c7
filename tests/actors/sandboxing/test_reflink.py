"""``reflink`` on real repositories, with real git (and real bubblewrap where a sandbox runs):
a sandboxed worktree's branch in a directory of its own, put back as a plain ref at the end."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest
import trio

from actors.sandboxing.gitrules import git_rules
from actors.sandboxing.plans import confinement_of
from actors.sandboxing.reflink import detach, link, relink, unlink
from actors.workspace import Git, Workspaces, WorkspacesConfig
from actors.workspace.reconcile import reconcile
from protocol.models import WorkspaceSpec
from supervisor.sandbox import SandboxPlan, landlock, void_file, wrap
from tests.actors.workspace.gitrig import git, make_repo
from tests.needs import need_bwrap

REF = "refs/heads/corral/mine"
_CORRAL = Path(__file__).resolve().parents[3]


class Rig:
    """A repository, a worktree on ``corral/mine`` beside ``corral/other``, outside ``/tmp`` (so
    bubblewrap's private ``/tmp`` hides nothing)."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.repo = make_repo(base / "repo")
        git(self.repo, "branch", "corral/other")
        self.wt = base / "wt"
        git(self.repo, "worktree", "add", "-q", "-b", "corral/mine", str(self.wt))
        self.common = self.repo / ".git"
        self.ref = self.common / REF
        self.log = self.common / "logs" / REF
        self.place = self.common / "corral" / REF
        self.log_place = self.common / "corral" / "logs" / REF

    def refs(self) -> dict[str, str]:
        listed = git(self.repo, "for-each-ref", "--format=%(refname) %(objectname)")
        return dict(line.split(" ") for line in listed.splitlines())

    def boxed(self, script: str) -> subprocess.CompletedProcess[str]:
        """``script`` in the worktree, in bubblewrap with the rules a session gets."""
        rules = git_rules(str(self.wt), redirect=True)
        plan = SandboxPlan(cwd=self.wt, writable=(self.wt, *rules.writable), protected=rules.protected,
                           redirects=rules.redirects, read_only=rules.readable, tmp=False,
                           void=void_file(self.base / "void"))
        env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
        env.update(GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.com", GIT_COMMITTER_NAME="t",
                   GIT_COMMITTER_EMAIL="t@example.com")
        argv, changed = wrap(["/bin/sh", "-c", script], env, plan)
        return subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False,
                              env={k: v for k, v in changed.items() if v is not None})


@pytest.fixture
def rig() -> Iterator[Rig]:
    base = Path(tempfile.mkdtemp(prefix="corral-reflink-", dir="/var/tmp"))
    try:
        yield Rig(base)
    finally:
        shutil.rmtree(base)


def test_a_linked_branch_reads_and_logs_as_before_and_unlinks_to_a_plain_ref(rig: Rig) -> None:
    before = rig.refs()
    linked = link(rig.common, REF)
    assert linked is not None and linked.ref_dir == rig.place and linked.log_dir == rig.log_place
    assert rig.ref.is_symlink() and not os.readlink(rig.ref).startswith("/")  # relative: moves with the repo
    assert rig.log.is_symlink() and (rig.place / "mine").read_text().strip() == before[REF]
    assert rig.refs() == before  # git outside follows it
    assert git(rig.repo, "reflog", "--format=%gs", "corral/mine").startswith("branch: Created")
    assert link(rig.common, REF) == linked  # again: nothing changes
    git(rig.wt, "commit", "-q", "--allow-empty", "-m", "outside")  # git renames over the link
    assert not rig.ref.is_symlink()
    relink(rig.common, REF)
    head = git(rig.repo, "rev-parse", "corral/mine")
    assert head != before[REF] and rig.ref.is_symlink() and (rig.place / "mine").read_text().strip() == head
    assert git(rig.repo, "reflog", "--format=%gs", "-1", "corral/mine") == "commit: outside"
    unlink(rig.common, REF)
    assert not rig.ref.is_symlink() and rig.ref.read_text().strip() == head
    assert not rig.log.is_symlink() and "commit: outside" in rig.log.read_text()
    assert not (rig.common / "corral").exists()  # P and PL, and their parents
    assert rig.refs() == {**before, REF: head}
    relink(rig.common, REF)  # never linked (any more): nothing happens
    assert not rig.ref.is_symlink()


def test_in_bubblewrap_commits_show_outside_new_refs_do_not_and_the_worktree_goes(rig: Rig) -> None:
    """The issue's test: inside, ``git add`` and ``git commit`` move the branch as the repository
    sees it (tip and reflog); no other ref made, moved or deleted inside reaches it; at the end
    the ref is plain again with the commit and ``git worktree remove`` works."""
    need_bwrap()
    before = rig.refs()
    done = rig.boxed("echo x > f && git add f && git commit -q -m boxed && git rev-parse HEAD")
    assert done.returncode == 0, done
    head = done.stdout.strip()
    assert git(rig.repo, "rev-parse", "corral/mine") == head
    assert git(rig.repo, "reflog", "--format=%gs", "-1", "corral/mine") == "commit: boxed"
    for attempt in ("git branch corral/another", "git branch corral/x/y", "git tag t",
                    "git update-ref refs/heads/main HEAD", "git branch -D corral/other",
                    "git update-ref -d refs/heads/corral/other", "git branch -f corral/other HEAD"):
        rig.boxed(attempt)
    assert rig.refs() == {**before, REF: head}
    assert rig.boxed("git rev-parse --verify -q corral/another").returncode == 0  # it exists in there
    unlink(rig.common, REF)
    assert not rig.ref.is_symlink() and rig.ref.read_text().strip() == head
    assert not (rig.common / "corral").exists()
    assert rig.refs() == {**before, REF: head}
    git(rig.repo, "worktree", "remove", "--force", str(rig.wt))
    git(rig.repo, "branch", "-D", "corral/mine")
    assert "corral/mine" not in git(rig.repo, "branch")


def test_after_a_pack_refs_outside_the_next_spawn_links_again_keeping_the_newer_value(rig: Rig) -> None:
    """``git gc`` packs the branch and deletes its symlink: the next ``link`` takes the packed
    value, unless ``P`` has moved on from it (commits made inside after the pack); a plain ref
    written outside wins, whatever ``P`` holds."""
    link(rig.common, REF)
    first = git(rig.repo, "rev-parse", "corral/mine")
    git(rig.repo, "pack-refs", "--all")
    assert not rig.ref.exists()
    assert link(rig.common, REF) is not None and rig.ref.is_symlink()
    assert git(rig.repo, "rev-parse", "corral/mine") == first
    git(rig.repo, "pack-refs", "--all")
    newer = git(rig.repo, "commit-tree", "-p", first, "-m", "inside", f"{first}^{{tree}}")
    (rig.place / "mine").write_text(newer + "\n")  # what a commit inside would leave there
    link(rig.common, REF)
    assert git(rig.repo, "rev-parse", "corral/mine") == newer
    git(rig.repo, "update-ref", "refs/heads/corral/mine", first)  # outside moves it back: it wins
    link(rig.common, REF)
    assert git(rig.repo, "rev-parse", "corral/mine") == first and rig.ref.is_symlink()


def test_unlink_leaves_a_ref_replaced_outside_and_drops_one_deleted_inside(rig: Rig) -> None:
    link(rig.common, REF)
    main = git(rig.repo, "rev-parse", "main")
    other = git(rig.repo, "commit-tree", "-p", main, "-m", "outside", f"{main}^{{tree}}")
    git(rig.repo, "update-ref", "refs/heads/corral/mine", other)
    (rig.place / "mine").write_text("0" * 40 + "\n")
    unlink(rig.common, REF)
    assert git(rig.repo, "rev-parse", "corral/mine") == other and not (rig.common / "corral").exists()
    link(rig.common, REF)
    (rig.place / "mine").unlink()  # ``git update-ref -d`` of its own branch, inside
    unlink(rig.common, REF)
    assert not os.path.lexists(rig.ref)
    assert git(rig.repo, "rev-parse", "--verify", "-q", "corral/mine", check=False) == ""


def test_a_symlink_planted_in_the_branch_directory_is_never_followed(rig: Rig) -> None:
    link(rig.common, REF)
    secret = rig.base / "secret"
    secret.write_text("not a ref\n")
    value = (rig.place / "mine").read_text()
    (rig.place / "mine").unlink()
    (rig.place / "mine").symlink_to(secret)
    (rig.log_place / "mine").unlink()
    (rig.log_place / "mine").symlink_to(rig.base / "elsewhere")
    unlink(rig.common, REF)
    assert not os.path.lexists(rig.ref) and not (rig.base / "elsewhere").exists()
    git(rig.repo, "update-ref", REF, value.strip())
    link(rig.common, REF)
    (rig.log_place / "mine").unlink()
    (rig.log_place / "mine").symlink_to(rig.base / "elsewhere")
    assert link(rig.common, REF) is not None
    assert not (rig.log_place / "mine").is_symlink() and not (rig.base / "elsewhere").exists()


def test_the_workspace_unlinks_when_it_removes_a_worktree_and_at_boot(tmp_path: Path) -> None:
    """``Workspaces.discard`` and the boot reconcile (for a session that still exists) make a
    linked branch plain again."""
    repo = make_repo(tmp_path / "repo")
    state = tmp_path / "state"
    (state / "sessions" / "s1").mkdir(parents=True)
    workspaces = Workspaces(state, WorkspacesConfig(), None)

    async def main() -> None:
        record = await workspaces.place("s1", WorkspaceSpec(mode="worktree"), cwd=str(repo))
        assert record is not None
        await workspaces.bind(record)
        common = Path(record.common_dir)
        ref = f"refs/heads/{record.branch}"
        head = git(repo, "rev-parse", record.branch)
        link(common, ref)
        await reconcile(Git(), workspaces.root, state)  # the session exists: kept, unlinked
        assert not (common / ref).is_symlink() and (common / ref).read_text().strip() == head
        assert not (common / "corral").exists() and Path(record.path).is_dir()
        link(common, ref)
        (Path(record.path) / "new.txt").write_text("x\n")
        await workspaces.commit("s1", "by corral")  # git replaces the link; corral links again
        assert (common / ref).is_symlink()
        assert git(repo, "log", "--format=%s", "-1", record.branch) == "by corral"
        (Path(record.path) / "more.txt").write_text("y\n")
        await workspaces.merge("s1", "merge", ended=False)  # moves the branch to its snapshot
        tip = git(repo, "rev-parse", record.branch)
        assert (common / ref).is_symlink() and (common / "corral" / ref / ref.rsplit("/", 1)[1]).read_text().strip() == tip
        assert git(repo, "show", "--format=", "--name-only", tip) == "more.txt"
        await workspaces.discard("s1")
        assert not (common / "corral").exists() and not os.path.lexists(common / ref)
        assert not Path(record.path).exists()

    trio.run(main)


def test_a_native_worker_under_bubblewrap_with_landlock_on_top_commits_on_its_branch(rig: Rig) -> None:
    """The native worker lays Landlock on itself inside bubblewrap (``confinement_of``): the
    redirected directory is writable for it, and the refs bound read-only in there are left to
    bubblewrap (protecting them would take the directory out of Landlock's grant)."""
    need_bwrap()
    if landlock.abi() < 1:
        pytest.skip("needs Landlock")
    rules = git_rules(str(rig.wt), redirect=True)
    plan = SandboxPlan(cwd=rig.wt, writable=(rig.wt, *rules.writable), protected=rules.protected,
                       redirects=rules.redirects, read_only=rules.readable, tmp=False,
                       void=void_file(rig.base / "void"))
    confinement = confinement_of(plan, effective="bwrap", landlock_enabled=True)
    assert confinement.landlock and str(rig.ref.parent) in confinement.writable
    assert str(rig.common / "refs" / "heads" / "corral" / "other") in map(str, plan.protected)
    assert str(rig.common / "refs" / "heads" / "corral" / "other") not in confinement.protected
    assert str(rig.common / "hooks") in confinement.protected
    script = ("import subprocess, sys, msgspec\n"
              "from protocol.confinement import Confinement\n"
              "from actors.native.worker.confinement import confine\n"
              "confine(msgspec.json.decode(sys.argv[1].encode(), type=Confinement))\n"
              "ok = subprocess.run(['git', 'commit', '-q', '--allow-empty', '-m', 'native']).returncode\n"
              "bad = subprocess.run(['git', 'branch', '-f', 'corral/other', 'HEAD']).returncode\n"
              "print(ok, bad)\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.com", GIT_COMMITTER_NAME="t",
               GIT_COMMITTER_EMAIL="t@example.com", PYTHONPATH=str(_CORRAL))
    argv, changed = wrap([sys.executable, "-c", script, msgspec.json.encode(confinement).decode()], env, plan)
    before = rig.refs()
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False,
                          env={k: v for k, v in changed.items() if v is not None})
    assert done.stdout.split() == ["0", "128"], done
    assert git(rig.repo, "log", "--format=%s", "-1", "corral/mine") == "native"
    assert {k: v for k, v in rig.refs().items() if k != REF} == {k: v for k, v in before.items() if k != REF}


def test_corral_moving_a_linked_branch_never_follows_a_symlink_planted_in_it(rig: Rig) -> None:
    """``workspace.commit`` detaches the ref and reflog while git writes them: its reflog append
    does not land where a symlink the session planted in ``PL`` points; the link is back after."""
    link(rig.common, REF)
    (rig.log_place / "mine").unlink()
    (rig.log_place / "mine").symlink_to(rig.base / "planted")
    detach(rig.common, REF)
    assert not rig.ref.is_symlink() and not os.path.lexists(rig.log)
    git(rig.wt, "commit", "-q", "--allow-empty", "-m", "by corral")
    relink(rig.common, REF)
    assert not (rig.base / "planted").exists()
    assert rig.ref.is_symlink() and rig.log.is_symlink() and not (rig.log_place / "mine").is_symlink()
    assert (rig.place / "mine").read_text().strip() == git(rig.repo, "rev-parse", "corral/mine")
    assert "commit: by corral" in (rig.log_place / "mine").read_text()


def test_a_branch_with_nothing_to_link_gets_no_writable_ref_directory(rig: Rig) -> None:
    """The session replaced its ref in ``P`` by a symlink (its branch reads as gone): the next
    spawn follows nothing, links nothing and makes no ref directory writable — never the
    repository's own, where a new ref name would reach the repository."""
    link(rig.common, REF)
    (rig.place / "mine").unlink()
    (rig.place / "mine").symlink_to(rig.common / "refs" / "heads" / "main")
    rules = git_rules(str(rig.wt), redirect=True)
    assert rules.redirects == () and rules.writable
    assert not [p for p in rules.writable if rig.common / "refs" in [p, *p.parents]
                or rig.common / "logs" in [p, *p.parents]]
    assert not (rig.place / "mine").exists()


def test_a_branch_directly_in_refs_heads_keeps_main_visible_and_unchangeable(tmp_path: Path) -> None:
    """A branch with no directory of its own in the repository (``feature``: its directory is
    ``refs/heads``, ``main``'s too): ``main`` is bound read-only into the branch's directory,
    seen inside and unchanged; a new branch made inside stays there."""
    need_bwrap()
    base = Path(tempfile.mkdtemp(prefix="corral-reflink-", dir="/var/tmp"))
    try:
        rig = Rig(base)
        git(rig.repo, "worktree", "add", "-q", "-b", "feature", str(base / "wt2"))
        rig.wt = base / "wt2"
        before = rig.refs()
        done = rig.boxed("git commit -q --allow-empty -m boxed && git rev-parse --verify -q main "
                         "&& git branch newone && git rev-parse --verify -q newone")
        assert done.returncode == 0, done
        assert done.stdout.split() == [before["refs/heads/main"], git(rig.repo, "rev-parse", "feature")]
        for attempt in ("git branch -f main HEAD", "git update-ref -d refs/heads/main",
                        f"rm {rig.common}/refs/heads/main", "git branch -D corral/mine"):
            assert rig.boxed(attempt).returncode != 0, attempt
        assert git(rig.repo, "log", "--format=%s", "-1", "feature") == "boxed"
        assert rig.refs() == {**before, "refs/heads/feature": git(rig.repo, "rev-parse", "feature")}
        # the next spawn clears the mount points bubblewrap left in the branch's directory
        link(rig.common, "refs/heads/feature")
        assert sorted(p.name for p in (rig.common / "corral" / "refs" / "heads" / "feature").iterdir()) == [
            "feature", "newone"]
    finally:
        shutil.rmtree(base)


def test_two_sandboxed_sessions_side_by_side_each_move_only_their_own_branch(rig: Rig) -> None:
    """Another session's branch beside this one is linked too (a symlink into its own
    directory): bound read-only here all the same, through its link."""
    need_bwrap()
    git(rig.repo, "worktree", "add", "-q", "-b", "corral/theirs", str(rig.base / "wt2"))
    link(rig.common, "refs/heads/corral/theirs")
    theirs = git(rig.repo, "rev-parse", "corral/theirs")
    done = rig.boxed("git commit -q --allow-empty -m mine && git rev-parse --verify -q corral/theirs")
    assert done.returncode == 0 and done.stdout.strip() == theirs, done
    for attempt in ("git update-ref refs/heads/corral/theirs HEAD", "git branch -f corral/theirs HEAD",
                    f"echo {theirs} > {rig.common}/refs/heads/corral/theirs",
                    f"rm {rig.common}/refs/heads/corral/theirs"):
        assert rig.boxed(attempt).returncode != 0, attempt
    assert git(rig.repo, "rev-parse", "corral/theirs") == theirs
    assert (rig.common / "refs" / "heads" / "corral" / "theirs").is_symlink()
    assert git(rig.repo, "log", "--format=%s", "-1", "corral/mine") == "mine"


def test_a_symlink_planted_under_corrals_temporary_names_is_not_written_through(rig: Rig) -> None:
    link(rig.common, REF)
    victim = rig.base / "victim"
    victim.write_text("keep me\n")
    for directory, name in ((rig.place, "mine"), (rig.log_place, "mine")):
        (directory / f".{name}.corral-tmp").symlink_to(victim)
    git(rig.wt, "commit", "-q", "--allow-empty", "-m", "outside")  # breaks the link: relink writes P
    relink(rig.common, REF)
    (rig.log_place / "mine").unlink()  # the next link makes an empty reflog in PL
    assert (rig.log_place / ".mine.corral-tmp").is_symlink()
    link(rig.common, REF)
    assert victim.read_text() == "keep me\n"
    assert (rig.place / "mine").read_text().strip() == git(rig.repo, "rev-parse", "corral/mine")


def test_a_directory_made_where_the_branch_is_kept_is_cleared_at_the_next_spawn(rig: Rig) -> None:
    """The session made directories where its ref and reflog were (its branch reads as gone):
    the next spawn clears them and links nothing (no writable ref directory, ``gitrules``)."""
    link(rig.common, REF)
    for directory in (rig.place, rig.log_place):
        (directory / "mine").unlink()
        (directory / "mine" / "x").mkdir(parents=True)
    assert link(rig.common, REF) is None
    assert not (rig.place / "mine").exists() and not (rig.log_place / "mine").exists()
    unlink(rig.common, REF)
    assert not os.path.lexists(rig.ref) and not os.path.lexists(rig.log) and not (rig.common / "corral").exists()


def test_a_reflog_grown_huge_inside_is_copied_out_without_reading_it_whole(rig: Rig) -> None:
    # Inside the sandbox the reflog's directory is writable: a session may make it any size.
    # Making the reflog plain again (``unlink``, ``detach``) streams it instead of reading it.
    assert link(rig.common, REF) is not None
    kept = rig.log_place / "mine"
    line = kept.read_bytes()
    with kept.open("ab") as grown:
        for _ in range(64 * 2**20 // len(line) + 1):
            grown.write(line)
    size = kept.stat().st_size
    tracemalloc.start()
    try:
        unlink(rig.common, REF)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert not rig.log.is_symlink() and rig.log.stat().st_size == size
    assert peak < 8 * 2**20, peak  # a 64 MiB reflog read whole would peak above it
