"""The proxy's request head and allowlist, byte-level: whole, split, garbage, oversized."""

from __future__ import annotations

import pytest

from protocol.errors import BadRequest, FrameTooLarge, ProtocolError
from supervisor.sandbox.allowlist import Allowlist, HostPort, parse_host_port
from supervisor.sandbox.httphead import find_head, parse_head


def test_allowlist_items_host_any_port_and_host_port() -> None:
    allow = Allowlist.parse(["API.Anthropic.com.", "127.0.0.1:8080", "[::1]:443", "api.anthropic.com"])
    assert allow.items == (HostPort("api.anthropic.com"), HostPort("127.0.0.1", 8080), HostPort("::1", 443))
    assert allow.allows("api.anthropic.com", 443) and allow.allows("api.anthropic.com", 1)
    assert allow.allows("API.ANTHROPIC.COM.", 443)
    assert allow.allows("127.0.0.1", 8080) and not allow.allows("127.0.0.1", 8081)
    assert allow.allows("[::1]", 443) and not allow.allows("::1", 80)
    assert not allow.allows("evil.anthropic.com", 443)
    assert str(allow) == "api.anthropic.com, 127.0.0.1:8080, [::1]:443"
    assert not Allowlist().allows("localhost", 80)


@pytest.mark.parametrize("item", ["", ":80", "host:0", "host:99999", "host:x", "[::1", "[::1]x", "a:b:c",
                                  "user@host", "host/path"])
def test_allowlist_rejects_bad_items(item: str) -> None:
    with pytest.raises(BadRequest):
        parse_host_port(item)


def test_connect_head() -> None:
    head = b"CONNECT api.openai.com:443 HTTP/1.1\r\nHost: api.openai.com:443\r\n\r\n"
    assert find_head(head + b"\x16\x03tls", 1024) == len(head)
    request = parse_head(head)
    assert (request.method, request.host, request.port, request.tunnel) == ("CONNECT", "api.openai.com", 443, True)


def test_head_split_across_reads_is_found_only_when_whole() -> None:
    head = b"CONNECT h:1 HTTP/1.1\r\n\r\n"
    for cut in range(len(head)):
        assert find_head(head[:cut], 1024) is None
    assert find_head(head, 1024) == len(head)


def test_absolute_form_is_rewritten_to_origin_form_without_hop_by_hop_headers() -> None:
    head = (b"POST http://Example.com:8080/v1/x?y=1 HTTP/1.1\r\nHost: example.com:8080\r\n"
            b"Proxy-Connection: keep-alive\r\nProxy-Authorization: Basic c2VjcmV0\r\nConnection: keep-alive, X-Drop\r\n"
            b"X-Drop: 1\r\nContent-Length: 2\r\n\r\n")
    request = parse_head(head)
    assert (request.host, request.port, request.tunnel) == ("example.com", 8080, False)
    assert request.upstream_head == (b"POST /v1/x?y=1 HTTP/1.1\r\nHost: example.com:8080\r\nContent-Length: 2\r\n"
                                     b"Connection: close\r\n\r\n")


def test_absolute_form_without_port_or_host_header() -> None:
    request = parse_head(b"GET http://example.com HTTP/1.0\r\n\r\n")
    assert (request.host, request.port) == ("example.com", 80)
    assert request.upstream_head == b"GET / HTTP/1.0\r\nHost: example.com\r\nConnection: close\r\n\r\n"


@pytest.mark.parametrize("head", [
    b"GET / HTTP/1.1\r\nHost: x\r\n\r\n",                      # origin-form: not a proxy request
    b"GET https://example.com/ HTTP/1.1\r\n\r\n",             # TLS must tunnel
    b"CONNECT example.com HTTP/1.1\r\n\r\n",                  # no port
    b"CONNECT user:pw@example.com:443 HTTP/1.1\r\n\r\n",      # user info
    b"CONNECT example.com:443 HTTP/2\r\n\r\n",
    b"CONNECT  example.com:443 HTTP/1.1\r\n\r\n",
    b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n",  # a TLS hello sent to the proxy
    b"GET http://example.com/ HTTP/1.1\r\nno colon here\r\n\r\n",
    b"GET http://example.com/ HTTP/1.1\r\nBad Name: x\r\n\r\n",
    "GET http://example.com/\u00e9 HTTP/1.1\r\n\r\n".encode(),
])
def test_garbage_is_a_protocol_error(head: bytes) -> None:
    with pytest.raises(ProtocolError):
        parse_head(head)


def test_oversized_head() -> None:
    big = b"CONNECT h:1 HTTP/1.1\r\nX: " + b"a" * 100
    with pytest.raises(FrameTooLarge):
        find_head(big, 64)
    whole = big + b"\r\n\r\n"
    with pytest.raises(FrameTooLarge):
        find_head(whole, 64)
    assert find_head(whole, len(whole)) == len(whole)
