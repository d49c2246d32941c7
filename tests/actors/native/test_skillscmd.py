"""``corral skills``: what a native session in a directory would see, without a daemon."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

from actors.native.cli import skillscmd
from protocol.native_context import ContextSettings

REPO = Path(__file__).resolve().parents[3]


def skill(folder: Path, name: str, body: str = "Do it.", extra: str = "") -> None:
    (folder / name).mkdir(parents=True, exist_ok=True)
    (folder / name / "SKILL.md").write_text(
        f"---\nname: {name}\ndescription: The {name} skill\n{extra}---\n{body}\n")


def tree(tmp: Path) -> tuple[Path, Path]:
    home, repo = tmp / "home", tmp / "repo"
    (repo / ".git").mkdir(parents=True)
    skill(home / ".claude" / "skills", "review")
    skill(home / ".codex" / "skills", "review")
    skill(home / ".claude" / "skills", "deploy", body="one way")
    skill(home / ".codex" / "skills", "deploy", body="another way")
    skill(repo / ".claude" / "skills", "local")
    skill(tmp / "mine", "own")
    (home / ".claude" / "skills" / "broken").mkdir()
    (home / ".claude" / "skills" / "broken" / "SKILL.md").write_text("no frontmatter")
    return home, repo


def test_the_cli_lists_skills_with_provenance_and_warnings_as_json(tmp_path: Path) -> None:
    home, repo = tree(tmp_path)
    config = tmp_path / "corral.toml"
    config.write_text(f'[native]\nskill_roots = ["{tmp_path / "mine"}"]\n'
                      f'trusted_roots = ["{repo}"]\n')
    env = {**os.environ, "HOME": str(home), "PYTHONPATH": str(REPO),
           "XDG_CONFIG_HOME": str(tmp_path / "nothing")}
    env.pop("CODEX_HOME", None)
    done = subprocess.run([sys.executable, "-m", "actors.app", "skills", "--cwd", str(repo),
                           "--json", "--config", str(config)],
                          capture_output=True, text=True, env=env, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["repo_root"] == str(repo)
    seen = {(s["qualified"], s["use_as"], s["invocable"]) for s in data["skills"]}
    assert seen == {
        ("corral:config:own", "own", True), ("claude:user:review", "review", True),
        ("codex:user:review", "review", True),
        ("claude:user:deploy", "claude:user:deploy", True),
        ("codex:user:deploy", "codex:user:deploy", True), ("claude:repo:local", "local", True)}
    assert sorted(w["code"] for w in data["warnings"]) == ["skills.ambiguous", "skills.invalid"]


def test_the_text_listing_marks_untrusted_repository_skills(tmp_path: Path) -> None:
    home, repo = tree(tmp_path)
    out, err = io.StringIO(), io.StringIO()
    code = skillscmd.run(repo, ContextSettings(), {"HOME": str(home)}, as_json=False,
                         out=out, err=err)
    assert code == 0
    lines = out.getvalue().splitlines()
    assert lines[0].split() == ["NAME", "SOURCE", "USABLE", "DESCRIPTION"]
    local = next(line for line in lines if line.startswith("local"))
    assert "claude:repo" in local and "no (untrusted)" in local
    assert any(line.startswith("claude:user:deploy") for line in lines)
    assert "skills.invalid" in err.getvalue() and "skills.ambiguous" in err.getvalue()
