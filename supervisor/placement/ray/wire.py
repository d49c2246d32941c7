"""The frames between the daemon and its Ray gateway: msgspec Structs, length-prefixed msgpack.

Pure data (no Ray, no Trio): the daemon's client (``client``) and the gateway (``gateway``) both
import it. Every frame about a child carries ``(session_id, epoch)``; an epoch is one incarnation
of a session's child, so a frame of an epoch the daemon no longer runs is recognised and dropped.

Daemon → gateway: ``Spawn`` (answered by ``Spawned`` or ``SpawnRefused`` with the same ``id``),
``Send``, ``Close``, ``Credit``, ``Nodes`` (answered by ``NodeList``), ``Reconcile`` (answered by
``Reconciled``), ``StopAgents`` (answered by ``Reconciled``). Gateway → daemon: ``Output`` (a
batch of a child's raw stdout bytes, never parsed on the way), ``Exited`` (after the last
``Output`` of that epoch; ``reason`` ``lost`` when its agent or node was lost).

Flow control: the gateway relays a child's ``Output`` only while it holds credit for it, and it
starts with ``OUTPUT_WINDOW`` bytes; the daemon gives back, with ``Credit``, the bytes its
session has taken. So the daemon never holds more than the window and one batch of a child's
output that its session has not read; past that the gateway stops pulling the agent's stream,
the agent's buffer fills, the agent stops reading the child's stdout and the child blocks on its
pipe, as a local child whose session does not read.
"""

from __future__ import annotations

from typing import Literal

import msgspec

__all__ = [
    "OUTPUT_WINDOW",
    "Close",
    "Credit",
    "DaemonFrame",
    "Exited",
    "GatewayFrame",
    "Node",
    "NodeList",
    "Nodes",
    "Output",
    "Reconcile",
    "Reconciled",
    "Send",
    "Spawn",
    "SpawnRefused",
    "Spawned",
    "StopAgents",
    "decode_daemon_frame",
    "decode_gateway_frame",
    "encode",
]


OUTPUT_WINDOW = 4 * 1024 * 1024
"""Bytes of one child's output the gateway may relay beyond what the daemon gave back."""


class _Frame(msgspec.Struct, tag_field="type", kw_only=True, frozen=True, omit_defaults=True):
    pass


class Spawn(_Frame, tag="spawn", frozen=True):
    """Start epoch ``epoch`` of ``session_id``'s child on ``node`` (a node id; ``""``: any)."""

    id: int
    session_id: str
    epoch: int
    argv: list[str]
    env: dict[str, str | None] = {}
    cwd: str | None = None
    shutdown: float = 5.0
    kind: str = "harness"
    node: str = ""
    secrets: list[str] = []
    """Values masked as ``***`` in the stderr lines the agent keeps and relays."""
    needs: list[str] = []
    """Programs besides ``argv[0]`` that must be found on the node (else ``binary_missing``)."""


class Spawned(_Frame, tag="spawned", frozen=True):
    """The child of ``Spawn`` ``id`` runs: where, and its identity on that node."""

    id: int
    node_id: str
    node_ip: str
    agent_pid: int
    pid: int
    create_time: float
    start_ticks: int | None = None
    boot_id: str = ""


class SpawnRefused(_Frame, tag="spawn_refused", frozen=True):
    """The child of ``Spawn`` ``id`` did not start: a stable ``code`` and a one-line message."""

    id: int
    code: str
    message: str


class Send(_Frame, tag="send", frozen=True):
    """Bytes for the child's stdin, as is."""

    session_id: str
    epoch: int
    data: bytes


class Close(_Frame, tag="close", frozen=True):
    """Close the child (stdin, then SIGTERM/SIGKILL within its shutdown; ``brutal``: SIGKILL)."""

    session_id: str
    epoch: int
    brutal: bool = False


class Credit(_Frame, tag="credit", frozen=True):
    """The daemon's session took ``size`` more bytes of the child's output: relay that many more."""

    session_id: str
    epoch: int
    size: int


class Nodes(_Frame, tag="nodes", frozen=True):
    """Ask for the cluster's nodes (answered by ``NodeList``)."""

    id: int


class Node(msgspec.Struct, kw_only=True, frozen=True, omit_defaults=True):
    """One node as the gateway sees it: alive, what it offers, its agent and its children."""

    node_id: str
    node_ip: str
    alive: bool
    cpus: float = 0.0
    resources: dict[str, float] = {}
    agent_pid: int | None = None
    children: list[tuple[str, int]] = []


class NodeList(_Frame, tag="node_list", frozen=True):
    id: int
    address: str
    nodes: list[Node]


class Reconcile(_Frame, tag="reconcile", frozen=True):
    """Kill every child of every live agent whose ``(session_id, epoch)`` is not in ``keep``."""

    id: int
    keep: list[tuple[str, int]] = []


class StopAgents(_Frame, tag="stop_agents", frozen=True):
    """Kill every child and end every agent (``corral stop``)."""

    id: int


class Reconciled(_Frame, tag="reconciled", frozen=True):
    """The ``(node_id, session_id, epoch, pid)`` of each child killed."""

    id: int
    killed: list[tuple[str, str, int, int]] = []


class Output(_Frame, tag="output", frozen=True):
    """A batch of the child's stdout, raw."""

    session_id: str
    epoch: int
    data: bytes


class Stderr(_Frame, tag="stderr", frozen=True):
    """Lines the child wrote to its stderr (masked with ``Spawn.secrets`` on the node)."""

    session_id: str
    epoch: int
    lines: list[str]


class Exited(_Frame, tag="exited", frozen=True):
    """The child's end; its last ``Output`` came before."""

    session_id: str
    epoch: int
    reason: Literal["exited", "crashed", "killed", "lost"]
    exit_code: int | None = None
    signal: str | None = None


DaemonFrame = Spawn | Send | Close | Credit | Nodes | Reconcile | StopAgents
GatewayFrame = Spawned | SpawnRefused | NodeList | Reconciled | Output | Stderr | Exited

_encoder = msgspec.msgpack.Encoder()
_daemon_decoder = msgspec.msgpack.Decoder(DaemonFrame)
_gateway_decoder = msgspec.msgpack.Decoder(GatewayFrame)


def encode(frame: _Frame) -> bytes:
    """The frame's msgpack payload (the caller adds the length prefix)."""
    return _encoder.encode(frame)


def decode_daemon_frame(data: bytes) -> DaemonFrame:
    return _daemon_decoder.decode(data)


def decode_gateway_frame(data: bytes) -> GatewayFrame:
    return _gateway_decoder.decode(data)
