"""``PROVIDER/NAME`` parsing and the one resolver's precedence (pure: no network, no SDK)."""

from __future__ import annotations

import msgspec
import pytest

from actors.native.daemon.config import decode_providers
from actors.native.models import ProviderConfig
from actors.native.providers import (
    DEFAULT_BASE_URLS, ModelSpecError, ProviderTable, parse_model, resolve,
)
from protocol.native import ProviderSettings


@pytest.mark.parametrize(("spec", "expected"), [
    ("openai/gpt-5-mini", ("openai", "gpt-5-mini")),
    ("local/qwen3:8b", ("local", "qwen3:8b")),
    ("openrouter/meta-llama/llama-4", ("openrouter", "meta-llama/llama-4")),
])
def test_parse_model_splits_at_the_first_slash(spec: str, expected: tuple[str, str]) -> None:
    assert parse_model(spec) == expected


@pytest.mark.parametrize("spec", ["gpt-5", "/gpt-5", "openai/", "", " / "])
def test_a_spec_without_provider_and_name_is_refused(spec: str) -> None:
    with pytest.raises(ModelSpecError) as caught:
        parse_model(spec)
    assert caught.value.code == "native.launch.bad_model"


@pytest.mark.parametrize(("provider", "variable"), [
    ("openai", "OPENAI_API_KEY"), ("openai-chat", "OPENAI_API_KEY"),
    ("anthropic", "ANTHROPIC_API_KEY"), ("gemini", "GEMINI_API_KEY"),
])
def test_builtin_providers_default_url_and_key(provider: str, variable: str) -> None:
    config = resolve(f"{provider}/m", daemon_env={variable: "k-daemon"})
    assert config.kind == provider
    assert config.base_url == DEFAULT_BASE_URLS[config.kind]
    assert config.api_key == "k-daemon"
    assert (config.provider, config.model, config.spec) == (provider, "m", f"{provider}/m")


def test_only_the_named_variable_is_read() -> None:
    env = {"GOOGLE_API_KEY": "google", "OPENAI_API_KEY": "openai"}
    assert resolve("gemini/gemini-2.5-flash", daemon_env=env).api_key == ""


def test_base_url_precedence() -> None:
    tables = {"openai": ProviderTable(base_url="http://table/v1")}
    assert resolve("openai/m", providers=tables).base_url == "http://table/v1"
    assert resolve("openai/m", providers=tables,
                            session_base_url="http://session/v1").base_url == "http://session/v1"
    assert resolve("openai/m").base_url == "https://api.openai.com/v1"


def test_key_precedence_session_env_then_daemon_env() -> None:
    daemon = {"OPENAI_API_KEY": "from-daemon", "MY_KEY": "mine-daemon"}
    assert resolve("openai/m", session_env={"OPENAI_API_KEY": "from-session"},
                            daemon_env=daemon).api_key == "from-session"
    assert resolve("openai/m", session_env={}, daemon_env=daemon).api_key == "from-daemon"
    # Present in the session env, even empty, wins: the session asked for no key.
    assert resolve("openai/m", session_env={"OPENAI_API_KEY": ""},
                            daemon_env=daemon).api_key == ""
    tables = {"openai": ProviderTable(api_key_env="MY_KEY")}
    assert resolve("openai/m", providers=tables, daemon_env=daemon).api_key == "mine-daemon"


def test_named_provider_for_a_compatible_server() -> None:
    tables = {"local": ProviderTable(kind="openai-chat", base_url="http://127.0.0.1:11434/v1",
                                       max_retries=0, timeout=30.0, max_response_bytes=4096)}
    config = resolve("local/qwen3:8b", providers=tables,
                              daemon_env={"OPENAI_API_KEY": "never-sent-to-local"})
    assert config == ProviderSettings(kind="openai-chat", provider="local", model="qwen3:8b",
                                      base_url="http://127.0.0.1:11434/v1", api_key="",
                                      max_retries=0, timeout=30.0, max_response_bytes=4096)
    older = {"old": ProviderTable(kind="openai-chat", max_tokens_field="max_tokens")}
    assert resolve("old/m", providers=older).chat_max_tokens_field == "max_tokens"
    keyed = {"local": ProviderTable(kind="openai-chat", api_key_env="LOCAL_KEY")}
    assert resolve("local/m", providers=keyed,
                            daemon_env={"LOCAL_KEY": "lk"}).api_key == "lk"


def test_unknown_provider_is_refused() -> None:
    with pytest.raises(ModelSpecError) as caught:
        resolve("mystery/m", providers={"local": ProviderTable(kind="openai")})
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
    config = resolve("openai/m", daemon_env={"OPENAI_API_KEY": "sk-secret-value"})
    assert "sk-secret-value" not in repr(config)
    assert "sk-secret-value" not in str(config)
    assert "api_key=''" in repr(resolve("openai/m"))


def test_the_resolver_reads_no_environment_it_is_not_given(monkeypatch: pytest.MonkeyPatch) -> None:
    # The daemon's copy once fell back to os.environ without daemon_env, the worker side's to
    # nothing: the one resolver reads only the environments its caller passes.
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-this-process")
    assert resolve("openai/m").api_key == ""
    assert resolve("openai/m", session_env={}).api_key == ""
    assert resolve("openai/m", daemon_env={"OPENAI_API_KEY": "d"}).api_key == "d"


def test_max_tokens_field_goes_from_the_config_table_to_the_adapter() -> None:
    # The daemon's copy refused the documented max_tokens_field (the whole provider was dropped
    # with a warning) and its settings had no field for it, so the worker always sent
    # max_completion_tokens: from the config file through the start frame to the adapter.
    tables, warnings = decode_providers({"old": {"kind": "openai-chat", "base_url": "http://o/v1",
                                                 "max_tokens_field": "max_tokens"}})
    assert warnings == []
    settings = resolve("old/m", providers=tables)
    assert settings.chat_max_tokens_field == "max_tokens"
    # As the worker converts the start frame's settings for its adapter (worker/assembly.py).
    config = msgspec.convert(msgspec.structs.asdict(settings), ProviderConfig)
    assert config.chat_max_tokens_field == "max_tokens"
    assert resolve("openai-chat/m").chat_max_tokens_field == "max_completion_tokens"


def test_the_settings_and_the_adapter_config_have_the_same_fields() -> None:
    assert ProviderSettings.__struct_fields__ == ProviderConfig.__struct_fields__
