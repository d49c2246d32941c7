"""``assert_kept``: what we sent survived the SDK's validation unchanged.

The SDK's models salvage a field that does not fit (it becomes ``None`` or is skipped) instead
of failing, and fill in defaults; so a message fits the schema when every value we sent is
still there, the same, after validating (defaults the model adds are allowed)."""

from __future__ import annotations

from typing import Any


def assert_kept(sent: Any, validated: Any, path: str = "$") -> None:
    if isinstance(sent, dict):
        assert isinstance(validated, dict), f"{path}: {validated!r}"
        for key, value in sent.items():
            assert key in validated, f"{path}.{key} was dropped"
            assert_kept(value, validated[key], f"{path}.{key}")
    elif isinstance(sent, list):
        assert isinstance(validated, list) and len(validated) == len(sent), f"{path}: {validated!r}"
        for n, (a, b) in enumerate(zip(sent, validated)):
            assert_kept(a, b, f"{path}[{n}]")
    else:
        assert sent == validated, f"{path}: sent {sent!r}, the schema kept {validated!r}"
