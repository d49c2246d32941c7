"""The ``[[notify]]`` tables of the configuration: where the daemon posts its notifications.

```toml
[[notify]]
url = "https://ntfy.sh/my-agents"         # https, or http to a loopback host only
events = ["permission", "turn_done", "session_failed"]
min_turn_s = 30                           # turn_done only for turns that took this long
format = "ntfy"                           # "json" (default), "ntfy" or "slack"
headers = { Authorization = "Bearer …" }  # sent with every post (never logged)
```

A URL that is neither ``https`` nor ``http`` to a loopback host is refused (``ConfigInvalid``:
notifications carry session names and tool inputs, which must not cross a network in the
clear); the loader then drops that table with a warning naming it. ``masked`` shows a URL with
its secrets hidden, for the log and ``corral notify test``: the userinfo's password, every query
value, and path segments shaped like a token (16 or more letters, digits, ``-`` or ``_``, with a
digit among them: a Slack or Discord webhook's secret is such a segment).
"""

from __future__ import annotations

import ipaddress
import re
from typing import Annotated, Literal
from urllib.parse import urlsplit, urlunsplit

import msgspec
from msgspec import Meta, Struct

from protocol.errors import ConfigInvalid

__all__ = ["EVENTS", "NotifyEvent", "NotifyFormat", "NotifyTarget", "check_url", "masked"]

NotifyEvent = Literal["permission", "turn_done", "session_failed"]
NotifyFormat = Literal["json", "ntfy", "slack"]
EVENTS: tuple[NotifyEvent, ...] = ("permission", "turn_done", "session_failed")

_Seconds = Annotated[float, Meta(ge=0)]


class NotifyTarget(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A ``[[notify]]`` table: one endpoint that is posted the chosen events."""

    url: str  # https, or http to a loopback host (127.0.0.0/8, ::1, localhost)
    events: list[NotifyEvent] = msgspec.field(default_factory=lambda: list(EVENTS))
    min_turn_s: _Seconds = 0.0  # turn_done only for turns that took at least this many seconds
    headers: dict[str, str] = {}
    format: NotifyFormat = "json"

    def __post_init__(self) -> None:
        check_url(self.url)
        for name, value in self.headers.items():
            if not _HEADER_NAME.match(name) or "\r" in value or "\n" in value:
                raise ConfigInvalid(f"notify header {name!r} is not a valid HTTP header "
                                    "(a token for a name, a value on one line)")


def check_url(url: str) -> None:
    """Raise ``ConfigInvalid`` unless ``url`` is ``https://HOST…`` or ``http://LOOPBACK…``."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number
    except ValueError as exc:
        raise ConfigInvalid(f"notify url {masked(url)!r} is not a URL: {exc}") from None
    host = parts.hostname or ""
    if not host:
        raise ConfigInvalid(f"notify url {masked(url)!r} names no host")
    if parts.scheme == "https" or (parts.scheme == "http" and _loopback(host)):
        return
    raise ConfigInvalid(f"notify url {masked(url)!r} must be https, or http to a loopback host "
                        "(127.0.0.1, ::1, localhost)", data={"url": masked(url)})


def masked(url: str) -> str:
    """``url`` with its userinfo's password and every query value shown as ``***``."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "***"
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, _, hostport = netloc.rpartition("@")
        user = userinfo.partition(":")[0]
        netloc = f"{user}:***@{hostport}" if ":" in userinfo else f"***@{hostport}"
    query = "&".join(f"{item.partition('=')[0]}=***" if "=" in item else item
                     for item in parts.query.split("&")) if parts.query else ""
    path = "/".join("***" if _TOKEN.match(segment) and _DIGIT.search(segment) else segment
                    for segment in parts.path.split("/"))
    return urlunsplit((parts.scheme, netloc, path, query, ""))


_HEADER_NAME = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
_TOKEN = re.compile(r"^[A-Za-z0-9_-]{16,}$")
_DIGIT = re.compile(r"[0-9]")


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
