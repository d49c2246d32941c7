"""One provider-neutral script for every fake model: what "the model" does on each call.

A script is a list of steps, one per model request, in order. A step is a ``Turn`` (the model
answers: optional thought, text and tool calls, with the usage it reports) or a ``Fail`` (an HTTP
error status with the provider's own error body). The same script is rendered on the wire by
``tests.fakes.model_server`` for all four APIs (OpenAI Responses, Chat Completions, Anthropic
Messages, Gemini) and played in process by ``tests.fakes.scripted_llm``, so a test can say once
"the model calls ``write`` with these arguments, then answers ``done``"::

    script = [call("write", path="a.txt", content="hi"), say("done")]

Usage is given the way corral reports it (``input_tokens`` without cached ones, cache reads and
writes apart); each renderer converts it to its API's own accounting (OpenAI and Gemini count
cached tokens inside the prompt total, Anthropic reports them beside it).

A script file (``--script`` of the standalone server) is a JSON array of steps tagged by
``type``: ``[{"type": "turn", "calls": [{"name": "write", "args": {"path": "a"}}]},
{"type": "turn", "text": "done"}, {"type": "fail", "status": 429, "retry_after": 0}]``.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

__all__ = ["Call", "Fail", "Step", "Turn", "call", "custom", "fail", "hang", "load_steps", "say"]


class Call(msgspec.Struct, kw_only=True, frozen=True):
    """One tool call; ``id`` defaults to a deterministic ``call_<request>_<index>``."""

    name: str
    args: dict[str, Any] = {}
    id: str | None = None
    input: str | None = None
    """A freeform tool's text input (Codex's ``apply_patch``): on the Responses route the call is
    a ``custom_tool_call`` (other routes send ``args``)."""


class Turn(msgspec.Struct, tag="turn", kw_only=True, frozen=True):
    """A successful model answer, streamed in ``chunk``-character deltas.

    ``hang`` streams up to the first text (or thought) delta and then holds the response open
    until the client goes away or the server's ``release()`` is called: an interrupt target.
    ``stop`` is the finish reason: ``"end"`` (or tool calls) or ``"max_tokens"``. ``error``
    ends the stream after its deltas with the API's in-stream error event of that kind instead
    of completing (HTTP status 200 already sent).
    """

    text: str = ""
    thought: str = ""
    calls: list[Call] = []
    input_tokens: int = 20
    output_tokens: int = 5
    reasoning_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    chunk: int = 4
    stop: Literal["end", "max_tokens"] = "end"
    hang: bool = False
    delay: float = 0.0
    error: Literal["overloaded", "rate_limit", "server_error"] | None = None


class Fail(msgspec.Struct, tag="fail", kw_only=True, frozen=True):
    """An HTTP error status with the API's error body; ``retry_after`` adds that header (seconds)."""

    status: int
    message: str | None = None
    retry_after: float | None = None
    code: str | None = None


Step = Turn | Fail
"""Every step kind."""


def say(text: str, **kw: Any) -> Turn:
    """The model answers ``text``."""
    return Turn(text=text, **kw)


def call(name: str, /, **args: Any) -> Turn:
    """The model calls tool ``name`` with ``args`` (and says nothing)."""
    return Turn(calls=[Call(name=name, args=args)])


def custom(name: str, text: str, /) -> Turn:
    """The model calls freeform tool ``name`` with ``text`` (and says nothing)."""
    return Turn(calls=[Call(name=name, input=text)])


def fail(status: int, **kw: Any) -> Fail:
    """The API answers HTTP ``status``."""
    return Fail(status=status, **kw)


def hang(text: str = "still thinking") -> Turn:
    """Stream the first delta of ``text``, then hold the response open."""
    return Turn(text=text, hang=True)


_STEPS = msgspec.json.Decoder(list[Step])


def load_steps(raw: bytes) -> list[Step]:
    """Decode a JSON array of steps."""
    return _STEPS.decode(raw)
