"""The fork server's warm-up turns: every provider's canned wire is one its adapter accepts."""

from __future__ import annotations

import os
import threading

from actors.native.forkserver.warmup import KINDS, warm_up


def test_every_provider_warms_up_and_nothing_is_left_running() -> None:
    threads = set(threading.enumerate())
    fds = set(os.listdir("/proc/self/fd"))
    assert warm_up() == list(KINDS)
    # no thread of its own left (the template may still fork safely); an earlier test's may end
    assert set(threading.enumerate()) - threads == set()
    # no connection, server or event loop left open (an earlier test's garbage may close some)
    assert set(os.listdir("/proc/self/fd")) - fds == set()
