"""Whether a model call can reach its endpoint at all: missing keys, unreachable endpoints.

A provider at its vendor's public endpoint without a key fails ``native.auth.missing_key`` before
anything is sent; a server of the user's gets the request without a key, and its 401 is an auth
error. A name that does not resolve and a refused connection are ``native.network.unreachable``,
not retried. Every endpoint is on 127.0.0.1, a closed port, or a ``.invalid`` name (RFC 6761:
never resolves, so it fails without a network, as in CI's loopback-only namespace).
"""

from __future__ import annotations

import socket
from collections.abc import Iterator

import msgspec
import pytest

from actors.native.providers import DEFAULT_BASE_URLS
from actors.native.models import ModelError, ProviderConfig, ProviderKind
from tests.actors.native.modelkit import (
    CREDENTIAL_HEADERS, KINDS, config_for, one_call, request, run, user,
)
from tests.fakes.model_script import fail, say
from tests.fakes.model_thread import ServerThread

pytestmark = pytest.mark.parametrize("kind", KINDS)

_NEVER_AGAIN = 60.0
"""A first retry this far off would outlast ``run``'s timeout: a call that returns was not retried."""


@pytest.fixture
def srv() -> Iterator[ServerThread]:
    with ServerThread() as thread:
        yield thread


def _at(kind: ProviderKind, srv: ServerThread, host: str) -> ProviderConfig:
    base = f"http://{host}" + ("/v1" if kind.startswith("openai") else "")
    return msgspec.structs.replace(config_for(kind, srv), base_url=base,
                                   retry_backoff=_NEVER_AGAIN)


def test_no_key_for_the_public_endpoint_fails_before_any_request(kind: ProviderKind,
                                                                 srv: ServerThread) -> None:
    config = msgspec.structs.replace(config_for(kind, srv, key="", api_key_env="SOME_KEY_VAR"),
                                     base_url=DEFAULT_BASE_URLS[kind])
    with pytest.raises(ModelError) as caught:
        run(lambda: one_call(config, request(user("hi"))))
    # Sent, it would have been a connection error (CI has no network) or an HTTP 401.
    assert caught.value.code == "native.auth.missing_key" and not caught.value.retryable
    assert "SOME_KEY_VAR" in caught.value.message
    assert caught.value.event().error_class == "auth"


def test_no_key_for_a_server_of_the_users_sends_none_and_a_401_is_auth(kind: ProviderKind,
                                                                       srv: ServerThread) -> None:
    srv.server.add(fail(401, message="a key is required"), say("never"))
    with pytest.raises(ModelError) as caught:
        run(lambda: one_call(config_for(kind, srv, key="", api_key_env="SOME_KEY_VAR"),
                             request(user("hi"))))
    assert caught.value.code == "native.auth.invalid_key"
    [sent] = srv.server.model_requests()
    assert not set(CREDENTIAL_HEADERS) & set(sent.headers)


def test_a_refused_connection_is_unreachable_and_not_retried(kind: ProviderKind,
                                                             srv: ServerThread) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(ModelError) as caught:
        run(lambda: one_call(_at(kind, srv, f"127.0.0.1:{port}"), request(user("hi"))))
    assert caught.value.code == "native.network.unreachable" and not caught.value.retryable
    assert caught.value.event().error_class == "network"


def test_a_name_that_does_not_resolve_is_unreachable_and_not_retried(kind: ProviderKind,
                                                                     srv: ServerThread) -> None:
    with pytest.raises(ModelError) as caught:
        run(lambda: one_call(_at(kind, srv, "model-endpoint.corral.invalid"), request(user("hi"))))
    assert caught.value.code == "native.network.unreachable" and not caught.value.retryable
