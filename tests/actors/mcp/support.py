"""Helpers for the MCP actor tests: the fake server's definition and a running registry."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import trio

from actors.mcp.actor import ActorDeps, McpActor
from actors.mcp.config import Definition, McpConfig, McpServerConfig, definition_of
from actors.mcp.registry import McpRegistry
from supervisor.ledger import Ledger
from supervisor.tree import Backoff, RestartPolicy

REPO = Path(__file__).resolve().parents[3]
FAKE = [sys.executable, "-m", "tests.fakes.mcp_server"]

# The session restart policy, without jitter so that waits are predictable.
POLICY = RestartPolicy(intensity=3, period=60.0, backoff=Backoff(initial=0.2, jitter=0.0))


def fake_table(marks: Path, *args: str, **keys: object) -> McpServerConfig:
    """A ``[mcp.servers.*]`` table that runs ``tests/fakes/mcp_server.py`` (stdio)."""
    marks.mkdir(parents=True, exist_ok=True)
    return McpServerConfig(command=FAKE[0], args=[*FAKE[1:], *args], cwd=str(REPO),
                           env={"MCP_FAKE_DIR": str(marks)}, **keys)  # type: ignore[arg-type]


def fake_definition(marks: Path, *args: str, name: str = "fake", **keys: object) -> Definition:
    return definition_of(name, fake_table(marks, *args, **keys))


def deps(ledger: Ledger | None = None, **keys: object) -> ActorDeps:
    return ActorDeps(policy=keys.pop("policy", POLICY), ledger=ledger, **keys)  # type: ignore[arg-type]


@asynccontextmanager
async def running_actor(definition: Definition, actor_deps: ActorDeps | None = None) -> AsyncIterator[McpActor]:
    """An actor running in a nursery; leaving the block stops it (and its server)."""
    actor = McpActor(definition.name, definition, actor_deps or deps())
    async with trio.open_nursery() as nursery:
        await nursery.start(actor.run)
        yield actor
        nursery.cancel_scope.cancel()


@asynccontextmanager
async def running_registry(config: McpConfig, actor_deps: ActorDeps | None = None) -> AsyncIterator[McpRegistry]:
    registry = McpRegistry(config, actor_deps or deps())
    async with trio.open_nursery() as nursery:
        await nursery.start(registry.run)
        yield registry
        nursery.cancel_scope.cancel()


def marks(directory: Path, prefix: str) -> list[str]:
    """The marker files the fake server wrote (``start-<pid>``, ``cancelled-<tag>``)."""
    return sorted(p.name for p in directory.iterdir() if p.name.startswith(prefix))


async def wait_for(predicate: object, timeout: float = 10.0) -> None:
    """Wait (real time: a real process is involved) until ``predicate()`` holds."""
    with trio.fail_after(timeout):
        while not predicate():  # type: ignore[operator]
            await trio.sleep(0.02)
