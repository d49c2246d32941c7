"""The shared JSON-RPC core: shapes told apart by members, ids matched, garbage refused."""

from __future__ import annotations

import json

import msgspec
import pytest

from protocol import jsonrpc
from protocol.errors import ProtocolError
from protocol.jsonrpc import Endpoint, ErrorResponse, Notification, Request, Response, RpcError


def test_requests_are_numbered_and_carry_the_version() -> None:
    ep = Endpoint()
    first, data = ep.request("initialize", {"rootUri": "file:///w"})
    second, _ = ep.request("shutdown")
    assert (first, second) == (1, 2)
    assert json.loads(data) == {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                                "params": {"rootUri": "file:///w"}}
    assert ep.pending == 2


def test_absent_params_are_left_out_but_null_params_are_sent() -> None:
    ep = Endpoint()
    assert json.loads(ep.notify("exit")) == {"jsonrpc": "2.0", "method": "exit"}
    assert json.loads(ep.notify("x", None)) == {"jsonrpc": "2.0", "method": "x", "params": None}


def test_codex_style_leaves_the_version_out() -> None:
    ep = Endpoint(version=None)
    _, data = ep.request("thread/start", {})
    assert "jsonrpc" not in json.loads(data)


def test_answers_to_the_peer() -> None:
    ep = Endpoint()
    assert json.loads(ep.respond("a", None)) == {"jsonrpc": "2.0", "id": "a", "result": None}
    assert json.loads(ep.respond_error(None, jsonrpc.PARSE_ERROR, "bad")) == {
        "jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "bad"}}


def test_a_response_names_the_method_it_answers_and_is_consumed() -> None:
    ep = Endpoint()
    rid, _ = ep.request("textDocument/diagnostic", {})
    got = ep.receive(b'{"jsonrpc":"2.0","id":1,"result":{"kind":"full","items":[]}}')
    assert isinstance(got, Response) and got.id == rid and got.method == "textDocument/diagnostic"
    assert json.loads(bytes(got.result)) == {"kind": "full", "items": []}
    assert ep.pending == 0
    with pytest.raises(ProtocolError, match="unknown request id"):
        ep.receive(b'{"jsonrpc":"2.0","id":1,"result":null}')


def test_a_null_result_is_a_result() -> None:
    ep = Endpoint()
    ep.request("shutdown")
    got = ep.receive(b'{"jsonrpc":"2.0","id":1,"result":null}')
    assert isinstance(got, Response) and bytes(got.result) == b"null"


def test_an_error_response_keeps_its_error_and_method() -> None:
    ep = Endpoint()
    ep.request("textDocument/diagnostic")
    got = ep.receive(b'{"jsonrpc":"2.0","id":1,"error":{"code":-32801,"message":"modified"}}')
    assert got == ErrorResponse(id=1, error=RpcError(code=-32801, message="modified"),
                                method="textDocument/diagnostic")


def test_a_late_answer_to_a_forgotten_request_is_dropped() -> None:
    ep = Endpoint()
    rid, _ = ep.request("$/ping")
    ep.forget(rid)
    assert ep.pending == 0
    assert ep.receive(b'{"jsonrpc":"2.0","id":1,"result":null}') is None
    with pytest.raises(ProtocolError):  # only once: after that it is an unknown id again
        ep.receive(b'{"jsonrpc":"2.0","id":1,"result":null}')


def test_missing_id_is_a_notification_and_string_ids_are_requests() -> None:
    assert jsonrpc.decode(b'{"jsonrpc":"2.0","method":"window/logMessage","params":{"type":3}}') \
        == Notification(method="window/logMessage", params=msgspec.Raw(b'{"type":3}'))
    got = jsonrpc.decode(b'{"jsonrpc":"2.0","id":"x1","method":"workspace/configuration"}')
    assert isinstance(got, Request) and got.id == "x1" and len(got.params) == 0


def test_unknown_members_are_ignored() -> None:
    got = jsonrpc.decode(b'{"jsonrpc":"2.0","method":"m","extra":[1,2],"params":[]}')
    assert isinstance(got, Notification)


@pytest.mark.parametrize("payload", [
    b"", b"not json", b"[]", b"[{\"jsonrpc\":\"2.0\",\"method\":\"m\"}]", b"42", b"{}",
    b'{"jsonrpc":"1.0","method":"m"}', b'{"jsonrpc":"2.0","id":null,"method":"m"}',
    b'{"jsonrpc":"2.0","id":1}', b'{"jsonrpc":"2.0","id":null,"result":1}',
    b'{"jsonrpc":"2.0","id":true,"method":"m"}', b'{"jsonrpc":"2.0","method":7}',
    b'{"jsonrpc":"2.0","id":1,"error":{"message":"no code"}}', b"\xff\xfe",
])
def test_garbage_is_a_protocol_error(payload: bytes) -> None:
    with pytest.raises(ProtocolError):
        jsonrpc.decode(payload)


def test_deep_nesting_is_a_protocol_error_not_a_recursion_error() -> None:
    deep = b"[" * 5000 + b"]" * 5000
    with pytest.raises(ProtocolError):
        jsonrpc.decode(b'{"jsonrpc":"2.0","method":"m","params":' + deep + b"}")
    with pytest.raises(ProtocolError, match="params of m"):
        jsonrpc.decode_as(msgspec.Raw(deep), list[object], "params of m")


class _Params(msgspec.Struct, rename="camel"):
    root_uri: str


def test_decode_as_checks_the_type_and_reads_absent_as_null() -> None:
    assert jsonrpc.decode_as(msgspec.Raw(b'{"rootUri":"file:///"}'), _Params, "p") == _Params("file:///")
    assert jsonrpc.decode_as(msgspec.Raw(), type(None), "p") is None
    with pytest.raises(ProtocolError, match=r"\$\.rootUri"):
        jsonrpc.decode_as(msgspec.Raw(b'{"rootUri":1}'), _Params, "p")


def test_an_empty_method_is_our_bug() -> None:
    with pytest.raises(ValueError):
        Endpoint().notify("")
