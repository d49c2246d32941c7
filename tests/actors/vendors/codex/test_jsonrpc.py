"""The Codex JSON-RPC envelope: shapes told apart by their members, no "jsonrpc" member."""

from __future__ import annotations

import json

import msgspec
import pytest

from actors.vendors.codex import jsonrpc
from protocol.errors import ProtocolError


def test_shapes() -> None:
    request = jsonrpc.decode_frame(b'{"id": 0, "method": "item/x", "params": {"a": 1}}')
    assert request.is_request and not request.is_notification and not request.is_response
    assert json.loads(bytes(request.params)) == {"a": 1}
    note = jsonrpc.decode_frame(b'{"method": "turn/started", "params": {}, "emittedAtMs": 1}')
    assert note.is_notification and note.id is msgspec.UNSET
    ok = jsonrpc.decode_frame(b'{"id": 3, "result": null}')
    assert ok.is_response and bytes(ok.result) == b"null"
    failed = jsonrpc.decode_frame(b'{"id": "a", "error": {"code": -1, "message": "m"}}')
    assert failed.is_response and isinstance(failed.error, jsonrpc.RpcError)


@pytest.mark.parametrize("line", [b"", b"{", b"3", b"{}", b'{"id": 1}', b'{"id": null, "method": "x"}',
                                  b'{"id": true, "result": 1}'])
def test_malformed_frames(line: bytes) -> None:
    with pytest.raises(ProtocolError):
        jsonrpc.decode_frame(line)


def test_encoders_write_one_line_without_jsonrpc_member() -> None:
    assert jsonrpc.request("m", 1, {"x": 1}) == b'{"method":"m","id":1,"params":{"x":1}}\n'
    assert jsonrpc.notification("initialized") == b'{"method":"initialized"}\n'
    assert jsonrpc.response(0, {"decision": "accept"}) == b'{"id":0,"result":{"decision":"accept"}}\n'
    assert jsonrpc.error_response("r", -32601, "no") == (
        b'{"id":"r","error":{"code":-32601,"message":"no"}}\n')


def test_decode_as_maps_shape_errors_to_protocol_errors() -> None:
    class Thing(msgspec.Struct):
        n: int

    assert jsonrpc.decode_as(msgspec.Raw(b'{"n": 2}'), Thing, "thing") == Thing(n=2)
    with pytest.raises(ProtocolError):
        jsonrpc.decode_as(msgspec.Raw(b'{"n": "x"}'), Thing, "thing")
    with pytest.raises(ProtocolError):
        jsonrpc.decode_as(msgspec.Raw(), Thing, "thing")
