"""A daemon with the default configuration warms up in the background: the native fork server
starts by itself (``--background``) and detection of every harness runs once, as a temporary
child of the root that then ends. (When and at what priority: ``tests/actors/native/test_prewarm.py``
and ``tests/actors/vendors/test_detection.py``; the test daemons elsewhere have both off.)"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import trio

from .daemonproc import RawClient, raw_client, start_daemon, stop_daemon
from .vendor_rig import cmdline

TIMEOUT = 110  # detection (every CLI probed at low priority) on a loaded machine


async def status_until(client: RawClient, check: Any) -> dict[str, Any]:
    while not check(status := await client.ok("daemon.status")):
        await trio.sleep(0.1)
    return status


def forkservers(status: dict[str, Any]) -> list[int]:
    return [c["pid"] for c in status["children"] if c["kind"] == "native-forkserver"]


async def test_a_default_daemon_starts_the_fork_server_and_detection_in_the_background(
        tmp_path: Path) -> None:
    with trio.fail_after(TIMEOUT):
        daemon = await start_daemon(tmp_path / "state", prewarm=True)
        try:
            async with raw_client(daemon) as client:
                first = await client.ok("daemon.status")
                root = first["supervisors"][0]
                assert root["name"] == "daemon"
                status = await status_until(client, forkservers)
                (pid,) = forkservers(status)
                assert "--background" in cmdline(pid)  # no session asked for it
                # the detection child ends once every harness is in the cache
                await status_until(client, lambda s: s["supervisors"][0]["children"]
                                   == root["children"] - 1)
                listed = (await client.ok("harness.list"))["harnesses"]
                assert {d["harness"] for d in listed} >= {"native", "fake", "claude"}
        finally:
            assert await stop_daemon(daemon) == 0
