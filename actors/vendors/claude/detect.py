"""Detection of Claude Code on this machine: binary, version, floor, login state and models.

``probe`` runs ``<binary> --version`` and then asks the CLI which models it accepts: a
short-lived ``claude -p`` stream-json child gets the ``initialize`` control request and its
answer lists the models (``--model`` values: aliases such as ``sonnet`` and ``opus[1m]``), read
offline, with no prompt sent (``actors.vendors.probe``: bounded, group-killed). A model probe
that fails or is slow leaves the CLI available and says why in ``reason``. The verdict is
cached by ``actors.vendors.detection`` (``Detector``).

Login state never reads a token: ``logged_in`` when a key or provider switch is in the
environment, or a credentials file exists in the config home.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Literal

import msgspec

from actors.vendors.detection import find_binary, probe_cli
from actors.vendors.probe import ProbeFailed, ask_probe
from protocol.models import Detection, Features

from .frames import ControlRequest, Initialize, encode_line

__all__ = ["ENV_KEYS", "FEATURES", "HARNESS", "MIN_VERSION", "list_models", "login_state", "probe"]

HARNESS = "claude"
MIN_VERSION = "2.1.0"
"""The oldest Claude Code corral drives (its stream-json control protocol was checked on 2.1.197)."""

FEATURES = Features(steer=True, resume=True, permissions=True, interrupt=True, set_model=True,
                    mcp="claude_mcp_config")
"""What the Claude driver can do, statically."""

_KEY_ENV = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN",
            "CLAUDE_CODE_USE_BEDROCK", "CLAUDE_CODE_USE_VERTEX", "CLAUDE_CODE_USE_FOUNDRY")
ENV_KEYS = ("HOME", "CLAUDE_CONFIG_DIR", *_KEY_ENV)
"""The variables (beside ``PATH``) that change a verdict: the detection cache keys on them."""

VERSION_TIMEOUT = 20.0
MODELS_TIMEOUT = 20.0  # at once with the version: harness.list answers within a client's 60 s
_MODELS_ARGS = ("-p", "--input-format", "stream-json", "--output-format", "stream-json",
                "--verbose")
_ASK_ID = "corral-models"


def login_state(env: Mapping[str, str], config_dir: str | None = None) -> Literal["logged_in", "logged_out"]:
    """``logged_in`` when a key/provider switch is in ``env`` or a credentials file exists; never reads it."""
    if any(env.get(name) for name in _KEY_ENV):
        return "logged_in"
    home = config_dir or env.get("CLAUDE_CONFIG_DIR") or os.path.join(env.get("HOME", os.path.expanduser("~")), ".claude")
    return "logged_in" if os.path.exists(os.path.join(home, ".credentials.json")) else "logged_out"


async def probe(binary: str | None, env: Mapping[str, str], *,
                version_timeout: float = VERSION_TIMEOUT,
                models_timeout: float = MODELS_TIMEOUT) -> Detection:
    """Detect once, uncached; a missing, failing, slow or too-old binary is ``available: false``
    with the reason. Cancellation kills the probes."""
    base = Detection(harness=HARNESS, available=False, features=FEATURES, min_version=MIN_VERSION,
                     login=login_state(env))
    return await probe_cli(base, find_binary(binary, "claude", env), env, name=binary or "claude",
                           version_timeout=version_timeout,
                           models=lambda path: list_models(path, env, timeout=models_timeout))


async def list_models(path: str, env: Mapping[str, str], *,
                      timeout: float = MODELS_TIMEOUT) -> list[str] | ProbeFailed:
    """The ``--model`` values Claude Code offers here (its ``initialize`` answer), without the
    ``default`` entry (no flag at all); nothing is sent to a model."""
    ask = encode_line(ControlRequest(request_id=_ASK_ID, request=Initialize()))
    quiet = {**env, "CLAUDECODE": "", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"}
    return await ask_probe([path, *_MODELS_ARGS], quiet, ask, _models_answer, timeout=timeout,
                           label="claude initialize")


class _Model(msgspec.Struct):
    value: str


class _Init(msgspec.Struct):
    models: list[_Model] = []


class _Answer(msgspec.Struct):
    subtype: str
    request_id: str | None = None
    response: _Init | None = None
    error: str | None = None


def _models_answer(line: bytes) -> list[str] | None:
    if not line.lstrip().startswith(b"{"):
        return None  # not a frame (a warning the CLI printed): wait for the answer
    frame = msgspec.json.decode(line)
    if not isinstance(frame, dict) or frame.get("type") != "control_response":
        return None
    answer = msgspec.convert(frame.get("response"), _Answer)
    if answer.request_id != _ASK_ID:
        return None
    if answer.subtype != "success" or answer.response is None:
        raise ValueError(answer.error or f"initialize answered {answer.subtype!r}")
    return [model.value for model in answer.response.models if model.value != "default"]
