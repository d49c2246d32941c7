"""ACP's JSON-RPC 2.0 over NDJSON: ``protocol.jsonrpc``'s endpoint, one message per line."""

from __future__ import annotations

from typing import Any

from msgspec import UNSET

from actors.harness import Send
from protocol import jsonrpc

__all__ = ["Rpc"]


class Rpc:
    """Our side of one agent connection: every method returns a ready ``Send`` line."""

    def __init__(self) -> None:
        self._endpoint = jsonrpc.Endpoint()

    def call(self, method: str, params: Any = UNSET) -> tuple[int, Send]:
        """A request: its id and its line."""
        request_id, data = self._endpoint.request(method, params)
        return request_id, Send(data=data + b"\n")

    def notify(self, method: str, params: Any = UNSET) -> Send:
        """A notification line."""
        return Send(data=self._endpoint.notify(method, params) + b"\n")

    def respond(self, request_id: jsonrpc.RequestId, result: Any) -> Send:
        """The result line for the agent's request ``request_id``."""
        return Send(data=self._endpoint.respond(request_id, result) + b"\n")

    def error(self, request_id: jsonrpc.RequestId, code: int, message: str) -> Send:
        """The error line for the agent's request ``request_id``."""
        return Send(data=self._endpoint.respond_error(request_id, code, message) + b"\n")

    def receive(self, line: bytes) -> jsonrpc.Incoming | None:
        """Classify one line (``None``: a late answer to a request we gave up on)."""
        return self._endpoint.receive(line)
