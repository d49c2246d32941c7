"""Mask API keys in error text, so that no message a client sees or a log keeps carries a secret.

One rule for every harness (the vendor drivers' error classifiers and the native model
adapters): a token shaped like an OpenAI/Anthropic-style key (``sk-…``) or a Google key
(``AIza…``) keeps its first three characters, which say what kind of key it was, and the rest
becomes ``***``; a known key (the one the call was made with) is masked wherever it appears,
whatever its shape. Pure text, no imports of ours: the native worker and the daemon side both use
it.
"""

from __future__ import annotations

import re

__all__ = ["redact"]


def redact(text: str, secret: str = "") -> str:
    """``text`` with ``secret`` (if any) and every API-key-shaped token masked."""
    if secret:
        text = text.replace(secret, "***")
    return _KEY_SHAPES.sub(lambda m: m.group(0)[:3] + "***", text)


# ``*`` and ``.`` belong to the sk- shape so that a half-masked key (``sk-ab***yz``) is masked whole.
_KEY_SHAPES = re.compile(r"\b(?:sk-[A-Za-z0-9_\-*.]{2,}|AIza[0-9A-Za-z_\-]{8,})")
