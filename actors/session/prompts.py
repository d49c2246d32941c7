"""The prompts a session holds until its harness can take them: first in, first out.

A prompt is held when it cannot reach the harness now (no child, a child still starting, a turn
that cannot be steered) and sent, one per turn, as turns end. Prompts still held when the session
ends never reached the harness: they are reported, never silently dropped.
"""

from __future__ import annotations

from protocol.events import Error


class PromptQueue:
    """Held prompts, oldest first."""

    def __init__(self) -> None:
        self._held: list[str] = []  # a few at most; an empty deque costs 760 bytes per session

    def __bool__(self) -> bool:
        """Whether any prompt is held."""
        return bool(self._held)

    def __len__(self) -> int:
        return len(self._held)

    def hold(self, text: str) -> None:
        """Keep ``text`` until the harness can take it (after every prompt held before it)."""
        self._held.append(text)

    def next(self) -> str:
        """Take the oldest held prompt; raises ``IndexError`` when none is held."""
        return self._held.pop(0)

    def put_back(self, text: str) -> None:
        """Return a prompt taken with ``next`` that the harness refused after all."""
        self._held.insert(0, text)

    def lost(self, why: str) -> Error | None:
        """Drop every held prompt; the ``error`` event that reports them, if there were any."""
        if not self._held:
            return None
        lost = list(self._held)
        self._held.clear()
        return Error(error_class="unknown", code="prompts_not_delivered",
                     message=f"{why}; {len(lost)} held prompt(s) never reached the harness: {lost!r}")
