"""Every undecodable frame is a typed ``FrameError``, whatever made it undecodable."""

from __future__ import annotations

import json

import msgspec
import pytest

from protocol import codec
from protocol.errors import ErrorCode
from protocol.messages import Hello

DEEP = "[" * 5000 + "]" * 5000


@pytest.mark.parametrize(
    "frame",
    [
        '{"type": "session.get", "id": 1, "session_id": %s}' % DEEP,
        '{"type": "session.create", "id": 2, "harness": "h", "cwd": "/", "options": {"a": %s}}' % DEEP,
        '{"type": "daemon.status", "id": 3, "unknown": %s}' % DEEP,
        '{"type": %s, "id": 4}' % DEEP,
        '{"id": %s}' % DEEP,
        '{"type": "session.get", "id": 5, "session_id": "s", "x": {"y": %s}}' % DEEP,
        '{"a": %s}' % DEEP.replace("[", '{"a":[').replace("]", "]}"),
    ],
    ids=["field", "options", "unknown-field", "type", "id", "nested-unknown", "objects"],
)
def test_deep_nesting_anywhere_is_bad_request(frame: str) -> None:
    # The decoder gives up before it has read the id: the error's id is null (unreadable).
    with pytest.raises(codec.FrameError) as info:
        codec.decode_request(frame)
    assert info.value.error.code is ErrorCode.BAD_REQUEST
    assert info.value.id is None
    assert "nested too deeply" in info.value.error.message


def test_a_bare_deep_array_is_bad_request() -> None:
    with pytest.raises(codec.FrameError) as info:
        codec.decode_request(DEEP)
    assert (info.value.error.code, info.value.id) == (ErrorCode.BAD_REQUEST, None)


@pytest.mark.parametrize(
    "frame",
    [b"\xff\xfe{}", b'{"type": "session.get", "id": 1, "session_id": "\xc3\x28"}', b"\x00",
     b'{"type": "daemon.status", "id": 1}\x00', b'{"type": "session.get", "id": 1e999}',
     b'{"type": "session.create", "id": 1, "harness": "h", "cwd": "/", "options": {"n": 1e999}}'],
    ids=["utf8-start", "utf8-in-string", "nul", "trailing-nul", "huge-id", "huge-option"],
)
def test_garbage_bytes_and_numbers_out_of_range_are_bad_request(frame: bytes) -> None:
    with pytest.raises(codec.FrameError) as info:
        codec.decode_request(frame)
    assert info.value.error.code is ErrorCode.BAD_REQUEST


def test_big_integers_and_escaped_nul_decode_as_values() -> None:
    request = codec.decode_request(b'{"type": "session.subscribe", "id": 1, "session_id": "a\\u0000b",'
                                   b' "from_seq": 123456789012345678901234567890}')
    assert request == codec.decode_request(codec.encode(request))


@pytest.mark.parametrize(
    ("frame", "code"),
    [
        ({"type": "hello", "protocol": 1}, ErrorCode.UNAUTHORIZED),
        ({"type": "hello", "protocol": 1, "token": None}, ErrorCode.UNAUTHORIZED),
        ({"type": "hello", "protocol": 1, "token": 12}, ErrorCode.UNAUTHORIZED),
        ({"type": "hello", "protocol": 1, "token": {"t": "x"}}, ErrorCode.UNAUTHORIZED),
        ({"type": "hello", "protocol": 99, "token": None}, ErrorCode.UNAUTHORIZED),
        ({"type": "hello", "protocol": 99, "token": "t"}, ErrorCode.UNSUPPORTED_PROTOCOL),
        ({"type": "hello", "protocol": 2, "token": "t", "client": "v2 shape"}, ErrorCode.UNSUPPORTED_PROTOCOL),
        ({"type": "hello", "protocol": "1", "token": "t"}, ErrorCode.BAD_HANDSHAKE),
        ({"type": "hello", "protocol": True, "token": "t"}, ErrorCode.BAD_HANDSHAKE),
        ({"type": "hello", "protocol": 1, "token": "t", "client": 5}, ErrorCode.BAD_HANDSHAKE),
        ({"type": "daemon.status", "id": 1}, ErrorCode.BAD_HANDSHAKE),
        ({"token": "t", "protocol": 1}, ErrorCode.BAD_HANDSHAKE),
        ([1, 2], ErrorCode.BAD_HANDSHAKE),
    ],
)
def test_handshake_failures_have_the_protocols_codes(frame: object, code: ErrorCode) -> None:
    with pytest.raises(codec.FrameError) as info:
        codec.decode_hello(json.dumps(frame))
    assert info.value.error.code is code
    assert info.value.id is None


@pytest.mark.parametrize(
    "frame",
    ['{"type": "hello", "protocol": 1, "token": "t", "extra": %s}' % DEEP,
     '{"type": "hello", "protocol": 1, "token": %s}' % DEEP,
     '{"type": "hello", "protocol": 1, "token": "t", "client": {"name": "n", "x": %s}}' % DEEP,
     "\xff", "not json"],
)
def test_an_unreadable_first_frame_is_bad_handshake(frame: str) -> None:
    with pytest.raises(codec.FrameError) as info:
        codec.decode_hello(frame)
    assert info.value.error.code is ErrorCode.BAD_HANDSHAKE


def test_a_good_hello_decodes() -> None:
    assert codec.decode_hello('{"type": "hello", "protocol": 1, "token": "t"}') == Hello(protocol=1, token="t")


@pytest.mark.parametrize(
    ("frame", "request_id"),
    [(b'{"id": 7, "type": "x"}', 7), (b'{"id": true}', None), (b"\xff", None), (DEEP.encode(), None)],
)
def test_peek_id_reads_what_it_can_and_never_raises(frame: bytes, request_id: int | None) -> None:
    assert codec.peek_id(frame) == request_id


def test_a_deep_server_frame_is_a_decode_error_for_clients() -> None:
    with pytest.raises(msgspec.DecodeError):
        codec.decode_server_frame('{"type": "ok", "id": 1, "result": %s}' % DEEP)
