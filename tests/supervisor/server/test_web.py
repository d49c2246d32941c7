"""The HTTP front: the routes (``Site.respond``, pure) and the byte-level head reading and replies."""

from __future__ import annotations

from pathlib import Path

import trio
import trio.testing

from supervisor.server.gate import Gate
from supervisor.server.logins import Logins
from supervisor.server.web import MAX_HEAD, Site, read_head

PORT = 4321
HOST = f"127.0.0.1:{PORT}"
NOW = 1_800_000_000.0


def site(tmp_path: Path | None = None) -> Site:
    kwargs = {"assets": tmp_path} if tmp_path is not None else {}
    return Site(Gate(PORT), Logins("token"), clock=lambda: NOW, **kwargs)


def login(s: Site) -> list[tuple[bytes, bytes]]:
    """Headers carrying a fresh cookie of ``s``."""
    reply = s.respond("GET", f"/login?code={s.logins.mint(NOW)}", HOST, [], unix=False)
    assert reply.status == 200
    cookie = dict(reply.headers)["Set-Cookie"].split(";")[0]
    return [(b"cookie", f"other=1; {cookie}".encode())]


def test_login_sets_an_httponly_strict_cookie_and_a_replay_is_401() -> None:
    s = site()
    code = s.login_code().code
    ok = s.respond("GET", f"/login?code={code}", HOST, [], unix=False)
    assert ok.status == 200 and ok.content_type.startswith("text/html")
    cookie = dict(ok.headers)["Set-Cookie"]
    assert cookie.startswith(f"corral_ui_{PORT}=") and "HttpOnly" in cookie and "SameSite=Strict" in cookie
    assert "token" not in cookie
    for target in (f"/login?code={code}", "/login", "/login?code=forged", f"/login?code={code}&code=x"):
        denied = s.respond("GET", target, HOST, [], unix=False)
        assert denied.status == 401 and b"not authorised" in denied.body, target


def test_the_page_and_assets_need_the_cookie() -> None:
    s = site()
    assert s.respond("GET", "/", HOST, [], unix=False).status == 401
    assert s.respond("GET", "/ui/app.js", HOST, [(b"cookie", b"corral_ui_4321=a.1.b")], unix=False).status == 401
    headers = login(s)
    page = s.respond("GET", "/", HOST, headers, unix=False)
    assert page.status == 200 and b"<title>corral</title>" in page.body
    script = s.respond("GET", "/ui/app.js?v=1", HOST, headers, unix=False)
    assert script.status == 200 and script.content_type.startswith("text/javascript")
    assert s.respond("GET", "/ui/style.css", HOST, headers, unix=False).content_type.startswith("text/css")


def test_only_get_of_known_names_is_served(tmp_path: Path) -> None:
    (tmp_path / "index.html").write_text("<p>page</p>")
    (tmp_path / "app.js").write_text("1")
    (tmp_path / "secret.txt").write_text("no")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "x.js").write_text("no")
    s = site(tmp_path)
    headers = login(s)
    for target in ("/ui/../token", "/ui/%2e%2e/token", "/ui/secret.txt", "/ui/sub/x.js", "/ui/index.html",
                   "/etc/passwd", "//ui/app.js", "/ui/app.js/", "/UI/app.js"):
        assert s.respond("GET", target, HOST, headers, unix=False).status == 404, target
    for method in ("POST", "PUT", "DELETE", "HEAD", "OPTIONS"):
        reply = s.respond(method, "/ui/app.js", HOST, headers, unix=False)
        assert reply.status == 405 and ("Allow", "GET") in reply.headers, method


def test_foreign_hosts_origins_and_sites_are_forbidden() -> None:
    s = site()
    headers = login(s)
    assert s.respond("GET", "/", "evil.example:4321", headers, unix=False).status == 403
    cases = [[(b"origin", b"http://evil.example")], [(b"sec-fetch-site", b"cross-site")],
             [(b"sec-fetch-site", b"same-site")]]
    for extra in cases:
        assert s.respond("GET", "/", HOST, [*headers, *extra], unix=False).status == 403, extra
    own = [(b"origin", f"http://{HOST}".encode()), (b"sec-fetch-site", b"same-origin")]
    assert s.respond("GET", "/", HOST, [*headers, *own], unix=False).status == 200


def test_the_websocket_takes_the_cookie_only_from_our_own_page() -> None:
    s = site()
    headers = login(s)
    assert s.authorised([*headers, (b"origin", f"http://{HOST}".encode())])
    assert s.authorised([*headers, (b"origin", f"http://localhost:{PORT}".encode())])
    assert not s.authorised(headers)  # no Origin: not a page of ours
    assert not s.authorised([*headers, (b"origin", b"http://127.0.0.1:9")])
    assert not s.authorised([(b"origin", f"http://{HOST}".encode())])


async def _exchange(request: bytes, s: Site) -> bytes:
    """Write ``request`` to a server stream run through ``read_head`` and ``serve``; the reply."""
    client, server = trio.testing.memory_stream_pair()
    await client.send_all(request)
    head = await read_head(server)
    if head is not None and not head.upgrade:
        await s.serve(server, head, unix=False)
    await server.aclose()
    reply = b""
    while chunk := await client.receive_some():
        reply += chunk
    return reply


async def test_every_reply_carries_the_security_headers() -> None:
    s = site()
    for request in (b"GET / HTTP/1.1\r\nHost: 127.0.0.1:4321\r\n\r\n",
                    b"POST /x HTTP/1.1\r\nHost: 127.0.0.1:4321\r\nContent-Length: 0\r\n\r\n"):
        reply = await _exchange(request, s)
        head = reply.split(b"\r\n\r\n", 1)[0].lower()
        assert b"content-security-policy: default-src 'self'" in head
        assert b"x-content-type-options: nosniff" in head and b"cache-control: no-store" in head
        assert b"connection: close" in head


async def test_an_oversized_or_garbled_head_is_answered_and_closed() -> None:
    s = site()
    huge = b"GET / HTTP/1.1\r\nHost: 127.0.0.1:4321\r\nX: " + b"a" * (MAX_HEAD + 10) + b"\r\n\r\n"
    assert (await _exchange(huge, s)).startswith(b"HTTP/1.1 431 ")
    assert (await _exchange(b"\x16\x03\x01garbage\r\n\r\n", s)).startswith(b"HTTP/1.1 400 ")


async def test_an_upgrade_keeps_every_byte_for_the_websocket() -> None:
    client, server = trio.testing.memory_stream_pair()
    request = (b"GET /v1 HTTP/1.1\r\nHost: 127.0.0.1:4321\r\nUpgrade: websocket\r\n"
               b"Connection: Upgrade\r\n\r\n")
    await client.send_all(request + b"after")
    head = await read_head(server)
    assert head is not None and head.upgrade
    assert head.raw == request + b"after"  # the websocket is handed all of it
