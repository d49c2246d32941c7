"""``PROVIDER/NAME`` parsing and the resolver's precedence (pure: no network, no SDK)."""

from __future__ import annotations

import msgspec
import pytest

from actors.native.models import (
    DEFAULT_BASE_URLS, ModelError, ProviderConfig, ProviderTable, parse_model, resolve_provider,
)


@pytest.mark.parametrize(("spec", "expected"), [
    ("openai/gpt-5-mini", ("openai", "gpt-5-mini")),
    ("local/qwen3:8b", ("local", "qwen3:8b")),
    ("openrouter/meta-llama/llama-4", ("openrouter", "meta-llama/llama-4")),
])
def test_parse_model_splits_at_the_first_slash(spec: str, expected: tuple[str, str]) -> None:
    assert parse_model(spec) == expected


@pytest.mark.parametrize("spec", ["gpt-5", "/gpt-5", "openai/", "", " / "])
def test_a_spec_without_provider_and_name_is_refused(spec: str) -> None:
    with pytest.raises(ModelError) as caught:
        parse_model(spec)
    assert caught.value.code == "native.launch.bad_model"


@pytest.mark.parametrize(("provider", "variable"), [
    ("openai", "OPENAI_API_KEY"), ("openai-chat", "OPENAI_API_KEY"),
    ("anthropic", "ANTHROPIC_API_KEY"), ("gemini", "GEMINI_API_KEY"),
])
def test_builtin_providers_default_url_and_key(provider: str, variable: str) -> None:
    config = resolve_provider(f"{provider}/m", daemon_env={variable: "k-daemon"})
    assert config.kind == provider
    assert config.base_url == DEFAULT_BASE_URLS[config.kind]
    assert config.api_key == "k-daemon"
    assert (config.provider, config.model, config.spec) == (provider, "m", f"{provider}/m")


def test_only_the_named_variable_is_read() -> None:
    env = {"GOOGLE_API_KEY": "google", "OPENAI_API_KEY": "openai"}
    assert resolve_provider("gemini/gemini-2.5-flash", daemon_env=env).api_key == ""


def test_base_url_precedence() -> None:
    tables = {"openai": ProviderTable(base_url="http://table/v1")}
    assert resolve_provider("openai/m", providers=tables).base_url == "http://table/v1"
    assert resolve_provider("openai/m", providers=tables,
                            session_base_url="http://session/v1").base_url == "http://session/v1"
    assert resolve_provider("openai/m").base_url == "https://api.openai.com/v1"


def test_key_precedence_session_env_then_daemon_env() -> None:
    daemon = {"OPENAI_API_KEY": "from-daemon", "MY_KEY": "mine-daemon"}
    assert resolve_provider("openai/m", session_env={"OPENAI_API_KEY": "from-session"},
                            daemon_env=daemon).api_key == "from-session"
    assert resolve_provider("openai/m", session_env={}, daemon_env=daemon).api_key == "from-daemon"
    # Present in the session env, even empty, wins: the session asked for no key.
    assert resolve_provider("openai/m", session_env={"OPENAI_API_KEY": ""},
                            daemon_env=daemon).api_key == ""
    tables = {"openai": ProviderTable(api_key_env="MY_KEY")}
    assert resolve_provider("openai/m", providers=tables, daemon_env=daemon).api_key == "mine-daemon"


def test_named_provider_for_a_compatible_server() -> None:
    tables = {"local": ProviderTable(kind="openai-chat", base_url="http://127.0.0.1:11434/v1",
                                     max_retries=0, timeout=30.0, max_response_bytes=4096)}
    config = resolve_provider("local/qwen3:8b", providers=tables,
                              daemon_env={"OPENAI_API_KEY": "never-sent-to-local"})
    assert config == ProviderConfig(kind="openai-chat", provider="local", model="qwen3:8b",
                                    base_url="http://127.0.0.1:11434/v1", api_key="",
                                    max_retries=0, timeout=30.0, max_response_bytes=4096)
    older = {"old": ProviderTable(kind="openai-chat", max_tokens_field="max_tokens")}
    assert resolve_provider("old/m", providers=older).chat_max_tokens_field == "max_tokens"
    keyed = {"local": ProviderTable(kind="openai-chat", api_key_env="LOCAL_KEY")}
    assert resolve_provider("local/m", providers=keyed,
                            daemon_env={"LOCAL_KEY": "lk"}).api_key == "lk"


def test_unknown_provider_is_refused() -> None:
    with pytest.raises(ModelError) as caught:
        resolve_provider("mystery/m", providers={"local": ProviderTable(kind="openai")})
    assert caught.value.code == "native.launch.unknown_provider"
    assert "local" in caught.value.message


def test_provider_table_is_closed() -> None:
    assert msgspec.convert({"kind": "openai-chat", "base_url": "http://x/v1"},
                           ProviderTable).kind == "openai-chat"
    with pytest.raises(msgspec.ValidationError):
        msgspec.convert({"kind": "openai", "headers": {"x": "y"}}, ProviderTable)
    with pytest.raises(msgspec.ValidationError):
        msgspec.convert({"kind": "azure"}, ProviderTable)


def test_the_key_never_shows_in_repr() -> None:
    config = resolve_provider("openai/m", daemon_env={"OPENAI_API_KEY": "sk-secret-value"})
    assert "sk-secret-value" not in repr(config)
    assert "sk-secret-value" not in str(config)
    assert "api_key=''" in repr(resolve_provider("openai/m"))
