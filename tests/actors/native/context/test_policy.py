"""Frontmatter and tool policies: host names, argument patterns, deny wins, empty lists."""

from __future__ import annotations

from pathlib import Path

from actors.native.context import Discovery, Instructions, PolicySet, parse_policy, split_frontmatter
from actors.native.context.frontmatter import as_list
from protocol.native_context import ContextSettings

TOOLS = ["read", "write", "edit", "bash", "grep", "find", "ls"]


def policy(text: str, source: str = "f.md") -> PolicySet:
    return PolicySet([parse_policy(split_frontmatter(text)[0], source)])


def test_frontmatter_scalars_flow_and_block_lists() -> None:
    fields, body = split_frontmatter(
        "---\nname: 'x'\ntools: [Read, \"Grep\"]\npaths:\n  - a/**\n  - b\n# c\n"
        "description: |\n  one\n  two\n---\nbody\n")
    assert fields == {"name": "x", "tools": ["Read", "Grep"], "paths": ["a/**", "b"],
                      "description": "one\ntwo"}
    assert body == "body\n"
    assert split_frontmatter("---\nunclosed: 1\nbody") == ({}, "---\nunclosed: 1\nbody")
    assert as_list("Read, Bash(git diff:*, x), LS") == ["Read", "Bash(git diff:*, x)", "LS"]


def test_host_names_map_onto_corral_tools() -> None:
    assert policy("---\nallowed-tools: Read, Glob, LS, Grep\n---\n").visible(TOOLS) == [
        "read", "grep", "find", "ls"]
    assert policy("---\ntools: Write, Edit, Bash\n---\n").visible(TOOLS) == [
        "write", "edit", "bash"]


def test_argument_patterns_keep_the_tool_visible_and_check_each_call() -> None:
    rules = policy("---\nallowed-tools: Bash(git diff:*), Read(src/**)\n---\n")
    assert rules.visible(TOOLS) == ["read", "bash"]
    assert rules.check("bash", {"command": "git diff --stat"}) is None
    assert rules.check("bash", {"command": "git diff"}) is None
    assert rules.check("bash", {"command": "git diffx; rm -rf /"}) is not None
    assert rules.check("bash", {"command": "rm -rf /"}) is not None
    assert rules.check("read", {"path": "./src/a/b.py"}) is None
    assert rules.check("read", {"path": "src/../secrets.txt"}) is not None
    assert rules.check("write", {"path": "src/a"}) is not None


def test_deny_wins_across_files_and_allow_lists_intersect() -> None:
    parent = parse_policy(split_frontmatter("---\nallowed-tools: Read, Bash, Edit\n---\n")[0], "a")
    child = parse_policy(split_frontmatter(
        "---\nallowed-tools: Read, Bash, Write\ndisallowed-tools: Bash(rm:*)\n---\n")[0], "b")
    both = PolicySet([parent, child])
    assert both.visible(TOOLS) == ["read", "bash"]
    assert both.check("bash", {"command": "rm -rf x"}) == "bash is denied here by b"
    assert both.check("bash", {"command": "ls"}) is None
    assert both.check("edit", {"path": "x"}) is not None


def test_an_explicit_empty_allow_list_allows_nothing_and_no_list_allows_all() -> None:
    assert policy("---\nallowed-tools:\n---\n").visible(TOOLS) == []
    assert policy("---\nallowed-tools: []\n---\n").visible(TOOLS) == []
    assert policy("---\nname: x\n---\n").visible(TOOLS) == TOOLS
    assert policy("no frontmatter").check("bash", {"command": "x"}) is None


def test_nested_policies_join_when_their_file_activates(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "AGENTS.md").write_text("---\nallowed-tools: Read, Grep, Bash, LS\n---\nroot")
    (tmp_path / "vendor").mkdir()
    (tmp_path / "vendor" / "CLAUDE.md").write_text("---\ndisallowed-tools: Bash\n---\nhands off")
    ctx = Instructions(Discovery(tmp_path, home=None, settings=ContextSettings()))
    assert ctx.policy.visible(TOOLS) == ["read", "bash", "grep", "ls"]
    ctx.touch("vendor/lib.c")
    assert ctx.policy.visible(TOOLS) == ["read", "grep", "ls"]
    assert ctx.policy.check("bash", {"command": "ls"}) == "bash is denied here by vendor/CLAUDE.md"
