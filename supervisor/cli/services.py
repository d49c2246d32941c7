"""The commands about what the daemon offers: ``harnesses``, ``nodes``, ``lsp ls``,
``mcp ls|restart``, and ``protocol schema`` (the client protocol's JSON Schema, printed without a daemon)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import msgspec
import trio

from protocol.errors import ProtocolError
from protocol.messages import LspList, LspListResult, PlacementStatus
from protocol.models import Detection, McpServerInfo
from protocol.schema import client_protocol_schema

from supervisor.cli.render import harness_rows
from supervisor.cli.tables import table
from supervisor.client import open_client
from supervisor.statedir import resolve_state_dir

__all__ = ["harnesses", "lsp", "mcp", "nodes", "protocol"]


def harnesses(args: argparse.Namespace) -> None:
    async def fetch() -> list[Detection]:
        async with open_client(_state(args)) as client:
            if args.models:
                print("asking each CLI for its models (an ACP agent opens a throwaway session: "
                      "up to 20 s)…", file=sys.stderr)
            return await client.harnesses(models=args.models)

    found = trio.run(fetch)
    if args.json:  # harness.list's own shape: login, and each provider's key variable and has_key
        print(msgspec.json.encode(found).decode())
    else:
        table(harness_rows(found, models=args.models))


def nodes(args: argparse.Namespace) -> None:
    """``corral nodes``: one row per node of the placement backend (``--json``: the result)."""
    async def fetch() -> PlacementStatus:
        async with open_client(_state(args)) as client:
            return await client.placement()

    found = trio.run(fetch)
    if args.json:
        print(msgspec.json.encode(found).decode())
        return
    print(f"placement {found.backend}" + (f" · {found.address}" if found.address else ""))
    if not found.nodes:
        print("no nodes")
        return
    table([["NODE", "IP", "ALIVE", "AGENT", "CHILDREN", "SESSIONS"],
           *([n.node_id, n.node_ip, "yes" if n.alive else "no", str(n.agent_pid or "-"),
              str(n.children), str(n.sessions)] for n in found.nodes)])


def lsp(args: argparse.Namespace) -> None:
    async def fetch() -> LspListResult:
        async with open_client(_state(args)) as client:
            result = await client.request(LspList(id=0))
        if not isinstance(result, LspListResult):
            raise ProtocolError(f"lsp.list answered a {type(result).__name__}")
        return result

    servers = trio.run(fetch).servers
    if args.json:
        print(msgspec.json.encode(servers).decode())
    elif servers:
        table([["SERVER", "STATE", "PID", "RESTARTS", "ROOT"],
                *([s.server, s.state, str(s.pid or "-"), str(s.restarts), s.root] for s in servers)])
    else:
        print("no language servers")


def mcp(args: argparse.Namespace) -> int:
    async def run() -> list[McpServerInfo]:
        async with open_client(_state(args)) as client:
            if args.mcp_command == "restart":
                return [await client.mcp_restart(args.name)]
            return await client.mcp_servers()

    servers = trio.run(run)
    if args.mcp_command == "ls" and args.json:
        print(msgspec.json.encode(servers).decode())
    elif servers:
        rows = [["NAME", "STATE", "PID", "RESTARTS", "TOOLS", "LAST ERROR"]]
        rows += [[s.name, s.state, str(s.pid or "-"), str(s.restarts), str(len(s.tools)),
                  s.last_error or "-"] for s in servers]
        table(rows)
    else:
        print("no MCP servers")
    if args.mcp_command == "restart" and servers[0].state != "running":
        print(f"corral: MCP server {args.name} is {servers[0].state}: {servers[0].last_error or '-'}",
              file=sys.stderr)
        return 1
    return 0


def protocol(args: argparse.Namespace) -> None:
    print(json.dumps(client_protocol_schema(), indent=2))


def _state(args: argparse.Namespace) -> Path:
    return resolve_state_dir(getattr(args, "state_dir", None))
