"""Configuration for the daemons the tests start: the background warm-ups off.

The suite starts hundreds of daemons on a machine of two cores; a fork server warming up and
every CLI probed in each of them would slow every other test. ``without_prewarm`` writes a copy
of a configuration file (or an empty one) with ``[native] prewarm = false`` and
``[harnesses] prewarm = false`` added where the file does not set them; the tests of prewarm
itself start their daemons without it.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

__all__ = ["without_prewarm"]

_TABLES = ("native", "harnesses")


def without_prewarm(directory: Path, config: str | Path | None = None) -> str:
    """The path of ``directory/no-prewarm.toml``: ``config``'s text (none: empty) with prewarm
    off in each table that does not set it."""
    text = Path(config).read_text(encoding="utf-8") if config is not None else ""
    for table in _TABLES:
        header = re.search(rf"^\[{table}\][ \t]*(#.*)?$", text, re.MULTILINE)
        if header is None:
            text += f"\n[{table}]\nprewarm = false\n"
            continue
        following = re.compile(r"^\[", re.MULTILINE).search(text, header.end())
        body = text[header.end():following.start() if following else len(text)]
        if not re.search(r"^\s*prewarm\s*=", body, re.MULTILINE):
            text = f"{text[:header.end()]}\nprewarm = false{text[header.end():]}"
    parsed = tomllib.loads(text)  # a file this made unreadable fails here, not in the daemon
    assert all(parsed[table].get("prewarm") is not None for table in _TABLES), text
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "no-prewarm.toml"
    path.write_text(text, encoding="utf-8")
    return str(path)
