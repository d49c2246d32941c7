"""The models an ACP agent offers, asked of the agent itself: a session opened and dropped.

ACP has no request that lists models: an agent says which it offers when a session opens
(``models.availableModels``, or the choices of a ``model`` config option:
``wire.offered_models``, what the translator reads too). ``list_models`` launches the agent
the profile's way (``launch.build_launch`` for a plain session in a fresh temporary directory,
over the detection's environment), sends ``initialize``, ``authenticate`` when the profile
names a method the agent offers, then ``session/new`` in that directory, and reads the ids. The
child is a probe (``actors.vendors.probe.ask_probe``): bounded, and killed with its process
group however the probe ends; the directory is removed after it, also on cancellation. Requests
from the agent get "method not found" at once, so it never waits on the probe.

An agent that needs a login or a key to open a session answers ``session/new`` with an error,
or exits (Copilot in bring-your-own-key mode without a model): that is a ``ProbeFailed`` whose
reason is the agent's message, classified and redacted (``errors.classify``), never an error of
the detection. Measured with the pinned agents: gemini 0.61.0 and claude-code-acp 0.16.2 list
``availableModels`` once a key is set; opencode 1.18.33 and codex-acp 0.16.0 offer a ``model``
config option (opencode even with no provider configured; codex-acp only with a key); copilot
1.0.102 offers none in bring-your-own-key mode and asks for a GitHub login otherwise.

What the agent leaves in its own home is its business: a session opened this way may be
recorded there (Gemini writes a chat file under ``~/.gemini/tmp``, OpenCode a session row).
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Mapping
from typing import Any

from actors.harness import HarnessRequest
from actors.vendors.probe import ProbeFailed, Write, ask_probe
from protocol import jsonrpc
from protocol.errors import ProtocolError

from . import wire
from .errors import classify
from .launch import build_launch
from .profiles import Profile
from .rpc import Rpc

__all__ = ["MODELS_TIMEOUT", "list_models"]

MODELS_TIMEOUT = 20.0
"""Seconds for the whole exchange; at once with the version probe, so ``harness.list`` answers
within a client's 60 s."""

_NO_WORK = {"fs": {"readTextFile": False, "writeTextFile": False}, "terminal": False}


async def list_models(profile: Profile, path: str, env: Mapping[str, str], *,
                      timeout: float = MODELS_TIMEOUT) -> list[str] | ProbeFailed:
    """The model ids ``profile``'s agent at ``path`` offers a new session (possibly none)."""
    directory = tempfile.mkdtemp(prefix="corral-models-")
    try:
        request = HarnessRequest(session_id="models-probe", cwd=directory, work_dir=directory)
        launch = build_launch(request, profile, default_binary=path)
        talk = _Handshake(profile, directory)
        return await ask_probe(launch.argv, {**env, **launch.env}, talk.start(), talk.answer,
                               timeout=timeout, label=f"{profile.name} session/new", cwd=directory)
    finally:
        shutil.rmtree(directory, ignore_errors=True)


class _Handshake:
    """Our side of the exchange, one line at a time (the ``answer`` of ``ask_probe``)."""

    def __init__(self, profile: Profile, cwd: str) -> None:
        self._profile = profile
        self._cwd = cwd
        self._rpc = Rpc()

    def start(self) -> bytes:
        return self._call("initialize", {"protocolVersion": wire.PROTOCOL_VERSION,
                                         "clientInfo": {"name": "corral", "version": "0"},
                                         "clientCapabilities": _NO_WORK}).data

    def answer(self, line: bytes) -> list[str] | ProbeFailed | Write | None:
        """What one line from the agent calls for; ``ValueError`` for one that is not ACP."""
        if not line.lstrip().startswith(b"{"):
            return None  # not a message (a warning on stdout): read on
        try:
            return self._answer(self._rpc.receive(line))
        except ProtocolError as exc:
            raise ValueError(exc.message) from None

    def _answer(self, message: jsonrpc.Incoming | None) -> list[str] | ProbeFailed | Write | None:
        match message:
            case jsonrpc.Request(id=request_id, method=method):
                return Write(self._rpc.error(request_id, jsonrpc.METHOD_NOT_FOUND,
                                             f"{method} is not served while listing models").data)
            case jsonrpc.ErrorResponse(method=method, error=error):
                failure = classify(self._profile.name, method or "a request", error.code,
                                   error.message, error.data)
                return ProbeFailed(reason=f"{self._profile.name} {failure.message}")
            case jsonrpc.Response(method="initialize", result=raw):
                return self._initialized(jsonrpc.decode_as(raw, wire.InitializeResult, "initialize result"))
            case jsonrpc.Response(method="authenticate"):
                return self._new_session()
            case jsonrpc.Response(method="session/new", result=raw):
                opened = jsonrpc.decode_as(raw, wire.SessionResult, "session/new result")
                return wire.offered_models(opened.models, opened.config_options)
        return None

    def _initialized(self, caps: wire.InitializeResult) -> ProbeFailed | Write:
        if caps.protocol_version != wire.PROTOCOL_VERSION:
            return ProbeFailed(reason=f"{self._profile.name} speaks ACP {caps.protocol_version}, "
                                      f"corral speaks {wire.PROTOCOL_VERSION}")
        if self._profile.auth_method in {method.id for method in caps.auth_methods}:
            return self._call("authenticate", {"methodId": self._profile.auth_method})
        return self._new_session()

    def _new_session(self) -> Write:
        return self._call("session/new", {"cwd": self._cwd, "mcpServers": []})

    def _call(self, method: str, params: Any) -> Write:
        return Write(self._rpc.call(method, params)[1].data)
