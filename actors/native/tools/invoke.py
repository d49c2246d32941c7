"""How every tool call is run: budget check, error mapping, clipping, and accounting.

Also the bridge from asyncio to blocking work: file tools run in a thread (a 5 MiB read or a
tree walk must not stall the worker's event loop). Cancelling the awaiting task sets a stop flag
the walk checks, and abandons the result; a write in progress finishes (it is atomic anyway).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from typing import Concatenate, ParamSpec, TypeVar

import msgspec

from .bounded import clip
from .errors import ToolError, ToolErrorCode
from .outcome import ToolOutcome
from .workspace import Workspace

P = ParamSpec("P")
T = TypeVar("T")


async def guarded(ws: Workspace, body: Callable[[], Awaitable[ToolOutcome]]) -> ToolOutcome:
    """Run one tool body; never raises except ``asyncio.CancelledError`` (and BaseExceptions).

    A spent session budget answers ``output_limit`` without running the body. The text is cut to
    the per-call limit (or what is left of the session's budget) and counted against the session.
    """
    if ws.output_left <= 0:
        return ToolOutcome.error(
            ToolErrorCode.OUTPUT_LIMIT,
            f"this session's tool output budget ({ws.limits.session_output_bytes} bytes) is spent; "
            "no more tool calls can be answered until the conversation is compacted.",
        )
    try:
        outcome = await body()
    except ToolError as exc:
        outcome = ToolOutcome.from_error(exc)
    except OSError as exc:
        where = f": {exc.filename}" if exc.filename else ""
        outcome = ToolOutcome.error(ToolErrorCode.IO_ERROR, f"{exc.strerror or exc}{where}")
    except Exception as exc:  # a bug of ours must still reach the model as a result, not a crash
        outcome = ToolOutcome.error(ToolErrorCode.INTERNAL, f"internal error: {type(exc).__name__}: {exc}")
    allowance = min(ws.limits.call_output_bytes, ws.output_left)
    text, cut = clip(outcome.text, allowance)
    # Cut short by the session's budget: that budget is now spent, whatever the marker saved.
    ws.output_used += allowance if cut and allowance == ws.output_left else len(text.encode())
    if cut:
        outcome = msgspec.structs.replace(outcome, text=text, truncated=True)
    return outcome


async def in_thread(
    fn: Callable[Concatenate[threading.Event, P], T], *args: P.args, **kwargs: P.kwargs
) -> T:
    """Run ``fn(stop, *args)`` in a thread; on cancellation set ``stop`` and re-raise."""
    stop = threading.Event()
    try:
        return await asyncio.to_thread(fn, stop, *args, **kwargs)
    except asyncio.CancelledError:
        stop.set()
        raise
