"""Instruction discovery, activation on touch, imports and the budget, on temporary trees."""

from __future__ import annotations

import os
from pathlib import Path

from actors.native.context import Discovery, Instructions
from protocol.native_context import ContextSettings


def put(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def tree(tmp: Path) -> tuple[Path, Path, Path]:
    """``home``, a repository ``outer/repo`` (with ``outer/AGENTS.md`` above it) and its cwd."""
    home, repo = tmp / "home", tmp / "outer" / "repo"
    (repo / ".git").mkdir(parents=True)
    put(home / ".codex" / "AGENTS.md", "codex user")
    put(home / ".claude" / "CLAUDE.md", "claude user")
    put(tmp / "outer" / "AGENTS.md", "outer ancestor")
    put(repo / "AGENTS.md", "root agents")
    put(repo / "CLAUDE.md", "root claude")
    put(repo / ".github" / "copilot-instructions.md", "copilot root")
    put(repo / "pkg" / "AGENTS.md", "pkg nested")
    put(repo / "pkg" / "deep" / "CLAUDE.md", "deep nested")
    put(repo / ".claude" / "rules" / "always.md", "rule always")
    put(repo / ".claude" / "rules" / "ts.md", "---\npaths:\n  - \"src/**/*.{ts,tsx}\"\n---\nrule ts")
    put(repo / ".github" / "instructions" / "py.instructions.md",
        "---\napplyTo: \"**/*.py\"\n---\ncopilot py")
    put(repo / ".github" / "instructions" / "manual.instructions.md", "never automatic")
    return home, repo, repo


def context(cwd: Path, home: Path | None, ceiling: Path | None = None,
            **settings: object) -> Instructions:
    return Instructions(Discovery(cwd, home=home, settings=ContextSettings(**settings),  # type: ignore[arg-type]
                                  ceiling=ceiling))


def order(text: str, *needles: str) -> list[int]:
    return [text.index(n) for n in needles]


def test_snapshot_orders_user_ancestor_root_least_to_most_specific(tmp_path: Path) -> None:
    home, _, cwd = tree(tmp_path)
    assembled, warnings = context(cwd, home).assemble()
    text = assembled.text
    positions = order(text, "codex user", "claude user", "outer ancestor", "root agents",
                      "root claude", "copilot root", "rule always")
    assert positions == sorted(positions)
    for absent in ("pkg nested", "deep nested", "rule ts", "copilot py", "never automatic"):
        assert absent not in text
    assert assembled.included[0] == "~/.codex/AGENTS.md" and warnings == []


def test_a_touch_activates_nested_files_and_matching_rules_most_specific_last(tmp_path: Path) -> None:
    home, repo, cwd = tree(tmp_path)
    ctx = context(cwd, home)
    assert ctx.touch("README") is False
    assert ctx.touch("pkg/deep/x.py") is True
    text = ctx.assemble()[0].text
    positions = order(text, "root agents", "copilot py", "pkg nested", "deep nested")
    assert positions == sorted(positions)
    assert "rule ts" not in text
    assert ctx.touch("pkg/deep/y.py") is False  # nothing new
    assert ctx.touch("src/app/view.tsx") is True
    assert "rule ts" in ctx.assemble()[0].text


def test_a_cwd_below_the_root_sees_the_directories_between(tmp_path: Path) -> None:
    home, repo, _ = tree(tmp_path)
    text = context(repo / "pkg", home).assemble()[0].text
    assert order(text, "root agents", "pkg nested") == sorted(order(text, "root agents", "pkg nested"))
    ctx = context(repo / "pkg", home)
    ctx.touch("deep/file.txt")
    assert "deep nested" in ctx.assemble()[0].text


def test_without_a_repository_only_the_cwd_and_no_ancestors(tmp_path: Path) -> None:
    put(tmp_path / "AGENTS.md", "above")
    put(tmp_path / "work" / "AGENTS.md", "here")
    text = context(tmp_path / "work", None, ceiling=tmp_path).assemble()[0].text
    assert "here" in text and "above" not in text


def test_imports_are_expanded_confined_depth_limited_and_deduplicated(tmp_path: Path) -> None:
    home, repo = tmp_path / "home", tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    put(tmp_path / "secret.md", "SECRET")
    put(tmp_path / "extra" / "ok.md", "extra root text")
    put(repo / "docs" / "a.md", "level one @b.md")
    put(repo / "docs" / "b.md", "level two @c.md")
    put(repo / "docs" / "c.md", "level three")
    put(repo / "docs" / "style.md", "style guide")
    put(repo / "AGENTS.md", "root: see @docs/style.md and @docs/a.md and @../secret.md, "
                            "mail me@example.com, `@docs/b.md` in code, @" + str(tmp_path / "extra/ok.md"))
    put(repo / "CLAUDE.md", "claude imports @docs/style.md again")
    os.symlink(repo / "docs" / "style.md", repo / "docs" / "link.md")
    put(repo / "pkg" / "AGENTS.md", "@../docs/link.md")
    ctx = context(repo, home, max_import_depth=2, import_roots=[str(tmp_path / "extra")])
    ctx.touch("pkg/f")
    assembled, warnings = ctx.assemble()
    text = assembled.text
    assert text.count("style guide") == 1  # imported twice and through a symlink: once
    assert "level one" in text and "level two" in text and "level three" not in text
    assert "SECRET" not in text and "extra root text" in text
    codes = sorted(w.code for w in warnings)
    assert codes == ["context.import_depth", "context.import_outside"]


def test_the_same_bytes_in_two_files_appear_once(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    put(tmp_path / "AGENTS.md", "same words")
    put(tmp_path / "CLAUDE.md", "same words")
    assembled, _ = context(tmp_path, None).assemble()
    assert assembled.text.count("same words") == 1 and assembled.included == ("AGENTS.md",)


def test_the_budget_evicts_least_specific_first_with_a_warning(tmp_path: Path) -> None:
    home, repo = tmp_path / "home", tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    put(home / ".claude" / "CLAUDE.md", "u" * 300)
    put(repo / "AGENTS.md", "r" * 300)
    put(repo / "pkg" / "AGENTS.md", "n" * 300)
    ctx = context(repo, home, max_bytes=700)
    assembled, warnings = ctx.assemble()
    assert assembled.evicted == () and warnings == []
    ctx.touch("pkg/x")
    assembled, warnings = ctx.assemble()
    assert assembled.evicted == ("~/.claude/CLAUDE.md",)
    assert assembled.included == ("AGENTS.md", "pkg/AGENTS.md")
    assert [(w.code, w.path) for w in warnings] == [
        ("context.budget_evicted", str(home / ".claude" / "CLAUDE.md"))]
    assert ctx.assemble()[1] == []  # reported once


def test_oversized_and_binary_files_are_skipped_with_warnings(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    put(tmp_path / "AGENTS.md", "x" * 200)
    (tmp_path / "CLAUDE.md").write_bytes(b"\xff\xfe bad")
    assembled, warnings = context(tmp_path, None, max_file_bytes=100).assemble()
    assert assembled.text == ""
    assert sorted(w.code for w in warnings) == ["context.file_too_large", "context.not_utf8"]


def test_a_fifo_is_never_read(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    os.mkfifo(tmp_path / "AGENTS.md")
    assert context(tmp_path, None).assemble()[0].text == ""
