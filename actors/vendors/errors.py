"""What every vendor's error classifier returns: an error class, a stable code and the message.

Each vendor package has its own ``errors.classify`` (its signals differ: Codex's
``codexErrorInfo``, OpenCode's error names, Claude's CLI tags, pi's text), and all of them answer
with this one ``Classification``, whose ``message`` is already redacted (``actors.redaction``).
ACP's classifier builds the ``error`` event directly, since it names codes per agent profile.
"""

from __future__ import annotations

from protocol.base import Data
from protocol.events import Error, ErrorClass

__all__ = ["Classification"]


class Classification(Data, kw_only=True, frozen=True):
    """An error's family, stable code and redacted message."""

    error_class: ErrorClass
    code: str
    message: str

    def event(self) -> Error:
        """The normalized ``error`` event for this classification."""
        return Error(code=self.code, message=self.message, error_class=self.error_class)
