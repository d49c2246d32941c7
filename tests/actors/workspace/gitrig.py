"""Real git repositories for the workspace tests: make one, run git in it, fingerprint it.

The test side runs git with ``subprocess`` and a fixed identity, apart from the daemon's own
runner, so what the tests check is never produced by the code under test.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

from actors.workspace import Workspaces, WorkspaceRecord, WorkspacesConfig
from protocol.models import WorkspaceSpec

IDENTITY = {
    "GIT_AUTHOR_NAME": "Test Author", "GIT_AUTHOR_EMAIL": "author@example.com",
    "GIT_COMMITTER_NAME": "Test Committer", "GIT_COMMITTER_EMAIL": "committer@example.com",
}


def git(cwd: Path | str, *args: str, check: bool = True) -> str:
    """``git args`` in ``cwd``; its stdout (stripped). No ``GIT_*`` leaks in from outside."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    done = subprocess.run(["git", *args], cwd=cwd, env={**env, **IDENTITY}, capture_output=True,
                          text=True, check=False)
    if check and done.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed: {done.stderr}")
    return done.stdout.rstrip("\n")


def make_repo(path: Path, files: dict[str, str] | None = None) -> Path:
    """A repository on ``main`` with one commit of ``files`` (default: a README and src/app.py)."""
    path.mkdir(parents=True)
    git(path, "init", "-q", "-b", "main")
    for name, text in (files or {"README.md": "hello\n", "src/app.py": "print('hi')\n"}).items():
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text(text)
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "initial")
    return path


def commit_all(path: Path, message: str) -> str:
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", message)
    return git(path, "rev-parse", "HEAD")


def fingerprint(*trees: Path) -> str:
    """A hash of every file under ``trees`` (working trees, indexes, refs, HEADs, reflogs), but
    git's object store, where a refused merge may leave unreferenced objects."""
    digest = hashlib.sha256()
    for tree in trees:
        for path in sorted([tree, *tree.rglob("*")] if tree.is_dir() else [tree]):
            relative = path.relative_to(tree) if path != tree else Path()
            if relative.parts[:2] == (".git", "objects") or not path.is_file():
                continue
            digest.update(str(path).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def workspaces(state: Path, **config: object) -> Workspaces:
    """A ``Workspaces`` on ``state`` with no ledger (git children are not recorded)."""
    (state / "sessions").mkdir(parents=True, exist_ok=True)
    return Workspaces(state, WorkspacesConfig(**config), None)  # type: ignore[arg-type]


async def new_session(spaces: Workspaces, session_id: str, cwd: Path, *, name: str | None = None,
                      base: str | None = None, branch: str | None = None) -> WorkspaceRecord:
    """What the session table does at ``session.create``: place, make the session dir, bind."""
    record = await spaces.place(session_id, WorkspaceSpec(mode="worktree", base=base, branch=branch),
                                cwd=str(cwd), label=name)
    assert record is not None
    (spaces.sessions_dir / session_id).mkdir()
    await spaces.bind(record)
    return record
