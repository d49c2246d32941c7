"""``corral notify test``: one test notification to every ``[[notify]]`` URL, from this process.

It needs no daemon (it reads the configuration file and posts itself), so it works with a daemon
running or not; the test notice links to the page of the daemon that runs on the state directory,
else to the configured port. One line per endpoint, its URL masked (``masked``): the answer's
status, or why there was none. One attempt each, bounded by the notifier's timeout. Exit
status 1 when any endpoint failed, when a ``[[notify]]`` table was refused, or when there is none.
"""

from __future__ import annotations

from collections.abc import Sequence
from http import HTTPStatus
from typing import TextIO
from urllib.parse import urlsplit

import trio

from actors.notify.compose import trial_notice
from actors.notify.config import NotifyTarget, masked
from actors.notify.delivery import Notifier

__all__ = ["page_url", "run"]


def run(targets: Sequence[NotifyTarget], refused: Sequence[str], page: str, *,
        out: TextIO, err: TextIO, timeout: float = 10.0) -> int:
    """Post the test notice to each target; print one line each; the exit status."""
    for warning in refused:
        print(f"corral: config: {warning}", file=err)
    if not targets:
        print("corral: no [[notify]] table to test (see docs/notifications.md)", file=err)
        return 1
    answers = trio.run(_post_all, list(targets), page, timeout)
    for target, answer in zip(targets, answers, strict=True):
        print(f"{masked(target.url)}  {target.format}  {answer}", file=out)
    failed = any(not answer.startswith("2") for answer in answers)
    return 1 if failed or refused else 0


def page_url(daemon_url: str | None, port: int) -> str:
    """The daemon's page: on the running daemon's port (``daemon.json``'s URL), else ``port``."""
    if daemon_url:
        found = urlsplit(daemon_url).port
        port = found if found is not None else port
    return f"http://127.0.0.1:{port}/"


async def _post_all(targets: list[NotifyTarget], page: str, timeout: float) -> list[str]:
    notifier = Notifier(targets, lambda _: page, timeout=timeout, retries=0)
    answers = [""] * len(targets)

    async def one(index: int) -> None:
        try:
            status = await notifier.post_once(targets[index], trial_notice(page))
        except trio.TooSlowError:
            answers[index] = f"failed: no answer in {timeout:g} s"
        except Exception as exc:  # noqa: BLE001 - every failure is reported as that endpoint's line
            answers[index] = f"failed: {' '.join(str(exc).split()) or type(exc).__name__}"
        else:
            phrase = HTTPStatus(status).phrase if status in HTTPStatus._value2member_map_ else ""
            answers[index] = f"{status} {phrase}".strip()

    async with trio.open_nursery() as nursery:
        for index in range(len(targets)):
            nursery.start_soon(one, index)
    return answers
