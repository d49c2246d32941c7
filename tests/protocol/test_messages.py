"""Golden wire forms of the client protocol, and the decode failures a server must tell apart."""

from __future__ import annotations

import json

import msgspec
import pytest

from protocol import codec, events, messages, models
from protocol.errors import ErrorCode


def _wire(message: msgspec.Struct) -> object:
    return json.loads(codec.encode(message))


def test_event_frame_golden() -> None:
    frame = messages.EventFrame(
        session_id="s-1", seq=17, ts="2026-12-02T10:00:00.123Z",
        event=events.Assistant(text="Hel", delta=True),
    )
    assert _wire(frame) == {
        "type": "event", "session_id": "s-1", "seq": 17, "ts": "2026-12-02T10:00:00.123Z",
        "event": {"type": "assistant", "text": "Hel", "delta": True},
    }


def test_result_event_has_every_required_field_with_defaults() -> None:
    decoded = msgspec.json.decode(
        b'{"type":"result","stop_reason":"end_turn","is_error":false}', type=events.Event
    )
    assert _wire(decoded) == {
        "type": "result", "stop_reason": "end_turn", "is_error": False,
        "usage": {"input_tokens": 0, "output_tokens": 0, "cache_read_tokens": 0,
                  "cache_write_tokens": 0},
        "cost_usd": None, "duration_ms": None,
    }


def test_error_event_uses_the_class_key() -> None:
    wire = _wire(events.Error(code="claude.limit.rate_limited", message="slow down",
                              error_class="limit"))
    assert wire == {"type": "error", "code": "claude.limit.rate_limited",
                    "message": "slow down", "class": "limit"}
    back = msgspec.json.decode(json.dumps(wire), type=events.Event)
    assert isinstance(back, events.Error) and back.error_class == "limit"


def test_every_event_kind_has_its_protocol_tag() -> None:
    tags = {cls.__struct_config__.tag for cls in events.EVENT_TYPES}
    assert tags == {
        "init", "assistant", "thought", "user", "tool", "permission", "permission_decided",
        "result", "error", "usage", "limits", "status", "restarted", "exit",
        "workspace", "checkpoint", "compaction", "permissions",  # additions beyond PROTOCOL.md's core table
    }


def test_request_methods_are_exactly_the_protocol_table() -> None:
    assert set(messages.REQUEST_TYPES) == {
        "daemon.status", "daemon.shutdown", "harness.list", "session.create", "session.list",
        "session.get", "session.subscribe", "session.unsubscribe", "session.prompt",
        "session.interrupt", "session.permission", "session.set_model", "session.close",
        # additions beyond PROTOCOL.md's core table:
        "lsp.list", "session.resume", "mcp.list", "mcp.restart", "session.compact",
        "workspace.diff", "workspace.commit", "workspace.merge", "workspace.discard", "ui.login_code",
        "session.set_permissions", "placement.status",
    }
    assert set(messages.RESULT_TYPES) == set(messages.REQUEST_TYPES)


def test_lsp_list_golden() -> None:
    assert codec.decode_request(b'{"type":"lsp.list","id":3}') == messages.LspList(id=3)
    row = messages.LspServerInfo(root="/w", server="ruff", state="running", pid=7, restarts=0)
    assert _wire(messages.LspListResult(servers=[row])) == {"servers": [
        {"root": "/w", "server": "ruff", "state": "running", "pid": 7, "restarts": 0}]}


def test_decode_request_ok() -> None:
    req = codec.decode_request(
        b'{"type":"session.subscribe","id":4,"session_id":"s-1","from_seq":9,"extra":1}'
    )
    assert req == messages.SessionSubscribe(id=4, session_id="s-1", from_seq=9)


def test_session_create_with_every_param() -> None:
    req = codec.decode_request(json.dumps({
        "type": "session.create", "id": 1, "harness": "fake", "cwd": "/tmp", "name": "n",
        "model": "m", "prompt": "p", "permissions": {"mode": "auto_edit", "allow_tools": ["x*"]},
        "env": {"K": "V"}, "mcp_servers": [{"name": "fs", "command": "srv"}],
        "options": {"script": "cat"},
    }))
    assert isinstance(req, messages.SessionCreate)
    assert req.permissions == models.Permissions(mode="auto_edit", allow_tools=["x*"])
    assert req.mcp_servers == [models.McpServer(name="fs", command="srv")]


@pytest.mark.parametrize(
    ("frame", "code", "request_id"),
    [
        (b"not json", ErrorCode.BAD_REQUEST, None),
        (b"[1,2]", ErrorCode.BAD_REQUEST, None),
        (b'{"id": 3}', ErrorCode.BAD_REQUEST, 3),
        (b'{"type": 5, "id": 3}', ErrorCode.BAD_REQUEST, 3),
        (b'{"type": "session.get", "session_id": "s"}', ErrorCode.BAD_REQUEST, None),
        (b'{"type": "session.get", "id": 7, "session_id": 5}', ErrorCode.BAD_REQUEST, 7),
        (b'{"type": "session.get", "id": 7}', ErrorCode.BAD_REQUEST, 7),
        (b'{"type": "nope", "id": 8}', ErrorCode.UNKNOWN_METHOD, 8),
        (b'{"type": "hello", "id": 9, "protocol": 1, "token": "t"}', ErrorCode.BAD_REQUEST, 9),
        (b'{"type": "session.permission", "id": 2, "session_id": "s", "permission_id": "p",'
         b' "decision": "maybe"}', ErrorCode.BAD_REQUEST, 2),
    ],
)
def test_decode_request_failures(frame: bytes, code: ErrorCode, request_id: int | None) -> None:
    with pytest.raises(codec.FrameError) as info:
        codec.decode_request(frame)
    assert info.value.error.code == code
    assert info.value.id == request_id


def test_old_bytes_decode_with_new_decoder() -> None:
    # Frames as a v1 client wrote them must keep decoding as fields are added.
    golden = [
        b'{"type":"hello","protocol":1,"token":"abc","client":{"name":"corral-cli","version":"0.1.0"}}',
        b'{"type":"session.prompt","id":1,"session_id":"s-1","text":"hi"}',
    ]
    assert isinstance(codec.decode_hello(golden[0]), messages.Hello)
    assert isinstance(codec.decode_request(golden[1]), messages.SessionPrompt)


def test_server_frames_round_trip() -> None:
    frames: list[msgspec.Struct] = [
        messages.Welcome(connection_id="c-1", daemon=models.DaemonInfo(version="0.1.0", pid=1)),
        messages.Ok(id=1, result={"last_seq": 3}),
        messages.ErrorFrame(id=None, code="unauthorized", message="bad token"),
        messages.Lagged(session_id="s-1", last_seq=4),
    ]
    for frame in frames:
        assert _wire(codec.decode_server_frame(codec.encode(frame))) == _wire(frame)
