"""The sans-IO framers, byte by byte: split, concatenated, oversized, garbage and torn input."""

from __future__ import annotations

import functools
import tracemalloc
from collections.abc import Callable, Iterable

import pytest
from hypothesis import given
from hypothesis import strategies as st

from protocol.errors import FrameTooLarge, ProtocolError
from protocol.framing import (
    DEFAULT_LIMIT,
    ContentLengthFramer,
    Framer,
    FramerFactory,
    LengthPrefixFramer,
    NdjsonFramer,
)

# Checked by mypy when run over this file: every framer satisfies the Protocol via a factory.
_FACTORIES: list[FramerFactory] = [
    NdjsonFramer,
    ContentLengthFramer,
    LengthPrefixFramer,
    functools.partial(NdjsonFramer, limit=10),
]

MakeFramer = Callable[..., Framer]
KINDS: dict[str, MakeFramer] = {
    "ndjson": NdjsonFramer,
    "content_length": ContentLengthFramer,
    "length_prefix": LengthPrefixFramer,
}
PAYLOADS = [b'{"type":"a"}', b"x", b'{"type":"b","text":"caf\xc3\xa9"}', b"0123456789" * 7]


@pytest.fixture(params=sorted(KINDS))
def make(request: pytest.FixtureRequest) -> MakeFramer:
    kind: str = request.param
    return KINDS[kind]


def _wire(framer: Framer, payloads: Iterable[bytes]) -> bytes:
    return b"".join(framer.encode(p) for p in payloads)


def _decode(framer: Framer, chunks: Iterable[bytes]) -> list[bytes]:
    out: list[bytes] = []
    for chunk in chunks:
        framer.receive_data(chunk)
        out.extend(framer.frames())
    framer.eof()
    return out


# --- every framer -----------------------------------------------------------------------------


def test_round_trip_in_one_chunk(make: MakeFramer) -> None:
    wire = _wire(make(), PAYLOADS)
    assert _decode(make(), [wire]) == PAYLOADS


def test_split_at_every_byte_boundary(make: MakeFramer) -> None:
    wire = _wire(make(), PAYLOADS)
    for cut in range(len(wire) + 1):
        assert _decode(make(), [wire[:cut], wire[cut:]]) == PAYLOADS, cut


def test_one_byte_at_a_time_yields_each_frame_on_its_last_byte(make: MakeFramer) -> None:
    encoder = make()
    framer = make()
    for payload in PAYLOADS:
        wire = encoder.encode(payload)
        for i in range(len(wire) - 1):
            framer.receive_data(wire[i : i + 1])
            assert framer.next_frame() is None
        framer.receive_data(wire[-1:])
        assert framer.next_frame() == payload
        assert framer.next_frame() is None
    framer.eof()


def test_accepts_bytearray_and_memoryview(make: MakeFramer) -> None:
    wire = _wire(make(), PAYLOADS)
    half = len(wire) // 2
    framer = make()
    framer.receive_data(bytearray(wire[:half]))
    framer.receive_data(memoryview(wire)[half:])
    assert list(framer.frames()) == PAYLOADS


def test_empty_data_is_a_no_op(make: MakeFramer) -> None:
    framer = make()
    framer.receive_data(b"")
    assert framer.next_frame() is None
    framer.eof()


def test_exactly_at_limit_passes_and_one_more_byte_fails(make: MakeFramer) -> None:
    encoder = make()
    assert _decode(make(limit=8), [encoder.encode(b"a" * 8)]) == [b"a" * 8]
    framer = make(limit=8)
    framer.receive_data(encoder.encode(b"a" * 9))
    with pytest.raises(FrameTooLarge) as info:
        framer.next_frame()
    assert info.value.data == {"limit": 8, "length": 9}


def test_encode_refuses_payload_over_limit(make: MakeFramer) -> None:
    framer = make(limit=4)
    assert framer.limit == 4
    framer.encode(b"abcd")
    with pytest.raises(FrameTooLarge):
        framer.encode(b"abcde")


def test_default_limit_is_16_mib(make: MakeFramer) -> None:
    assert make().limit == DEFAULT_LIMIT == 16 * 1024 * 1024


