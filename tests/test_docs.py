"""The README is a short front door, and every link between it and the pages in docs/ resolves.

A link to a file must name one that exists; a link with ``#anchor`` must name a heading of its
target, spelt as GitHub spells heading anchors. The README's two set-up commands stay verbatim.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
PAGES = sorted((ROOT / "docs").glob("*.md"))
SET_UP = (
    "    pip install -e . && corral daemon\n",
    "    pip install -e '.[test]' && python -m mypy && python -m pytest -n 2 && python -m pytest -m ray\n",
)

_LINK = re.compile(r"\]\(([^)\s]+)\)")
_FENCE = re.compile(r"^(```|~~~)")


def anchors(text: str) -> set[str]:
    """The anchors GitHub gives the headings of a Markdown text (code blocks skipped)."""
    found: set[str] = set()
    fenced = False
    for line in text.splitlines():
        if _FENCE.match(line):
            fenced = not fenced
            continue
        if fenced or not line.startswith("#"):
            continue
        title = line.lstrip("#").strip()
        slug = re.sub(r"[^\w\- ]", "", title.lower()).replace(" ", "-")
        n, unique = 0, slug
        while unique in found:
            n += 1
            unique = f"{slug}-{n}"
        found.add(unique)
    return found


def broken_links(page: Path) -> list[str]:
    """Every relative link of ``page`` whose file or heading does not exist."""
    broken = []
    text = page.read_text(encoding="utf-8")
    for target in _LINK.findall(text):
        if re.match(r"[a-z]+:", target):
            continue  # http:, https:, mailto:
        path, _, anchor = target.partition("#")
        resolved = (page.parent / path).resolve() if path else page
        if not resolved.exists():
            broken.append(f"{page.name}: {target} (no such file)")
        elif anchor and resolved.suffix == ".md" and anchor not in anchors(resolved.read_text(encoding="utf-8")):
            broken.append(f"{page.name}: {target} (no such heading)")
    return broken


def test_the_readme_is_a_short_front_door() -> None:
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 250
    for line in SET_UP:
        assert line in text
    assert "## A walkthrough" in text


def test_the_readme_points_into_every_page_of_docs() -> None:
    linked = {(README.parent / path).resolve() for path in
              (t.partition("#")[0] for t in _LINK.findall(README.read_text(encoding="utf-8")))}
    assert PAGES and set(PAGES) <= linked


@pytest.mark.parametrize("page", [README, *PAGES], ids=lambda p: p.name)
def test_every_link_resolves(page: Path) -> None:
    assert broken_links(page) == []


def test_a_broken_link_is_seen(tmp_path: Path) -> None:
    (tmp_path / "there.md").write_text("# A page\n\n## Its `first` section (really)\n", encoding="utf-8")
    page = tmp_path / "page.md"
    page.write_text("[ok](there.md#its-first-section-really) [gone](missing.md) "
                    "[no heading](there.md#nowhere) [web](https://example.org/x)\n", encoding="utf-8")
    assert broken_links(page) == ["page.md: missing.md (no such file)", "page.md: there.md#nowhere (no such heading)"]


def test_the_configuration_page_names_every_key() -> None:
    """Every key of the configuration's JSON Schema is in docs/configuration.md."""
    schema = json.loads((ROOT / "config" / "schema.json").read_text(encoding="utf-8"))
    page = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    prose = re.sub(r"^```.*?^```$", "", page, flags=re.M | re.S)  # a fence's backticks pair with nothing
    ticked = {word for item in re.findall(r"`([^`]+)`", prose) for word in re.findall(r"\w+", item)}
    missing = sorted(f"{name}.{key}" for name, definition in schema["$defs"].items()
                     for key in definition.get("properties", {}) if key not in ticked)
    assert missing == []
