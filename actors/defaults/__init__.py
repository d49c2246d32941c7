"""The default files corral ships inside its package: the price table, the configuration file
with every key at its default, and that file's JSON Schema.

They are package data, read with ``importlib.resources``, so a wheel (``pip install``, ``pipx``,
``uv tool install``) has them as much as a checkout does: nothing is looked up relative to a
source tree. ``config/`` at the top of the repository holds the same bytes for people to read
and copy (a test keeps the two identical); ``corral defaults NAME`` prints one from any install.

The values of the configuration live in code (``actors.app.Config()``: each section's Struct
defaults, which is what runs with no file at all); ``corral.toml`` spells them out with their
documentation and ``schema.json`` is generated from the Structs, tests keeping both equal to
them. The price table is data only: ``actors.native.daemon.config.load_prices`` reads it.
"""

from __future__ import annotations

from importlib import resources
from importlib.resources.abc import Traversable

__all__ = ["CONFIG", "FILES", "PRICES", "SCHEMA", "file", "read"]

PRICES = "prices.toml"
"""US dollars per million tokens, per model: the ``cost_usd`` of native sessions."""

CONFIG = "corral.toml"
"""Every configuration key with its default value and what it does."""

SCHEMA = "schema.json"
"""The JSON Schema of a configuration file, for editors that check TOML."""

FILES = {"prices": PRICES, "config": CONFIG, "schema": SCHEMA}
"""``corral defaults NAME``: the short name of each file."""


def file(name: str) -> Traversable:
    """The packaged file ``name`` (one of ``FILES``' values)."""
    return resources.files(__name__).joinpath(name)


def read(name: str) -> str:
    """The text of the packaged file ``name``."""
    return file(name).read_text(encoding="utf-8")
