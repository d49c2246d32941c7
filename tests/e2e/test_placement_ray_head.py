"""``corral stop`` while the Ray head is down, on a loopback cluster of the test's own (the head's
GCS is killed, so the shared cluster would not survive it).

With the GCS gone the gateway's driver gives up (after ``gcs_rpc_server_reconnect_timeout_s``,
shortened here), its sessions' children end as ``lost`` and each restart's spawn waits for a
gateway that cannot join the cluster. A stop must cancel that wait: the daemon ends within its
shutdown bound, not after the spawn's own timeout (90 s).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.raycluster import loopback_cluster

from .daemonproc import raw_client, start_daemon, stop_daemon, wait_gone

pytestmark = [pytest.mark.slow, pytest.mark.ray]

SHUTDOWN_TIMEOUT = 30.0
"""``[daemon] shutdown_timeout``'s default: how long a whole graceful stop may take."""


async def test_stop_during_a_head_outage_ends_within_the_shutdown_bound(tmp_path: Path) -> None:
    with loopback_cluster(nodes=1, env={"RAY_gcs_rpc_server_reconnect_timeout_s": "10"}) as cluster:
        config = tmp_path / "corral.toml"
        config.write_text(f'[placement]\nbackend = "ray"\naddress = "{cluster.address}"\n'
                          'heartbeat_timeout = 3.0\n'
                          # The restart starts at once: the spawn waits as soon as the child is lost.
                          '[sessions]\nbackoff_initial = 0.0\nbackoff_jitter = 0.0\n')
        daemon = await start_daemon(tmp_path / "state", config=str(config), timeout=180)
        try:
            async with raw_client(daemon) as client:
                sid = (await client.ok("session.create", harness="fake", cwd=str(tmp_path)))["session"]["id"]
                await client.ok("session.subscribe", session_id=sid)
                await client.events_until(sid, lambda f: f["event"]["type"] == "init", timeout=60)
                child = (await client.ok("session.get", session_id=sid))["session"]["pid"]
                cluster.cluster.head_node.kill_gcs_server()
                frames = await client.events_until(sid, lambda f: f["event"]["type"] == "exit", timeout=120)
                assert frames[-1]["event"]["reason"] == "lost"
                got = (await client.ok("session.get", session_id=sid))["session"]
                assert got["state"] == "restarting"  # its spawn waits for a gateway
            assert await stop_daemon(daemon, timeout=SHUTDOWN_TIMEOUT) == 0  # raises past it
        finally:
            if daemon.process.returncode is None:
                await stop_daemon(daemon, timeout=120)
        assert wait_gone([child], timeout=10) == []
