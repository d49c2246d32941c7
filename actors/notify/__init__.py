"""Notifications: ``[[notify]]`` webhooks posted a session's permission requests, finished turns
and failures. ``config`` holds the tables (and their URL rule), ``compose`` what a notification
says in each format (pure), ``delivery`` the notifier actor and its HTTP post, ``cli`` the
``corral notify test`` command.

The notifier and the CLI (trio, ssl, the h11 client) are imported on first use, so a daemon
without ``[[notify]]`` loads only the config (``supervisor.lazy``).
"""

import typing

from supervisor.lazy import lazy_exports as _lazy_exports

from .config import NotifyTarget as NotifyTarget
from .config import check_url as check_url
from .config import masked as masked

if typing.TYPE_CHECKING:
    from .compose import Notice as Notice
    from .compose import Watch as Watch
    from .compose import render as render
    from .delivery import Notifier as Notifier
    from .delivery import NotifierStats as NotifierStats
else:
    __getattr__, __dir__ = _lazy_exports(__name__, {
        "Notice": "actors.notify.compose",
        "Watch": "actors.notify.compose",
        "render": "actors.notify.compose",
        "Notifier": "actors.notify.delivery",
        "NotifierStats": "actors.notify.delivery",
    })
