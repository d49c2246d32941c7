"""A local webhook receiver for the notification tests: records each POST, answers as told.

``open_receiver()`` serves on 127.0.0.1 (a free port) in the caller's nursery. Each request is
recorded as a ``Received`` (method, target, headers, body). The answer is ``status`` (200 by
default); with ``hold=True`` it never answers: the request is recorded and the connection held
open until the receiver closes (a slow endpoint). With ``tls`` (a server ``ssl.SSLContext``,
``self_signed`` makes one for 127.0.0.1) it serves HTTPS. ``wait_for(n)`` returns once ``n`` requests
came, ``held`` counts the requests held right now.
"""

from __future__ import annotations

import datetime
import functools
import ipaddress
import json
import ssl
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import h11
import msgspec
import trio

from tests.fakes.http import read_request


class Received(msgspec.Struct, frozen=True):
    method: str
    target: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


class Receiver:
    def __init__(self, status: int, hold: bool, scheme: str = "http") -> None:
        self.status = status
        self.hold = hold
        self.scheme = scheme
        self.port = 0
        self.received: list[Received] = []
        self.held = 0
        self._changed = trio.Event()

    @property
    def url(self) -> str:
        return f"{self.scheme}://127.0.0.1:{self.port}/hook"

    async def wait_for(self, count: int, *, held: int = 0) -> list[Received]:
        """The requests, once at least ``count`` came (and ``held`` are held). Cancellable."""
        while len(self.received) < count or self.held < held:
            await self._changed.wait()
        return list(self.received)

    def _note(self) -> None:
        self._changed.set()
        self._changed = trio.Event()

    async def _serve(self, stream: trio.abc.Stream) -> None:
        try:
            await self._exchanges(stream)
        except trio.BrokenResourceError:
            pass  # the client went away (or refused our certificate)

    async def _exchanges(self, stream: trio.abc.Stream) -> None:
        conn = h11.Connection(h11.SERVER)
        async with stream:
            while True:
                request, body = await read_request(conn, stream)  # type: ignore[arg-type]
                if request is None:
                    return
                self.received.append(Received(
                    method=request.method.decode(), target=request.target.decode(),
                    headers={k.decode().lower(): v.decode() for k, v in request.headers}, body=body))
                if self.hold:
                    self.held += 1
                    self._note()
                    try:
                        await trio.sleep_forever()
                    finally:
                        self.held -= 1
                self._note()
                answer = b"ok"
                data = conn.send(h11.Response(status_code=self.status, headers=[
                    ("content-length", str(len(answer))), ("content-type", "text/plain")]))
                data = (data or b"") + (conn.send(h11.Data(data=answer)) or b"")
                data += conn.send(h11.EndOfMessage()) or b""
                await stream.send_all(data)
                if conn.our_state is h11.MUST_CLOSE:
                    return
                conn.start_next_cycle()


@asynccontextmanager
async def open_receiver(*, status: int = 200, hold: bool = False,
                        tls: ssl.SSLContext | None = None) -> AsyncIterator[Receiver]:
    """A receiver serving until the block ends."""
    receiver = Receiver(status, hold, "http" if tls is None else "https")
    async with trio.open_nursery() as nursery:
        if tls is None:
            serve = functools.partial(trio.serve_tcp, receiver._serve, 0, host="127.0.0.1")
        else:
            serve = functools.partial(trio.serve_ssl_over_tcp, receiver._serve, 0, tls, host="127.0.0.1")
        listeners = await nursery.start(serve)
        sock = listeners[0].socket if tls is None else listeners[0].transport_listener.socket
        receiver.port = sock.getsockname()[1]
        yield receiver
        nursery.cancel_scope.cancel()


def refused_port() -> int:
    """A loopback port nothing listens on (bound, then closed)."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def self_signed(directory: Path) -> tuple[ssl.SSLContext, Path]:
    """A server context with a fresh self-signed certificate for 127.0.0.1, and the certificate's
    PEM file (what a client trusts, e.g. through ``SSL_CERT_FILE``)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                           critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    cert_path, key_path = directory / "cert.pem", directory / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert_path, key_path)
    return context, cert_path


async def _serve_forever(hold: bool) -> None:
    async with open_receiver(hold=hold) as receiver:
        print(receiver.url, flush=True)
        await trio.sleep_forever()


if __name__ == "__main__":  # a receiver of its own process (benchmarks): prints its URL
    import sys

    trio.run(_serve_forever, "--hold" in sys.argv[1:])
