"""The fake harness's stdin vocabulary: what a session writes to a fake child, one JSON line each.

The child answers in the event vocabulary of ``protocol.events`` (without ``seq``/``ts``).
"""

from __future__ import annotations

import msgspec

from .base import Message
from .events import Decision, Event


class FakeUser(Message, tag="user", kw_only=True, frozen=True):
    """A prompt to start a turn."""

    text: str


class FakeSteer(Message, tag="steer", kw_only=True, frozen=True):
    """A prompt delivered into the running turn."""

    text: str


class FakeSetModel(Message, tag="set_model", kw_only=True, frozen=True):
    """Use this model from the next turn on."""

    model: str


class FakePermissionDecision(Message, tag="permission_decision", kw_only=True, frozen=True):
    """The decision for a permission the child asked for."""

    permission_id: str
    decision: Decision | str


class FakeInterrupt(Message, tag="interrupt", kw_only=True, frozen=True):
    """Stop the running turn."""


FakeCommand = FakeUser | FakeSteer | FakeSetModel | FakePermissionDecision | FakeInterrupt
"""Every line a session writes to a fake child."""

_ENCODER = msgspec.json.Encoder()
_COMMANDS = msgspec.json.Decoder(FakeCommand)
_EVENTS = msgspec.json.Decoder(Event)


def encode_command(command: FakeCommand) -> bytes:
    """One stdin line for the fake child, newline included."""
    return _ENCODER.encode(command) + b"\n"


def decode_command(line: bytes | str) -> FakeCommand:
    """Parse one stdin line (used by fake child programs)."""
    return _COMMANDS.decode(line)


def decode_event(line: bytes | str) -> Event:
    """Parse one stdout line of a fake child; raises ``msgspec.DecodeError`` on anything else."""
    return _EVENTS.decode(line)
