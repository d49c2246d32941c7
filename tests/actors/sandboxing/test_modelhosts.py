"""The model-host allowlist of each harness: the session's endpoints, else the vendor's."""

from __future__ import annotations

from pathlib import Path

from actors.sandboxing.modelhosts import VENDOR_HOSTS, model_hosts
from supervisor.sandbox.allowlist import Allowlist


def test_claude_uses_its_base_url_else_anthropic() -> None:
    env = {"ANTHROPIC_BASE_URL": "http://127.0.0.1:8123/", "HOME": "/nowhere"}
    assert model_hosts("claude", model=None, options={}, env=env) == ["127.0.0.1:8123"]
    assert model_hosts("claude", model=None, options={}, env={"HOME": "/nowhere"}) == ["api.anthropic.com:443"]
    assert model_hosts("claude", model=None, options={},
                       env={"ANTHROPIC_BASE_URL": "https://gateway.example"}) == ["gateway.example:443"]


def test_codex_reads_env_argv_overrides_and_its_config(tmp_path: Path) -> None:
    home = tmp_path / "codex"
    home.mkdir()
    (home / "config.toml").write_text('model_provider = "corp"\n[model_providers.corp]\n'
                                      'base_url = "https://llm.corp.example:8443/v1"\n')
    env = {"CODEX_HOME": str(home)}
    argv = ["codex", "app-server", "-c", 'model_providers.fake.base_url="http://127.0.0.1:9000/v1"',
            "-c", 'model="x"']
    assert model_hosts("codex", model=None, options={}, env=env, argv=argv) == \
        ["127.0.0.1:9000", "llm.corp.example:8443"]
    assert model_hosts("codex", model=None, options={}, env={"OPENAI_BASE_URL": "http://[::1]:7/v1",
                                                             "CODEX_HOME": str(tmp_path / "none")}) == ["[::1]:7"]
    assert model_hosts("codex", model=None, options={}, env={"CODEX_HOME": str(tmp_path / "none")}) == \
        ["api.openai.com:443", "chatgpt.com:443"]


def test_native_uses_the_session_base_url_else_its_providers_endpoint() -> None:
    assert model_hosts("native", model="openai/gpt-5", options={"base_url": "http://127.0.0.1:5/v1"},
                       env={}) == ["127.0.0.1:5"]
    assert model_hosts("native", model="anthropic/claude", options={}, env={}) == ["api.anthropic.com:443"]
    assert model_hosts("native", model="gemini/flash", options={}, env={}) == \
        ["generativelanguage.googleapis.com:443"]


def test_other_harnesses_take_any_base_url_variable_else_their_vendors() -> None:
    env = {"OPENROUTER_BASE_URL": "https://openrouter.ai/api/v1", "PATH": "/bin"}
    assert model_hosts("opencode", model=None, options={}, env=env) == ["openrouter.ai:443"]
    assert model_hosts("gemini", model=None, options={}, env={}) == ["generativelanguage.googleapis.com:443"]
    assert model_hosts("gemini", model=None, options={},
                       env={"GOOGLE_GEMINI_BASE_URL": "http://127.0.0.1:4"}) == ["127.0.0.1:4"]
    assert model_hosts("fake", model=None, options={}, env=env) == []
    assert model_hosts("not-a-harness", model=None, options={}, env={}) == \
        ["api.anthropic.com:443", "api.openai.com:443", "generativelanguage.googleapis.com:443"]


def test_junk_urls_are_ignored_and_every_item_parses() -> None:
    env = {"ANTHROPIC_BASE_URL": "not a url"}
    assert model_hosts("claude", model=None, options={}, env=env) == ["api.anthropic.com:443"]
    for hosts in VENDOR_HOSTS.values():
        assert len(Allowlist.parse(hosts).items) == len(hosts)
