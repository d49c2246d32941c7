"""Detect pi on this machine: binary, version, floor, login state and models; cached with a TTL.

The version is ``pi --version``'s ``x.y.z``. ``features.models`` comes from pi itself: a
short-lived ``pi --mode rpc --no-session`` child (no extensions, skills, templates or context
files) is asked ``get_available_models`` and then killed; the list is ``provider/id`` names, in
pi's order. Both probes are bounded, group-killed children (``actors.vendors.probe``); a models
probe that fails or times out leaves pi available and says so in ``reason`` (it lists models
from the network for some providers and can be slow). ``actors.vendors.detection`` caches the
verdict.

Login state is best effort and never reads a secret: ``logged_in`` when pi's ``auth.json`` or
``models.json`` exists in its config directory (``PI_CODING_AGENT_DIR``, default
``~/.pi/agent``) or a provider API key variable pi knows is set; else ``logged_out``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Literal


from actors.vendors.detection import find_binary, probe_cli
from actors.vendors.probe import ProbeFailed, ask_probe
from protocol.models import Detection, Features

from . import wire

__all__ = ["ENV_KEYS", "FEATURES", "HARNESS", "MIN_VERSION", "list_models", "login_state", "probe"]

HARNESS = "pi"
MIN_VERSION = "0.73.0"
"""The oldest pi checked against this driver (RPC mode exits on stdin EOF; extension UI with
abort signals)."""

FEATURES = Features(steer=True, resume=True, permissions=True, interrupt=True, set_model=True,
                    mcp=None)
"""What a pi session can do, statically (pi has no MCP client)."""

VERSION_TIMEOUT = 20.0  # pi needs seconds to start on a loaded machine
MODELS_TIMEOUT = 20.0  # at once with the version: harness.list answers within a client's 60 s
_ASK_ID = "corral-models"
_KEY_VARS = ("ANTHROPIC_API_KEY", "ANTHROPIC_OAUTH_TOKEN", "OPENAI_API_KEY", "GEMINI_API_KEY",
             "AZURE_OPENAI_API_KEY", "DEEPSEEK_API_KEY", "GROQ_API_KEY", "XAI_API_KEY",
             "OPENROUTER_API_KEY", "MISTRAL_API_KEY", "AI_GATEWAY_API_KEY", "CEREBRAS_API_KEY")
ENV_KEYS = ("HOME", "PI_CODING_AGENT_DIR", *_KEY_VARS)
"""The variables (beside ``PATH``) that change a verdict: the detection cache keys on them."""
_MODELS_ARGS = ("--mode", "rpc", "--no-session", "--no-extensions", "--no-skills",
                "--no-prompt-templates", "--no-themes", "--no-context-files")


async def probe(binary: str | None, env: Mapping[str, str], *,
                version_timeout: float = VERSION_TIMEOUT,
                models_timeout: float = MODELS_TIMEOUT) -> Detection:
    """Detect once, uncached; a missing, failing, slow or too-old binary is ``available: false``
    with the reason. The models probe is optional: when it fails or is slow pi stays available
    and ``reason`` says why its models are missing. Cancellation kills the probes."""
    base = Detection(harness=HARNESS, available=False, features=FEATURES,
                     min_version=MIN_VERSION, login=login_state(env))
    return await probe_cli(base, find_binary(binary, "pi", env), env, name=binary or "pi",
                           version_timeout=version_timeout,
                           models=lambda path: list_models(path, env, timeout=models_timeout))


async def list_models(path: str, env: Mapping[str, str], *,
                      timeout: float = MODELS_TIMEOUT) -> list[str] | ProbeFailed:
    """``provider/id`` of every model pi can use here (``get_available_models``), in pi's order."""
    ask = wire.command("get_available_models", id=_ASK_ID)
    return await ask_probe([path, *_MODELS_ARGS], env, ask, _models_answer, timeout=timeout,
                           label="pi get_available_models")


def _models_answer(line: bytes) -> list[str] | None:
    frame = wire.decode(line)
    if not isinstance(frame, wire.Response) or frame.id != _ASK_ID:
        return None
    if not frame.success:
        raise ValueError(f"get_available_models failed: {frame.error or 'no reason given'}")
    found: wire.Models = wire.decode_data(frame.data, wire.Models, "models")
    return [f"{m.provider}/{m.id}" for m in found.models]


def login_state(env: Mapping[str, str]) -> Literal["logged_in", "logged_out"]:
    """``logged_in`` when pi has stored credentials or models, or a provider key is set."""
    if any(env.get(key) for key in _KEY_VARS):
        return "logged_in"
    home = env.get("PI_CODING_AGENT_DIR") or os.path.join(
        env.get("HOME") or str(Path.home()), ".pi", "agent")
    stored = (os.path.join(home, name) for name in ("auth.json", "models.json"))
    return "logged_in" if any(os.path.exists(p) for p in stored) else "logged_out"
