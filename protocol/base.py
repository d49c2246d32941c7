"""The one Struct base every wire message derives from, and the timestamp format of the wire."""

from __future__ import annotations

import datetime as _dt

import msgspec

PROTOCOL_VERSION = 1
"""The client protocol version this package speaks (``hello.protocol``)."""


class Message(msgspec.Struct, tag_field="type", kw_only=True, frozen=True):
    """Base of every tagged wire message. Defaults are encoded: clients rely on every field being present."""


class Data(msgspec.Struct, kw_only=True, frozen=True):
    """Base of untagged data carried inside messages (``SessionInfo``, ``Usage``, …)."""


def format_ts(epoch_seconds: float) -> str:
    """Render a wall-clock time as the wire's UTC ISO-8601 form with milliseconds and a ``Z``."""
    whole, millis = divmod(round(epoch_seconds * 1_000_000) // 1000, 1000)
    if whole != _last_second[0]:
        moment = _dt.datetime.fromtimestamp(whole, tz=_dt.timezone.utc)
        _last_second[:] = [whole, moment.strftime("%Y-%m-%dT%H:%M:%S.")]
    return f"{_last_second[1]}{millis:03d}Z"


# The formatted seconds of the last call: events come in bursts within one second.
_last_second: list[object] = [None, ""]
