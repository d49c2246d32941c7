"""Skill discovery on temporary trees: roots, merging, ambiguity, digests, resources, trust."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from actors.native.context import Catalog, SkillError, discover_skills
from protocol.native_context import ContextSettings


def skill(folder: Path, name: str, description: str = "does things", body: str = "Do it.",
          extra: str = "", files: dict[str, str] | None = None) -> Path:
    directory = folder / name
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "SKILL.md").write_text(
        f"---\nname: {name}\ndescription: {description}\n{extra}---\n{body}\n")
    for relative, text in (files or {}).items():
        (directory / relative).parent.mkdir(parents=True, exist_ok=True)
        (directory / relative).write_text(text)
    return directory


def catalog(tmp: Path, **settings: object) -> Catalog:
    repo = tmp / "repo"
    repo.mkdir(exist_ok=True)
    return discover_skills(ContextSettings(**settings), home=tmp / "home",  # type: ignore[arg-type]
                           repo_root=repo, environ={})


def test_roots_of_every_host_with_provenance(tmp_path: Path) -> None:
    home = tmp_path / "home"
    skill(tmp_path / "mine", "alpha")
    skill(home / ".claude" / "skills", "beta")
    skill(home / ".codex" / "skills", "gamma")
    skill(home / ".copilot" / "skills", "delta")
    plugin = tmp_path / "cache" / "tools-plugin"
    skill(plugin / "skills", "pdf")
    (home / ".claude" / "plugins").mkdir(parents=True)
    (home / ".claude" / "plugins" / "installed_plugins.json").write_text(json.dumps(
        {"version": 2, "plugins": {"tools@market": [{"scope": "user", "installPath": str(plugin)}],
                                   "off@market": [{"installPath": str(plugin)}]}}))
    (home / ".claude" / "settings.json").write_text(json.dumps(
        {"enabledPlugins": {"off@market": False}}))
    found = catalog(tmp_path, skill_roots=[str(tmp_path / "mine")])
    assert sorted(r.qualified for r in found.records) == [
        "claude:plugin:tools:pdf", "claude:user:beta", "codex:user:gamma", "copilot:user:delta",
        "corral:config:alpha"]
    assert found.warnings == []
    off = catalog(tmp_path, skill_roots=[str(tmp_path / "mine")], foreign_skills=False)
    assert [r.qualified for r in off.records] == ["corral:config:alpha"]


def test_same_bytes_merge_and_different_bytes_stay_ambiguous_until_qualified(tmp_path: Path) -> None:
    home = tmp_path / "home"
    skill(home / ".claude" / "skills", "review", body="Review carefully.")
    skill(home / ".codex" / "skills", "review", body="Review carefully.")
    skill(home / ".claude" / "skills", "deploy", body="Deploy the Claude way.")
    skill(home / ".codex" / "skills", "deploy", body="Deploy the Codex way.")
    found = catalog(tmp_path)
    listed = {entry["name"]: entry["sources"] for entry in found.invocable()}
    assert listed == {"review": ["claude:user:review", "codex:user:review"],
                      "claude:user:deploy": ["claude:user:deploy"],
                      "codex:user:deploy": ["codex:user:deploy"]}
    assert [w.code for w in found.warnings] == ["skills.ambiguous"]
    assert found.read_body("review", 4096)[1] == "Review carefully."
    with pytest.raises(SkillError) as caught:
        found.read_body("deploy", 4096)
    assert caught.value.code == "skills.ambiguous"
    assert found.read_body("codex:user:deploy", 4096)[1] == "Deploy the Codex way."


def test_a_body_changed_since_discovery_is_refused(tmp_path: Path) -> None:
    directory = skill(tmp_path / "home" / ".claude" / "skills", "s")
    found = catalog(tmp_path)
    (directory / "SKILL.md").write_text("---\nname: s\ndescription: x\n---\nEvil.\n")
    with pytest.raises(SkillError) as caught:
        found.read_body("s", 4096)
    assert caught.value.code == "skills.digest_mismatch"


def test_resources_are_bounded_utf8_and_confined_under_the_skill(tmp_path: Path) -> None:
    directory = skill(tmp_path / "home" / ".claude" / "skills", "s",
                      files={"ref/guide.md": "guide text", "big.txt": "x" * 500})
    (directory / "bin.dat").write_bytes(b"\xff\xfe")
    (tmp_path / "secret.txt").write_text("SECRET")
    os.symlink(tmp_path / "secret.txt", directory / "link.txt")
    found = catalog(tmp_path, max_file_bytes=100)
    assert found.records[0].resources == ("big.txt", "bin.dat", "link.txt", "ref/guide.md")
    assert found.read_resource("s", "ref/guide.md", 100) == "guide text"
    for path, code in (("../../../../secret.txt", "skills.resource_outside"),
                       ("link.txt", "skills.resource_outside"),
                       ("big.txt", "skills.resource_invalid"),
                       ("bin.dat", "skills.resource_invalid"),
                       ("missing.md", "skills.resource_invalid")):
        with pytest.raises(SkillError) as caught:
            found.read_resource("s", path, 100)
        assert caught.value.code == code, path


def test_merged_skills_with_different_resources_need_the_qualified_name(tmp_path: Path) -> None:
    home = tmp_path / "home"
    skill(home / ".claude" / "skills", "s", files={"a.md": "from claude"})
    skill(home / ".codex" / "skills", "s", files={"b.md": "from codex"})
    found = catalog(tmp_path)
    with pytest.raises(SkillError) as caught:
        found.read_resource("s", "a.md", 100)
    assert caught.value.code == "skills.qualify_resources"
    assert found.read_resource("codex:user:s", "b.md", 100) == "from codex"


def test_repository_skills_need_an_exact_trusted_root(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    skill(repo / ".claude" / "skills", "local")
    untrusted = catalog(tmp_path, trusted_roots=[str(tmp_path)])
    assert [(r.qualified, r.trusted) for r in untrusted.records] == [("claude:repo:local", False)]
    assert untrusted.invocable() == []
    with pytest.raises(SkillError):
        untrusted.read_body("local", 4096)
    trusted = catalog(tmp_path, trusted_roots=[str(repo)])
    assert [e["name"] for e in trusted.invocable()] == ["local"]


def test_invalid_and_manual_only_skills(tmp_path: Path) -> None:
    folder = tmp_path / "home" / ".claude" / "skills"
    (folder / "broken").mkdir(parents=True)
    (folder / "broken" / "SKILL.md").write_text("---\nname: broken\n---\nno description\n")
    skill(folder, "manual", extra="disable-model-invocation: true\n")
    found = catalog(tmp_path)
    assert [w.code for w in found.warnings] == ["skills.invalid"]
    assert [r.name for r in found.records] == ["manual"] and found.invocable() == []
