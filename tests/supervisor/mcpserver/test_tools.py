"""The tools' declarations and argument checks (``supervisor.mcpserver.tools``), without a daemon."""

from __future__ import annotations

import json
from contextlib import AbstractAsyncContextManager
from typing import Any

import pytest

from protocol.errors import BadRequest
from protocol.events import Decision, Permission
from supervisor.client import Client
from supervisor.mcpserver.tools import TOOLS, Tools


class _Caller:
    name = "test"

    async def progress(self, done: float, message: str) -> None:
        raise AssertionError("no progress without a call")

    async def ask(self, permission: Permission, session_id: str) -> Decision | None:
        raise AssertionError("no question without a call")


def _never(name: str) -> AbstractAsyncContextManager[Client]:
    raise AssertionError("arguments are checked before the daemon is reached")


def test_every_input_schema_is_a_self_contained_object() -> None:
    for spec in TOOLS:
        schema = spec.input_schema()
        assert schema["type"] == "object" and "$ref" not in json.dumps(schema), spec.name
        assert set(schema["required"]) <= set(schema["properties"]), spec.name
        assert all("description" in prop for prop in schema["properties"].values()), spec.name
    prompt = next(s for s in TOOLS if s.name == "corral_prompt").input_schema()
    assert prompt["required"] == ["session_id", "text"] and prompt["properties"]["wait_s"]["default"] == 600


@pytest.mark.parametrize(("tool", "arguments"), [
    ("corral_prompt", {"session_id": "s-1"}),
    ("corral_prompt", {"session_id": "s-1", "text": "x", "wait_s": -1}),
    ("corral_read_events", {"session_id": "s-1", "limit": 5000}),
    ("corral_decide", {"session_id": "s-1", "permission_id": "p", "decision": "maybe"}),
    ("corral_create_session", {"harness": "fake", "cwd": "/", "permission_mode": "yolo"}),
    ("corral_nothing", {}),
])
async def test_bad_arguments_are_bad_requests_before_the_daemon_is_reached(tool: str,
                                                                          arguments: dict[str, Any]) -> None:
    with pytest.raises(BadRequest):
        await Tools(_never).call(tool, arguments, _Caller())