def test_good_frames_before_an_error_come_out_first_and_the_rest_is_dropped(
    make: MakeFramer,
) -> None:
    encoder = make()
    framer = make(limit=8)
    framer.receive_data(encoder.encode(b"one") + encoder.encode(b"x" * 20) + encoder.encode(b"two"))
    assert framer.next_frame() == b"one"
    with pytest.raises(FrameTooLarge):
        framer.next_frame()


def test_after_an_error_every_call_raises_the_same_type(make: MakeFramer) -> None:
    encoder = make()
    framer = make(limit=2)
    framer.receive_data(encoder.encode(b"xyz"))
    with pytest.raises(FrameTooLarge) as first:
        framer.next_frame()
    for call in (
        framer.next_frame,
        lambda: framer.receive_data(encoder.encode(b"ok")),
        framer.eof,
        lambda: list(framer.frames()),
    ):
        with pytest.raises(FrameTooLarge) as again:
            call()
        assert again.value.__cause__ is first.value
    assert framer.encode(b"ok") == encoder.encode(b"ok")


def test_data_after_a_parked_error_is_dropped_until_it_is_raised(make: MakeFramer) -> None:
    encoder = make()
    framer = make(limit=2)
    framer.receive_data(encoder.encode(b"xyz"))
    framer.receive_data(encoder.encode(b"ok"))
    with pytest.raises(FrameTooLarge):
        framer.next_frame()


def test_eof_with_a_partial_frame_is_a_torn_frame(make: MakeFramer) -> None:
    wire = make().encode(b"payload")
    for cut in range(1, len(wire)):
        framer = make()
        framer.receive_data(wire[:cut])
        assert framer.next_frame() is None
        with pytest.raises(ProtocolError, match="torn"):
            framer.eof()
        with pytest.raises(ProtocolError):
            framer.next_frame()


def test_eof_raises_a_parked_error(make: MakeFramer) -> None:
    framer = make(limit=2)
    framer.receive_data(make().encode(b"xyz"))
    with pytest.raises(FrameTooLarge):
        framer.eof()


def test_complete_frames_stay_available_after_eof(make: MakeFramer) -> None:
    framer = make()
    framer.receive_data(_wire(make(), PAYLOADS))
    framer.eof()
    assert list(framer.frames()) == PAYLOADS


def test_data_after_eof_is_refused(make: MakeFramer) -> None:
    framer = make()
    framer.eof()
    with pytest.raises(ProtocolError, match="after eof"):
        framer.receive_data(b"x")


def test_negative_limit_is_refused(make: MakeFramer) -> None:
    with pytest.raises(ValueError):
        make(limit=-1)


@pytest.mark.timeout(10)
def test_big_frame_in_small_chunks_costs_linear_time(make: MakeFramer) -> None:
    # Re-scanning the whole buffer on each chunk would be ~256 GiB of scanning here.
    payload = b"z" * DEFAULT_LIMIT
    wire = make().encode(payload)
    framer = make()
    view = memoryview(wire)
    for start in range(0, len(wire), 512):
        framer.receive_data(view[start : start + 512])
    assert framer.next_frame() == payload


def test_memory_stays_bounded_after_an_oversized_frame(make: MakeFramer) -> None:
    encoder = make(limit=1 << 20)
    framer = make(limit=1 << 10)
    chunk = encoder.encode(b"f" * (1 << 20))
    tracemalloc.start()
    try:
        for _ in range(32):
            framer.receive_data(chunk)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 4 << 20
    with pytest.raises(FrameTooLarge):
        framer.next_frame()


# --- NDJSON -----------------------------------------------------------------------------------


def test_ndjson_strips_one_trailing_cr_and_skips_empty_lines() -> None:
    framer = NdjsonFramer()
    framer.receive_data(b"\n\r\na\r\n\n\nb\nc\r\r\n  \n")
    assert list(framer.frames()) == [b"a", b"b", b"c\r", b"  "]


def test_ndjson_flood_without_newline_fails_as_soon_as_it_passes_the_limit() -> None:
    framer = NdjsonFramer(limit=100)
    for _ in range(100):
        framer.receive_data(b"x")
    assert framer.next_frame() is None
    framer.receive_data(b"x")
    with pytest.raises(FrameTooLarge, match="at least 101"):
        framer.next_frame()


