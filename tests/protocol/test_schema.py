"""The generated JSON Schema covers every frame, with a discriminator on ``type``."""

from __future__ import annotations

import msgspec

from protocol import messages
from protocol.events import EVENT_TYPES
from protocol.schema import client_protocol_schema


def test_schema_is_one_document_with_a_discriminator() -> None:
    schema = client_protocol_schema()
    assert schema["discriminator"]["propertyName"] == "type"
    mapping = schema["discriminator"]["mapping"]
    for tag in [*messages.REQUEST_TYPES, "hello", "welcome", "ok", "error", "event", "lagged"]:
        assert tag in mapping
    defs = schema["$defs"]
    for cls in EVENT_TYPES:
        assert cls.__name__ in defs
    assert set(defs["MethodResults"]["properties"]) == set(messages.RESULT_TYPES)
    assert {"id", "state", "last_seq", "restarts", "pid"} <= set(defs["SessionInfo"]["required"])


def test_daemon_status_reports_supervisors_as_an_optional_addition() -> None:
    status = client_protocol_schema()["$defs"]["DaemonStatusResult"]
    assert "supervisors" in status["properties"] and "supervisors" not in status["required"]
    old = b'{"version": "0.1.0", "pid": 1, "uptime_s": 1.5, "sessions": 0, "clients": 1, "children": []}'
    assert msgspec.json.decode(old, type=messages.DaemonStatusResult).supervisors == []


def test_daemon_status_reports_warming_as_an_optional_addition() -> None:
    status = client_protocol_schema()["$defs"]["DaemonStatusResult"]
    assert "warming" in status["properties"] and "warming" not in status.get("required", [])
    old = b'{"version": "0.1.0", "pid": 1, "uptime_s": 1.5, "sessions": 0, "clients": 1, "children": []}'
    assert msgspec.json.decode(old, type=messages.DaemonStatusResult).warming == []
    warm = messages.DaemonStatusResult(version="0.1.0", pid=1, uptime_s=1.5, sessions=0,
                                       clients=1, children=[], warming=["native"])
    assert msgspec.json.decode(msgspec.json.encode(warm))["warming"] == ["native"]
