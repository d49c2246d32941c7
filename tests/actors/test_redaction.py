"""The one redaction rule every harness's error messages go through (``actors.redaction``)."""

from __future__ import annotations

import pytest

from actors.redaction import redact


@pytest.mark.parametrize(("text", "masked"), [
    ("Incorrect API key provided: sk-proj-AbC123xyz", "Incorrect API key provided: sk-***"),
    ("key sk-ant-api03-Zz_9-x rejected", "key sk-*** rejected"),
    ("API key not valid: AIzaSyD0123456789abcdefghijklmnopqrstu", "API key not valid: AIz***"),
    ("short AIza0123-_ab here", "short AIz*** here"),
    # a half-masked key is masked whole; too short to be a key, or inside a word, is left alone
    ("key sk-ab***yz and sk-1", "key sk-*** and sk-1"),
    ("task-runner and AIzaXY", "task-runner and AIzaXY"),
])
def test_key_shaped_tokens_keep_their_kind_and_lose_the_rest(text: str, masked: str) -> None:
    assert redact(text) == masked


def test_a_known_secret_is_masked_whatever_its_shape() -> None:
    assert redact("token hunter2 refused", "hunter2") == "token *** refused"
    assert redact("nothing to hide", "") == "nothing to hide"


def test_both_at_once() -> None:
    assert redact("hunter2 and sk-live-0123456789", "hunter2") == "*** and sk-***"