def test_ndjson_partial_line_one_over_limit_may_still_end_in_crlf() -> None:
    framer = NdjsonFramer(limit=4)
    framer.receive_data(b"abcd\r")
    assert framer.next_frame() is None
    framer.receive_data(b"\n")
    assert framer.next_frame() == b"abcd"
    framer.receive_data(b"abcd\r")
    framer.receive_data(b"e")
    with pytest.raises(FrameTooLarge):
        framer.next_frame()


def test_ndjson_partial_line_one_over_limit_without_cr_fails_at_once() -> None:
    framer = NdjsonFramer(limit=4)
    framer.receive_data(b"abcde")
    with pytest.raises(FrameTooLarge):
        framer.next_frame()


def test_ndjson_crlf_line_exactly_at_limit_split_everywhere() -> None:
    wire = b"abcd\r\nef\r\n"
    for cut in range(len(wire) + 1):
        assert _decode(NdjsonFramer(limit=4), [wire[:cut], wire[cut:]]) == [b"abcd", b"ef"]


def test_ndjson_final_line_without_newline_is_torn() -> None:
    framer = NdjsonFramer()
    framer.receive_data(b'{"a":1}\n{"b":2}')
    assert list(framer.frames()) == [b'{"a":1}']
    with pytest.raises(ProtocolError, match="torn"):
        framer.eof()


@pytest.mark.parametrize("payload", [b"", b"a\nb", b"a\n", b"ab\r"])
def test_ndjson_encode_refuses_what_would_not_decode_back(payload: bytes) -> None:
    with pytest.raises(ProtocolError):
        NdjsonFramer().encode(payload)


def test_ndjson_encode_appends_newline() -> None:
    assert NdjsonFramer().encode(b'{"a":"\\n"}') == b'{"a":"\\n"}\n'


# --- Content-Length ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "header",
    [
        b"Content-Length: 5\r\n\r\n",
        b"content-length: 5\r\n\r\n",
        b"CONTENT-LENGTH:5\r\n\r\n",
        b"Content-Length: \t5 \r\n\r\n",
        b"Content-Length: 005\r\n\r\n",
        b"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\nContent-Length: 5\r\n\r\n",
        b"Content-Length: 5\r\nContent-Type: application/vscode-jsonrpc; charset=utf8\r\n\r\n",
        b"X-Unknown: yes\r\nContent-Length: 5\r\n\r\n",
    ],
)
def test_content_length_accepts_header_variants(header: bytes) -> None:
    wire = (header + b"hello") * 2
    for cut in range(len(wire) + 1):
        assert _decode(ContentLengthFramer(), [wire[:cut], wire[cut:]]) == [b"hello"] * 2


@pytest.mark.parametrize(
    "header",
    [
        b"\r\n\r\n",
        b"Content-Type: text/plain\r\n\r\n",
        b"Content-Length: -5\r\n\r\n",
        b"Content-Length: +5\r\n\r\n",
        b"Content-Length: five\r\n\r\n",
        b"Content-Length: 5.0\r\n\r\n",
        b"Content-Length: 0x5\r\n\r\n",
        b"Content-Length: 5 5\r\n\r\n",
        b"Content-Length:\r\n\r\n",
        b"Content-Length: \xd9\xa5\r\n\r\n",
        b"Content-Length: " + b"9" * 30 + b"\r\n\r\n",
        b"Content-Length: 5\r\nContent-Length: 5\r\n\r\n",
        b"Content-Length 5\r\n\r\n",
        b" Content-Length: 5\r\n\r\n",
        b"Content-Length : 5\r\n\r\n",
        b": 5\r\nContent-Length: 5\r\n\r\n",
        b"\r\nContent-Length: 5\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n",
    ],
)
def test_content_length_garbage_headers_are_protocol_errors(header: bytes) -> None:
    framer = ContentLengthFramer()
    framer.receive_data(header + b"hello")
    with pytest.raises(ProtocolError) as info:
        framer.next_frame()
    assert type(info.value) is ProtocolError


def test_content_length_over_limit_fails_before_the_body() -> None:
    framer = ContentLengthFramer(limit=10)
    framer.receive_data(b"Content-Length: 11\r\n\r\n")
    with pytest.raises(FrameTooLarge) as info:
        framer.next_frame()
    assert info.value.data == {"limit": 10, "length": 11}


