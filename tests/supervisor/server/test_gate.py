"""The pre-upgrade gate: path, Origin allow-list, loopback Host."""

from __future__ import annotations

import pytest

from supervisor.server.gate import Gate


@pytest.mark.parametrize(
    ("path", "host", "origin", "unix", "refused"),
    [
        ("/v1", "127.0.0.1:7433", None, False, False),
        ("/v1", "localhost:7433", "http://localhost:7433", False, False),
        ("/v1", "[::1]:7433", "http://127.0.0.1:7433", False, False),
        ("/v1", "127.0.0.1:7433", "http://127.0.0.1:9999", False, True),
        ("/v1", "127.0.0.1:7433", "https://evil.example", False, True),
        ("/v1", "evil.example:7433", None, False, True),
        ("/v1", "", None, True, False),
        ("/v2", "127.0.0.1:7433", None, False, True),
        ("/v1", "127.0.0.1:7433", "http://editor.local", False, False),
    ],
)
def test_gate(path: str, host: str, origin: str | None, unix: bool, refused: bool) -> None:
    gate = Gate(7433, ["http://editor.local"])
    headers = [(b"Origin", origin.encode())] if origin else []
    assert (gate.refusal(path, host, headers, unix=unix) is not None) == refused
