"""``[native.compaction]``: when and how a native session's context is compacted.

Pure data, imported by the daemon (config, the ``start`` frame) and by the worker.
"""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec
from msgspec import Meta

__all__ = ["CompactionConfig", "CompactionMode"]

CompactionMode = Literal["elide", "summarize"]

_Fraction = Annotated[float, Meta(gt=0, le=1)]


class CompactionConfig(msgspec.Struct, kw_only=True, frozen=True, forbid_unknown_fields=True):
    """``[native.compaction]``: ``context_tokens`` > 0 turns compaction on.

    Before each model request the calibrated estimate of the request is compared with
    ``trigger`` × ``context_tokens``; at or above it, the oldest eligible tool-response bodies
    are elided to ``[elided]``, then the oldest whole turns dropped (``mode = "summarize"``:
    replaced by a summary the model writes, ``summary_retries`` retries, else just dropped),
    until the estimate is at most ``target`` × ``context_tokens``. The active turn, the
    ``keep_recent_turns`` turns before it, the first content, the system instructions and
    every call of ``protected_tools`` are never touched.
    """

    context_tokens: Annotated[int, Meta(ge=0)] = 0
    trigger: _Fraction = 0.85
    target: _Fraction = 0.60
    keep_recent_turns: Annotated[int, Meta(ge=0)] = 12
    protected_tools: list[str] = []
    mode: CompactionMode = "elide"
    summary_retries: Annotated[int, Meta(ge=0, le=10)] = 2

    @property
    def enabled(self) -> bool:
        """True when ``context_tokens`` > 0."""
        return self.context_tokens > 0