def test_content_length_header_block_exactly_at_its_limit_passes() -> None:
    header = b"X-Pad: " + b"p" * 20 + b"\r\nContent-Length: 2\r\n\r\n"
    assert _decode(ContentLengthFramer(header_limit=len(header)), [header + b"ok"]) == [b"ok"]
    framer = ContentLengthFramer(header_limit=len(header) - 1)
    framer.receive_data(header + b"ok")
    with pytest.raises(ProtocolError, match="header block"):
        framer.next_frame()


def test_content_length_header_flood_fails_once_the_header_limit_is_buffered() -> None:
    framer = ContentLengthFramer(header_limit=64)
    framer.receive_data(b"X" * 63)
    assert framer.next_frame() is None
    framer.receive_data(b"X")
    with pytest.raises(ProtocolError, match="header block"):
        framer.next_frame()


def test_content_length_zero_is_an_empty_frame() -> None:
    assert _decode(ContentLengthFramer(), [b"Content-Length: 0\r\n\r\n"]) == [b""]


def test_content_length_encode() -> None:
    assert ContentLengthFramer().encode(b"{}") == b"Content-Length: 2\r\n\r\n{}"


def test_content_length_eof_after_headers_before_body_is_torn() -> None:
    framer = ContentLengthFramer()
    framer.receive_data(b"Content-Length: 3\r\n\r\n")
    with pytest.raises(ProtocolError, match="torn"):
        framer.eof()


# --- length prefix ----------------------------------------------------------------------------


def test_length_prefix_over_limit_fails_on_the_prefix_alone() -> None:
    framer = LengthPrefixFramer(limit=1000)
    framer.receive_data((1001).to_bytes(4, "big"))
    with pytest.raises(FrameTooLarge):
        framer.next_frame()


def test_length_prefix_huge_prefix_fails_on_the_prefix_alone() -> None:
    framer = LengthPrefixFramer()
    framer.receive_data(b"\xff\xff\xff\xff")
    with pytest.raises(FrameTooLarge):
        framer.next_frame()


def test_length_prefix_empty_frames_and_encoding() -> None:
    framer = LengthPrefixFramer()
    assert framer.encode(b"") == b"\x00\x00\x00\x00"
    assert framer.encode(b"ab") == b"\x00\x00\x00\x02ab"
    assert _decode(LengthPrefixFramer(), [b"\x00\x00\x00\x00" * 3]) == [b""] * 3


def test_length_prefix_limit_must_fit_in_four_bytes() -> None:
    LengthPrefixFramer(limit=0xFFFF_FFFF)
    with pytest.raises(ValueError):
        LengthPrefixFramer(limit=0x1_0000_0000)


# --- properties -------------------------------------------------------------------------------

_NDJSON_PAYLOAD = st.binary(min_size=1, max_size=64).filter(
    lambda b: b"\n" not in b and not b.endswith(b"\r")
)
_PAYLOADS: dict[str, st.SearchStrategy[bytes]] = {
    "ndjson": _NDJSON_PAYLOAD,
    "content_length": st.binary(max_size=64),
    "length_prefix": st.binary(max_size=64),
}


def _rechunk(data: st.DataObject, wire: bytes) -> list[bytes]:
    cuts = sorted(data.draw(st.lists(st.integers(0, len(wire)), max_size=12)))
    bounds = [0, *cuts, len(wire)]
    return [wire[a:b] for a, b in zip(bounds, bounds[1:])]


@pytest.mark.parametrize("kind", sorted(KINDS))
@given(data=st.data())
def test_any_frames_rechunked_anyhow_decode_to_the_same_list(
    kind: str, data: st.DataObject
) -> None:
    payloads = data.draw(st.lists(_PAYLOADS[kind], max_size=10))
    limit = max((len(p) for p in payloads), default=0)
    wire = _wire(KINDS[kind](limit=limit), payloads)
    assert _decode(KINDS[kind](limit=limit), _rechunk(data, wire)) == payloads


@pytest.mark.parametrize("kind", sorted(KINDS))
@given(data=st.data(), garbage=st.binary(max_size=256))
def test_garbage_only_ever_raises_typed_errors(
    kind: str, data: st.DataObject, garbage: bytes
) -> None:
    framer = KINDS[kind](limit=32)
    try:
        _decode(framer, _rechunk(data, garbage))
    except (FrameTooLarge, ProtocolError):
        pass
