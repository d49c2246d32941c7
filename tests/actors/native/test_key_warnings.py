"""``session.create``'s ``native.auth.missing_key`` warnings, from the resolved provider."""

from __future__ import annotations

import msgspec
import pytest

from actors.native.daemon.config import decode_providers, key_warnings
from actors.native.providers import resolve
from protocol.messages import SessionResult, SessionWarning
from protocol.models import SessionInfo


def _warnings(spec: str, tables: dict[str, dict[str, str]] | None = None,
              base_url: str | None = None, env: dict[str, str] | None = None) -> list[SessionWarning]:
    providers, problems = decode_providers(tables or {})
    assert problems == []
    return key_warnings(resolve(spec, providers=providers, session_base_url=base_url,
                                daemon_env=env or {}))


@pytest.mark.parametrize(("spec", "variable"), [
    ("openai/gpt-5-mini", "OPENAI_API_KEY"), ("openai-chat/m", "OPENAI_API_KEY"),
    ("anthropic/claude-sonnet-4", "ANTHROPIC_API_KEY"), ("gemini/gemini-2.5-flash", "GEMINI_API_KEY")])
def test_a_builtin_provider_without_its_key_is_warned_of(spec: str, variable: str) -> None:
    [warning] = _warnings(spec)
    assert (warning.code, warning.variable) == ("native.auth.missing_key", variable)
    assert warning.message.startswith(f"{variable} is not set") and "will fail" in warning.message
    assert _warnings(spec, env={variable: "k-1"}) == []


def test_a_server_of_the_users_is_warned_of_only_when_it_names_a_variable() -> None:
    [warning] = _warnings("openai/m", base_url="http://127.0.0.1:9/v1")
    assert warning.variable == "OPENAI_API_KEY" and "go without an API key" in warning.message
    local = {"local": {"kind": "openai-chat", "base_url": "http://127.0.0.1:9/v1"}}
    assert _warnings("local/qwen3", local) == []  # a local server: no key by design
    keyed = {"local": {**local["local"], "api_key_env": "LOCAL_KEY"}}
    assert [w.variable for w in _warnings("local/qwen3", keyed)] == ["LOCAL_KEY"]


def test_a_named_provider_at_a_public_endpoint_without_a_variable_is_warned_of() -> None:
    [warning] = _warnings("corp/gpt-5", {"corp": {"kind": "openai"}})
    assert warning.variable is None and "[providers.corp] names no api_key_env" in warning.message


def test_warnings_are_absent_from_the_wire_when_there_are_none() -> None:
    info = SessionInfo(id="s-1", name=None, harness="native", cwd="/", model=None, state="idle",
                       created_at="2026-01-01T00:00:00.000Z", last_seq=0, restarts=0, pid=None)
    plain = msgspec.json.encode(SessionResult(session=info))
    assert b"warnings" not in plain  # old clients see the same bytes
    warned = SessionResult(session=info, warnings=[SessionWarning(code="c", message="m")])
    assert msgspec.json.decode(msgspec.json.encode(warned), type=SessionResult) == warned
    assert msgspec.json.decode(plain, type=SessionResult).warnings == []
