"""The policed transport: ambient settings never reach the wire, responses are bounded."""

from __future__ import annotations

import gzip
from collections.abc import Iterator
from typing import Any

import pytest

from actors.native.models import ModelError, ProviderKind
from actors.native.models._assembly import parse_arguments
from actors.native.models._wire import _Meter, outgoing_headers
from tests.actors.native.modelkit import (
    CREDENTIAL_HEADERS, KINDS, config_for, one_call, request, run, texts, user,
)
from tests.fakes.model_script import Turn, fail, say
from tests.fakes.model_thread import ServerThread


@pytest.fixture
def srv() -> Iterator[ServerThread]:
    with ServerThread() as thread:
        yield thread


def test_outgoing_headers_keep_only_allowed_and_our_credential() -> None:
    sent = [("Authorization", "Bearer sk-ours"), ("OpenAI-Organization", "org-ambient"),
            ("X-Custom", "from-env"), ("content-type", "application/json"),
            ("x-stainless-retry-count", "0"), ("anthropic-version", "2023-06-01"),
            ("Accept-Encoding", "gzip, br"), ("x-api-key", "sk-admin-ambient")]
    assert outgoing_headers(sent, "sk-ours") == [
        ("Authorization", "Bearer sk-ours"), ("content-type", "application/json"),
        ("x-stainless-retry-count", "0"), ("anthropic-version", "2023-06-01"),
        ("accept-encoding", "identity")]
    assert [n for n, _ in outgoing_headers(sent, "")] == [
        "content-type", "x-stainless-retry-count", "anthropic-version", "accept-encoding"]


def test_meter_counts_bytes_after_decompression() -> None:
    body = gzip.compress(b"x" * 4000)
    meter = _Meter("gzip", 5000)
    assert meter.feed(body[:20]) + meter.feed(body[20:]) == b"x" * 4000
    small = _Meter("gzip", 1000)
    with pytest.raises(ModelError) as caught:
        small.feed(body)
    assert caught.value.code == "native.protocol.too_large"
    with pytest.raises(ModelError) as refused:
        _Meter("br", 1000)
    assert refused.value.code == "native.protocol.malformed"


def test_tool_arguments_must_be_a_json_object() -> None:
    assert parse_arguments("", "write") == {}
    assert parse_arguments('{"path": "a"}', "write") == {"path": "a"}
    for bad in ('{"path": ', "[1, 2]", "null", "3"):
        with pytest.raises(ModelError) as caught:
            parse_arguments(bad, "write")
        assert caught.value.code == "native.protocol.malformed"


@pytest.mark.parametrize("kind", KINDS)
def test_response_byte_limit(kind: ProviderKind, srv: ServerThread) -> None:
    srv.server.add(say("y" * 6000, chunk=200))
    with pytest.raises(ModelError) as caught:
        run(lambda: one_call(config_for(kind, srv, max_response_bytes=3000), request(user("hi"))))
    assert caught.value.code == "native.protocol.too_large"
    assert len(srv.server.model_requests()) == 1


AMBIENT = {
    "OPENAI_API_KEY": "sk-ambient-openai", "OPENAI_ADMIN_KEY": "sk-ambient-admin",
    "OPENAI_ORG_ID": "org-ambient", "OPENAI_PROJECT_ID": "proj-ambient",
    "OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "OPENAI_CUSTOM_HEADERS": "X-Ambient: openai",
    "ANTHROPIC_API_KEY": "sk-ant-ambient", "ANTHROPIC_AUTH_TOKEN": "ambient-token",
    "ANTHROPIC_BASE_URL": "http://127.0.0.1:9", "ANTHROPIC_CUSTOM_HEADERS": "X-Ambient: ant",
    "GOOGLE_API_KEY": "AIzaAmbientGoogle0000", "GEMINI_API_KEY": "AIzaAmbientGemini0000",
    "GOOGLE_GENAI_USE_VERTEXAI": "true", "GOOGLE_GEMINI_BASE_URL": "http://127.0.0.1:9",
    "GOOGLE_GENAI_API_VERSION": "v1alpha", "GOOGLE_CLOUD_PROJECT": "ambient-project",
    "HTTP_PROXY": "http://127.0.0.1:9", "HTTPS_PROXY": "http://127.0.0.1:9",
    "ALL_PROXY": "http://127.0.0.1:9", "NO_PROXY": "",
}


@pytest.mark.parametrize("kind", KINDS)
def test_ambient_environment_changes_nothing(kind: ProviderKind, srv: ServerThread,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in AMBIENT.items():
        monkeypatch.setenv(name, value)
    srv.server.add(say("closed config"))
    responses = run(lambda: one_call(config_for(kind, srv, key=""), request(user("hi"))))
    assert "".join(texts(responses)) == "closed config"
    [sent] = srv.server.model_requests()
    assert not set(CREDENTIAL_HEADERS) & set(sent.headers)
    assert not {"openai-organization", "openai-project", "x-ambient"} & set(sent.headers)
    assert "ambient" not in str(sent.headers).lower()
    if kind == "gemini":
        assert sent.path.startswith("/v1beta/")


@pytest.mark.parametrize("kind", ["openai", "openai-chat"])
def test_insufficient_quota_is_not_retried(kind: ProviderKind, srv: ServerThread) -> None:
    srv.server.add(fail(429, code="insufficient_quota", message="You exceeded your quota"))
    with pytest.raises(ModelError) as caught:
        run(lambda: one_call(config_for(kind, srv), request(user("hi"))))
    assert caught.value.code == "native.entitlement.quota"
    assert len(srv.server.model_requests()) == 1


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(("error", "code"), [
    ("overloaded", "native.overloaded.server"), ("rate_limit", "native.limit.rate_limited"),
    ("server_error", "native.overloaded.server_error")])
def test_in_stream_errors_after_output_are_classified_not_retried(
        kind: ProviderKind, error: Any, code: str, srv: ServerThread) -> None:
    srv.server.add(Turn(text="partial", error=error), say("never"))
    with pytest.raises(ModelError) as caught:
        run(lambda: one_call(config_for(kind, srv), request(user("hi"))))
    assert caught.value.code == code
    assert len(srv.server.model_requests()) == 1


@pytest.mark.parametrize("kind", ["openai", "openai-chat", "anthropic"])
def test_in_stream_error_is_retried_when_the_caller_did_not_stream(
        kind: ProviderKind, srv: ServerThread) -> None:
    srv.server.add(Turn(text="lost", error="overloaded"), say("second try"))
    responses = run(lambda: one_call(config_for(kind, srv), request(user("hi")), stream=False))
    assert [p.text for r in responses if r.content for p in r.content.parts or []] == [
        "second try"]
    assert len(srv.server.model_requests()) == 2
