"""Detect pi on this machine: binary, version, floor, login state and models; cached with a TTL.

The version is ``pi --version``'s ``x.y.z``. ``features.models`` comes from pi itself: a
short-lived ``pi --mode rpc --no-session`` child (no extensions, skills, templates or context
files) is asked ``get_available_models`` and then closed; the list is ``provider/id`` names, in
pi's order. Both probes are bounded and run at most once per ``ttl`` seconds.

Login state is best effort and never reads a secret: ``logged_in`` when pi's ``auth.json`` or
``models.json`` exists in its config directory (``PI_CODING_AGENT_DIR``, default
``~/.pi/agent``) or a provider API key variable pi knows is set; else ``logged_out``.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

import msgspec
import trio

from protocol.models import Detection, Features

from . import wire

__all__ = ["FEATURES", "HARNESS", "MIN_VERSION", "PiDetector", "list_models", "parse_version",
           "probe"]

HARNESS = "pi"
MIN_VERSION = "0.73.0"
"""The oldest pi checked against this driver (RPC mode exits on stdin EOF; extension UI with
abort signals)."""

FEATURES = Features(steer=True, resume=True, permissions=True, interrupt=True, set_model=True,
                    mcp=None)
"""What a pi session can do, statically (pi has no MCP client)."""

DEFAULT_TTL = 300.0
_FLOOR = (0, 73, 0)
_PROBE_TIMEOUT = 30.0  # pi needs seconds to start on a loaded machine
_KEY_VARS = ("ANTHROPIC_API_KEY", "ANTHROPIC_OAUTH_TOKEN", "OPENAI_API_KEY", "GEMINI_API_KEY",
             "AZURE_OPENAI_API_KEY", "DEEPSEEK_API_KEY", "GROQ_API_KEY", "XAI_API_KEY",
             "OPENROUTER_API_KEY", "MISTRAL_API_KEY", "AI_GATEWAY_API_KEY", "CEREBRAS_API_KEY")
_MODELS_ARGS = ("--mode", "rpc", "--no-session", "--no-extensions", "--no-skills",
                "--no-prompt-templates", "--no-themes", "--no-context-files")


class PiDetector:
    """Runs detection at most once per ``ttl`` seconds; concurrent callers share one probe."""

    def __init__(self, *, binary: str | None = None, env: Mapping[str, str] | None = None,
                 ttl: float = DEFAULT_TTL) -> None:
        self._binary = binary
        self._env = env
        self._ttl = ttl
        self._cached: tuple[float, Detection] | None = None
        self._lock = trio.Lock()

    @property
    def binary(self) -> str | None:
        """The binary the last detection found, if any."""
        return self._cached[1].path if self._cached is not None else None

    def invalidate(self) -> None:
        """Forget the cached detection (after an install, a login or a config change)."""
        self._cached = None

    async def detect(self) -> Detection:
        """The cached detection, or a fresh probe (bounded; cancellable)."""
        async with self._lock:
            now = trio.current_time()
            if self._cached is not None and now - self._cached[0] < self._ttl:
                return self._cached[1]
            detection = await probe(self._binary, os.environ if self._env is None else self._env)
            self._cached = (trio.current_time(), detection)
            return detection


async def probe(binary: str | None, env: Mapping[str, str]) -> Detection:
    """Detect once, uncached; a missing or failing binary is ``available: false``, not an error."""
    name = binary or "pi"
    path = name if os.sep in name else shutil.which(name, path=env.get("PATH"))
    base = Detection(harness=HARNESS, available=False, features=FEATURES,
                     min_version=MIN_VERSION, login=login_state(env))
    if path is None or not os.access(path, os.X_OK):
        return msgspec.structs.replace(base, reason=f"{name} not found")
    try:
        with trio.fail_after(_PROBE_TIMEOUT):
            done = await trio.run_process([path, "--version"], capture_stdout=True,
                                          capture_stderr=True, check=False,
                                          stdin=subprocess.DEVNULL, env=dict(env))
    except (OSError, trio.TooSlowError) as exc:
        return msgspec.structs.replace(base, path=path,
                                       reason=f"{path} --version failed: {type(exc).__name__}")
    text = done.stdout.decode("utf-8", "replace").strip()
    number = parse_version(text)
    if done.returncode != 0 or number is None:
        return msgspec.structs.replace(base, path=path, version=text or None,
                                       reason=f"{path} --version exited {done.returncode}")
    version = ".".join(map(str, number))
    if number < _FLOOR:
        return msgspec.structs.replace(base, path=path, version=version,
                                       reason=f"pi {version} is older than {MIN_VERSION}")
    models = await list_models(path, env)
    features = msgspec.structs.replace(FEATURES, models=models)
    return msgspec.structs.replace(base, available=True, path=path, version=version,
                                   features=features)


async def list_models(path: str, env: Mapping[str, str]) -> list[str]:
    """``provider/id`` of every model pi can use here (``get_available_models``); ``[]`` if the
    probe fails or takes longer than its bound."""
    ask = wire.command("get_available_models", id="models")
    try:
        with trio.move_on_after(_PROBE_TIMEOUT):
            process = await trio.lowlevel.open_process(
                [path, *_MODELS_ARGS], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL, env=dict(env), start_new_session=True)
            try:
                if process.stdin is None or process.stdout is None:
                    return []
                await process.stdin.send_all(ask)
                return await _read_models(process.stdout)
            finally:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                with trio.CancelScope(shield=True):
                    await process.wait()
                    for pipe in (process.stdin, process.stdout):
                        if pipe is not None:
                            await pipe.aclose()
    except (OSError, trio.BrokenResourceError, msgspec.DecodeError):
        pass
    return []


async def _read_models(stdout: trio.abc.ReceiveStream) -> list[str]:
    buffer = b""
    while True:
        chunk = await stdout.receive_some(1 << 16)
        if not chunk:
            return []
        buffer += chunk
        while b"\n" in buffer:
            line, buffer = buffer.split(b"\n", 1)
            frame = wire.decode(line) if line.strip() else None
            if isinstance(frame, wire.Response) and frame.id == "models":
                found: wire.Models = wire.decode_data(frame.data, wire.Models, "models")
                return [f"{m.provider}/{m.id}" for m in found.models] if frame.success else []


def parse_version(text: str) -> tuple[int, ...] | None:
    """``"0.73.1"`` → ``(0, 73, 1)``; ``None`` when no version number is in it."""
    match = re.search(r"(\d+)\.(\d+)\.(\d+)", text)
    return tuple(int(part) for part in match.groups()) if match else None


def login_state(env: Mapping[str, str]) -> Literal["logged_in", "logged_out"]:
    """``logged_in`` when pi has stored credentials or models, or a provider key is set."""
    if any(env.get(key) for key in _KEY_VARS):
        return "logged_in"
    home = env.get("PI_CODING_AGENT_DIR") or os.path.join(
        env.get("HOME") or str(Path.home()), ".pi", "agent")
    stored = (os.path.join(home, name) for name in ("auth.json", "models.json"))
    return "logged_in" if any(os.path.exists(p) for p in stored) else "logged_out"
