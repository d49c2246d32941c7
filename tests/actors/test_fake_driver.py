"""The fake driver's launch and translator: lines in, events out; commands in, lines out."""

from __future__ import annotations

import json

import pytest

from actors.fake.driver import DEFAULT_SCRIPT, FakeDriver
from actors.harness import HarnessRequest, Send
from protocol import events as ev
from protocol.errors import BadRequest, ProtocolError


def _request(**options: object) -> HarnessRequest:
    return HarnessRequest(session_id="s-1", cwd="/tmp", model="m1", work_dir="/tmp/w",
                          env={"SECRET": "x"}, options=dict(options), resume="fake-9")


def test_launch_runs_the_script_with_sh_in_cwd_and_passes_env() -> None:
    launch = FakeDriver().launch(_request(script="cat"))
    assert launch.argv == ["/bin/sh", "-c", "cat"]
    assert launch.cwd == "/tmp"
    assert launch.env == {"SECRET": "x", "CORRAL_FAKE_MODEL": "m1", "CORRAL_FAKE_RESUME": "fake-9"}
    assert FakeDriver().launch(_request()).argv[-1] == DEFAULT_SCRIPT


def test_bad_options_are_a_bad_request() -> None:
    with pytest.raises(BadRequest):
        FakeDriver().translator(_request(script=5))


def test_translator_round_trip() -> None:
    t = FakeDriver().translator(_request())
    assert t.ready and t.start(0) == []
    out = t.receive(b'{"type":"init","vendor_session_id":"v1","model":"m","cwd":"/","tools":[]}', 0)
    assert out == [ev.Init(vendor_session_id="v1", model="m", cwd="/", tools=[])]
    assert t.vendor_session_id == "v1"
    [send] = t.prompt("hi", 0)
    assert isinstance(send, Send) and json.loads(send.data) == {"type": "user", "text": "hi"}
    steer = t.steer("more", 0)
    assert steer is not None and json.loads(steer[0].data) == {"type": "steer", "text": "more"}  # type: ignore[union-attr]
    [decide] = t.decide("p1", "deny", 0)
    assert json.loads(decide.data) == {"type": "permission_decision", "permission_id": "p1", "decision": "deny"}  # type: ignore[union-attr]
    with pytest.raises(ProtocolError):
        t.receive(b"not json", 0)


def test_steering_can_be_switched_off() -> None:
    assert FakeDriver().translator(_request(steer=False)).steer("x", 0) is None
