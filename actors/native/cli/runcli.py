"""``corral run`` and ``corral probe``: the native one-shot run and tool-calling probe as commands.

Both run **in this process**, with or without a daemon: a one-shot run has no session to keep,
nothing to supervise and nobody else to show it to, so going through the daemon would add a
session, a worker process and a log for nothing. They find the provider the way sessions do:
the ``[providers.*]`` tables of the configuration file the daemon reads (``--config FILE``,
else the default file) and the key from the environment (this process's, where a session would
look in the daemon's). A daemon started with another ``--config`` is not consulted.

``run`` prints the final text on stdout and exits 0 on ``ok``; otherwise the text it has (maybe
partial), then ``corral: MESSAGE`` and ``outcome: CODE`` on stderr, and exit 1. ``--json``
prints ``{text, outcome, usage, message}`` instead (same exit codes). Progress lines go to
stderr when stderr is a terminal. ``probe`` exits 0 when the model drove the ping tool, else 1.

ADK and the SDKs are imported when a command runs, not when the parser is built.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from supervisor import logformat

if TYPE_CHECKING:
    from ..providers import ProviderTable

__all__ = ["ProvidersLoader", "add_commands"]

ProvidersLoader = Callable[[str | None], Mapping[str, "ProviderTable"]]
"""The ``[providers]`` tables of the config file at the path (``None``: the default file)."""

CommandAdder = Callable[[str, Callable[[argparse.Namespace], int | None], str],
                        argparse.ArgumentParser]


def add_commands(command: CommandAdder, providers: ProvidersLoader) -> None:
    """Add ``run`` and ``probe`` to the ``corral`` parser (``command`` makes a subcommand)."""
    sub = command("run", lambda args: _run(args, providers),
                  "Run one prompt once, bounded, without a session; prints the final text.")
    sub.add_argument("prompt", metavar="PROMPT", nargs="+")
    sub.add_argument("--harness", choices=("native",), default="native",
                     help="only native runs one-shot (default)")
    sub.add_argument("--model", required=True, metavar="PROVIDER/NAME")
    sub.add_argument("--cwd", help="the directory the tools work in (default: the current one)")
    sub.add_argument("--json", action="store_true", help="print {text, outcome, usage} as JSON")
    sub.add_argument("--config", metavar="FILE", help="configuration file ([providers.*])")
    sub.add_argument("--tools", metavar="NAMES", help="comma-separated: exactly these tools "
                                                      "(default: all coding tools; '' for none)")
    sub.add_argument("--max-model-calls", type=int, default=16, metavar="N")
    sub.add_argument("--max-tool-calls", type=int, default=64, metavar="N")
    sub.add_argument("--max-output-tokens", type=int, default=8192, metavar="N",
                     help="per model request")
    sub.add_argument("--max-text-bytes", type=int, default=64 * 1024, metavar="N",
                     help="bound on the returned text")
    sub = command("probe", lambda args: _probe(args, providers),
                  "Check that a model can call tools (one request, nothing runs).")
    sub.add_argument("model", metavar="PROVIDER/NAME")
    sub.add_argument("--config", metavar="FILE", help="configuration file ([providers.*])")
    sub.add_argument("--json", action="store_true", help="print {text, outcome, usage} as JSON")


def _run(args: argparse.Namespace, providers: ProvidersLoader) -> int:
    from .oneshot import RunLimits, RunResult, run_once

    limits = RunLimits(max_model_calls=args.max_model_calls, max_tool_calls=args.max_tool_calls,
                       max_output_tokens=args.max_output_tokens,
                       max_text_bytes=args.max_text_bytes)
    tools = None if args.tools is None else [t.strip() for t in args.tools.split(",") if t.strip()]
    cwd = str(Path(args.cwd or os.getcwd()).absolute())
    progress = _progress if sys.stderr.isatty() else None

    async def go(llm: Any) -> RunResult:
        return await run_once(llm, " ".join(args.prompt), cwd=cwd, tools=tools, limits=limits,
                              progress=progress)

    return _with_model(args, args.model, providers, go)


def _probe(args: argparse.Namespace, providers: ProvidersLoader) -> int:
    from .oneshot import probe

    code = _with_model(args, args.model, providers, probe, text=False)
    if code == 0 and not args.json:
        print(f"{args.model} can call tools")
    return code


def _with_model(args: argparse.Namespace, spec: str, providers: ProvidersLoader,
                body: Callable[[Any], Any], *, text: bool = True) -> int:
    """Build the model for ``spec``, run ``body`` on it, close it, and report the result."""
    from ..models import ModelError, ProviderConfig, build_model, close_model
    from ..providers import ModelSpecError, resolve
    from .oneshot import RunResult

    # Warnings on stderr, one line each; ADK's and the SDKs' tracebacks of the failure this
    # command reports in its own line only under --debug / CORRAL_DEBUG (``logformat``).
    logging.basicConfig(level=logging.WARNING, handlers=[
        logformat.handler(logging.StreamHandler(sys.stderr), "%(levelname)s %(name)s: %(message)s")])
    try:
        settings = resolve(spec, providers=providers(args.config), daemon_env=os.environ)
        llm = build_model(msgspec.convert(msgspec.structs.asdict(settings), ProviderConfig))
    except (ModelSpecError, ModelError, ValueError) as exc:
        result = RunResult(outcome="bad_request", message=getattr(exc, "message", str(exc)))
    else:
        async def bounded() -> RunResult:
            try:
                outcome: RunResult = await body(llm)
                return outcome
            finally:
                await close_model(llm)

        import asyncio  # the one-shot runs on asyncio, as ADK does; the daemon never loads it

        result = asyncio.run(bounded())
    if args.json:
        print(msgspec.json.encode(result).decode())
    else:
        if text and result.text:
            print(result.text)
        if not result.ok:
            print(f"corral: {result.message}", file=sys.stderr)
            print(f"outcome: {result.outcome}", file=sys.stderr)
    return 0 if result.ok else 1


def _progress(line: str) -> None:
    print(f"· {line}", file=sys.stderr, flush=True)
