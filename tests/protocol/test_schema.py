"""The generated JSON Schema covers every frame, with a discriminator on ``type``."""

from __future__ import annotations

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
