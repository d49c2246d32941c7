"""One loopback Ray cluster for the whole test session: a zero-CPU head and two one-CPU nodes
(and ``loopback_cluster`` for a test that needs its own).

``ray_cluster`` (session-scoped, in ``tests/conftest.py``) starts ``ray.cluster_utils.Cluster``
with the settings the placement tests need and shuts it down (every Ray process it started) at
the end of the session. Only loopback: ``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0`` binds every port
to 127.0.0.1; ``RAY_AUTH_MODE=disabled`` in tests only (production keeps Ray's token auth); the
health checks are tuned so a killed raylet is declared dead within a few seconds, not sixteen.
The variables stay set for the session, so daemons and gateways the tests start inherit them.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

__all__ = ["RAY_ENV", "RayCluster", "loopback_cluster", "ray_cluster"]

RAY_ENV = {
    "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",
    "RAY_AUTH_MODE": "disabled",
    "RAY_health_check_period_ms": "500",
    "RAY_health_check_timeout_ms": "500",
    "RAY_health_check_failure_threshold": "3",
    "RAY_USAGE_STATS_ENABLED": "0",
}


class RayCluster:
    """The running cluster: its GCS ``address`` and its two worker nodes (``workers``)."""

    def __init__(self, cluster: Any) -> None:
        self.cluster = cluster
        self.address: str = cluster.address
        self.workers: list[Any] = [n for n in cluster.list_all_nodes() if n is not cluster.head_node]

    def add_node(self) -> Any:
        node = self.cluster.add_node(num_cpus=1)
        self.cluster.wait_for_nodes()
        self.workers.append(node)
        return node


@pytest.fixture(scope="session")
def ray_cluster() -> Iterator[RayCluster]:
    with loopback_cluster(nodes=2) as cluster:
        yield cluster


@contextlib.contextmanager
def loopback_cluster(nodes: int, env: dict[str, str] | None = None) -> Iterator[RayCluster]:
    """A loopback cluster of a zero-CPU head and ``nodes`` one-CPU nodes, with ``RAY_ENV`` and
    ``env`` set while it runs (daemons and gateways started meanwhile inherit them). A test
    that breaks its cluster (the head's GCS killed) runs one of its own."""
    pytest.importorskip("ray")
    # The cluster's workers (node agents) and the children they start import corral from this
    # tree, as a daemon started from a source tree does (an install needs nothing of this).
    root = str(Path(__file__).resolve().parents[1])
    env = {**RAY_ENV, **(env or {}),
           "PYTHONPATH": os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)}
    saved = {name: os.environ.get(name) for name in env}
    os.environ.update(env)
    from ray.cluster_utils import Cluster

    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 0, "include_dashboard": False})
    started: list[psutil.Process] = []
    try:
        for _ in range(nodes):
            cluster.add_node(num_cpus=1)
        cluster.wait_for_nodes()
        started = _processes(cluster)  # (a raylet that dies first orphans its agents)
        yield RayCluster(cluster)
    finally:
        cluster.shutdown()
        for proc in started:
            with contextlib.suppress(psutil.Error):
                proc.kill()
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _processes(cluster: Any) -> list[psutil.Process]:
    """Every process of ``cluster``'s nodes (GCS, raylets, ...) and their descendants now."""
    found: list[psutil.Process] = []
    for node in cluster.list_all_nodes():
        for infos in node.all_processes.values():
            for info in infos:
                with contextlib.suppress(psutil.Error):
                    proc = psutil.Process(info.process.pid)
                    found += [proc, *proc.children(recursive=True)]
    return found
