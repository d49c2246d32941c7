"""A resume target Claude does not have: the error result it prints before exiting, and the
driver's next launch for that session, which starts a new conversation instead of failing again."""

from __future__ import annotations

import json

import msgspec

from actors.harness import HarnessRequest
from actors.vendors.claude import ClaudeDriver, ClaudeTranslator
from protocol.events import Error

MISSING = "d64d64bb-08bf-45f1-8d7b-dc2d44a3eeef"

# What Claude Code 2.1.197 prints (then exits 1) for --resume of an unknown id, trimmed.
NOT_FOUND = json.dumps({
    "type": "result", "subtype": "error_during_execution", "duration_ms": 0, "is_error": True,
    "num_turns": 0, "stop_reason": None, "session_id": MISSING, "total_cost_usd": 0,
    "usage": {"input_tokens": 0, "output_tokens": 0},
    "errors": [f"No conversation found with session ID: {MISSING}"],
}).encode()


def request(session_id: str = "s-1", resume: str | None = MISSING) -> HarnessRequest:
    return HarnessRequest(session_id=session_id, cwd="/w", work_dir="/run", resume=resume)


def test_the_error_result_is_an_error_without_a_result_and_names_the_id() -> None:
    heard: list[str] = []
    translator = ClaudeTranslator(request(), on_missing=heard.append)
    assert translator.vendor_session_id == MISSING
    [error] = translator.receive(NOT_FOUND, 0)
    assert isinstance(error, Error)
    assert (error.error_class, error.code) == ("unknown", "claude.unknown.session_not_found")
    assert MISSING in error.message
    assert heard == [MISSING]
    assert translator.vendor_session_id is None


def test_without_a_resume_the_same_frame_is_an_ordinary_error_result() -> None:
    heard: list[str] = []
    translator = ClaudeTranslator(request(resume=None), on_missing=heard.append)
    assert [type(e).__name__ for e in translator.receive(NOT_FOUND, 0)] == ["Error", "Result"]
    assert heard == []


def test_the_driver_drops_the_resume_for_that_session_only() -> None:
    driver = ClaudeDriver()
    first = driver.launch(request())
    assert f"--resume={MISSING}" in first.argv
    driver.translator(request()).receive(NOT_FOUND, 0)

    again = driver.launch(request())
    assert not any(arg.startswith("--resume") for arg in again.argv)
    assert driver.translator(request()).vendor_session_id is None
    assert msgspec.structs.replace(first, argv=[a for a in first.argv if a != f"--resume={MISSING}"]) == again
    # Another session asking for the same id (another config home, say) still asks Claude.
    assert f"--resume={MISSING}" in driver.launch(request("s-2")).argv
    # A conversation the session learns of later is resumed as usual.
    assert "--resume=other" in driver.launch(request(resume="other")).argv
