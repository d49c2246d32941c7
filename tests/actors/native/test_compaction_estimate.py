"""The fixture-pinned estimator and the EWMA calibration (plasmid's numbers)."""

from __future__ import annotations

import pytest

from actors.native.compaction import (
    Calibration, canonical_json, content_tokens, declaration_tokens, system_tokens,
)


def test_canonical_json_sorts_keys_is_compact_and_does_not_escape() -> None:
    assert canonical_json({"b": "é<>&", "a": 1}) == '{"a":1,"b":"é<>&"}'.encode()
    assert canonical_json({"z": {"y": [1, {"b": 2, "a": None}]}}) == \
        b'{"z":{"y":[1,{"a":null,"b":2}]}}'


# (content, canonical bytes, tokens): ceil(bytes / 4) + 4 per content + 1 per part
# + 8 per function call/response + 16 per binary payload.
FIXTURES = [
    ({"role": "user", "parts": [{"text": "hello"}]}, 42, 11 + 4 + 1),
    ({"role": "user", "parts": [{"text": "héllo→"}]}, 46, 12 + 4 + 1),
    ({"role": "model", "parts": [{"text": "a"}, {"function_call": {
        "id": "c1", "name": "read", "args": {"path": "a"}}}]},
     103, 26 + 4 + 2 + 8),
    ({"role": "user", "parts": [{"function_response": {
        "id": "c1", "name": "read", "response": {"output": "x" * 100}}}]},
     198, 50 + 4 + 1 + 8),
    ({"role": "user", "parts": [{"inline_data": {"mime_type": "image/png", "data": "AAAA"}}]},
     81, 21 + 4 + 1 + 16),
    ({"role": "model", "parts": []}, 27, 7 + 4),
]


@pytest.mark.parametrize(("content", "size", "tokens"), FIXTURES)
def test_content_fixtures(content: dict[str, object], size: int, tokens: int) -> None:
    assert len(canonical_json(content)) == size
    assert content_tokens(content) == tokens


def test_system_and_declaration_fixtures() -> None:
    # "be brief" as JSON is 10 bytes: 3 tokens, + one content and one part.
    assert system_tokens("be brief") == 3 + 4 + 1
    assert system_tokens("") == 0
    declaration = {"name": "ls", "description": "list", "parameters": {"type": "object"}}
    # {"description":"list","name":"ls","parameters":{"type":"object"}} is 65 bytes: 17 tokens
    assert len(canonical_json(declaration)) == 65
    assert declaration_tokens(declaration) == 17 + 12


def test_calibration_is_an_ewma_with_alpha_0_3() -> None:
    calibration = Calibration()
    assert calibration.observe(100, 150) == pytest.approx(0.7 * 1.0 + 0.3 * 1.5)
    assert calibration.observe(100, 150) == pytest.approx(0.7 * 1.15 + 0.3 * 1.5)
    assert calibration.scale(100) == 126  # 100 × 1.255, rounded up


def test_calibration_is_clamped_and_ignores_empty_reports() -> None:
    calibration = Calibration()
    for _ in range(40):
        calibration.observe(10, 1000)
    assert calibration.factor == 2.0
    for _ in range(40):
        calibration.observe(1000, 1)
    assert calibration.factor == 0.5
    assert calibration.observe(0, 100) == 0.5
    assert calibration.observe(100, 0) == 0.5
    assert Calibration(9.0).factor == 2.0
    assert Calibration(float("nan")).factor == 1.0
