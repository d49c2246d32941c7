"""The daemon ↔ native worker frames: msgpack round trips, golden bytes, the secret in repr."""

from __future__ import annotations

import msgspec
import pytest

from protocol.events import Permission, Result, Tool, Usage
from protocol.models import Permissions
from protocol.native import (
    Command, Decide, Interrupt, Price, Prompt, ProviderSettings, SetModel, Shutdown, Start, Steer,
    decode_command, decode_event, encode_command, encode_event,
)

SETTINGS = ProviderSettings(kind="anthropic", provider="anthropic", model="claude-sonnet-4",
                            base_url="https://api.anthropic.com", api_key="sk-ant-secret")
COMMANDS: list[Command] = [
    Start(cwd="/w", model="anthropic/claude-sonnet-4", provider=SETTINGS,
          permissions=Permissions(mode="auto_edit", allow_tools=["ba*"]), session_id="n-1",
          store_dir="/s/native", resume_path="/old/n-1.jsonl", instructions="be brief",
          thinking=True, limits={"bash_timeout": 5.0},
          prices={"claude-sonnet-4": Price(input=3, output=15, cache_read=0.3, cache_write=3.75)}),
    Prompt(text="hi"), Steer(text="also"), Interrupt(),
    Decide(permission_id="adk-1", decision="allow_always"),
    SetModel(model="anthropic/claude-sonnet-4", provider=SETTINGS), Shutdown(),
]


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: type(c).__name__)
def test_every_command_round_trips(command: Command) -> None:
    assert decode_command(encode_command(command)) == command


def test_commands_omit_defaults_and_keep_their_tags() -> None:
    assert msgspec.msgpack.decode(encode_command(Interrupt())) == {"type": "interrupt"}
    assert msgspec.msgpack.decode(encode_command(Decide(permission_id="p", decision="deny"))) == {
        "type": "permission_decision", "permission_id": "p", "decision": "deny"}
    start = msgspec.msgpack.decode(encode_command(Start(cwd="/w", model="openai/m",
                                                        provider=SETTINGS, store_dir="/s")))
    assert set(start) == {"type", "cwd", "model", "provider", "store_dir"}


def test_old_bytes_decode_and_unknown_fields_are_ignored() -> None:
    raw = msgspec.msgpack.encode({"type": "prompt", "text": "hi", "added_later": 1})
    assert decode_command(raw) == Prompt(text="hi")
    with pytest.raises(msgspec.DecodeError):
        decode_command(msgspec.msgpack.encode({"type": "no_such_command"}))


def test_events_travel_as_the_normalized_event_model() -> None:
    for event in (Tool(call_id="c", name="bash", kind="exec", phase="completed", output="x"),
                  Permission(permission_id="p", tool="write", kind="edit", input={"path": "a"}),
                  Result(stop_reason="end_turn", usage=Usage(input_tokens=3), cost_usd=0.5)):
        assert decode_event(encode_event(event)) == event


def test_the_api_key_never_shows_in_repr() -> None:
    assert "sk-ant-secret" not in repr(SETTINGS) and "'***'" in repr(SETTINGS)
    assert "sk-ant-secret" not in repr(COMMANDS[0])
    assert SETTINGS.spec == "anthropic/claude-sonnet-4"
