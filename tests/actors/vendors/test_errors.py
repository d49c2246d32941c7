"""The one ``Classification`` every vendor's classifier answers with (``actors.vendors.errors``)."""

from __future__ import annotations

from collections.abc import Callable

import msgspec
import pytest

from actors.vendors.claude.errors import classify as claude
from actors.vendors.codex.errors import classify as codex
from actors.vendors.errors import Classification
from actors.vendors.opencode.errors import classify as opencode
from actors.vendors.pi.errors import classify as pi
from protocol.events import Error

LEAK = "401 Unauthorized: invalid api key sk-proj-Secret123"


def test_the_event_carries_class_code_and_message() -> None:
    found = Classification(error_class="limit", code="x.limit.rate_limited", message="slow down")
    assert found.event() == Error(code="x.limit.rate_limited", message="slow down", error_class="limit")


def test_it_is_frozen_data() -> None:
    found = Classification(error_class="auth", code="x.auth.invalid_key", message="m")
    with pytest.raises(AttributeError):
        found.code = "other"  # type: ignore[misc]
    assert msgspec.json.decode(msgspec.json.encode(found), type=Classification) == found


@pytest.mark.parametrize(("vendor", "classify"), [
    ("claude", claude), ("codex", codex), ("opencode", opencode), ("pi", pi)])
def test_every_vendor_answers_with_it_redacted(vendor: str, classify: Callable[[str], Classification]) -> None:
    found = classify(LEAK)
    assert type(found) is Classification
    assert found.code.startswith(f"{vendor}.auth.") and found.error_class == "auth"
    assert found.message == "401 Unauthorized: invalid api key sk-***"
