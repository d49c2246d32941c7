"""Benchmark: diagnostics after a write, through the LSP actor vs ruff's own time beside it.

Run ``python -m tests.bench.bench_lsp_diagnostics [ROUNDS]``. Two ``ruff server`` processes
check the same file, alternating between a text with an undefined name and its fix:

* **through corral**: ``LanguageServers.diagnostics_after_write`` (actor, connection, core,
  report), timed around the call;
* **ruff's own**: a bare blocking stdio client in this process (no trio, no corral code)
  sending the same frames (``didChange`` with the full text, then ``textDocument/diagnostic``,
  the pull model ruff offers) and timing until the answer is read.

Rounds alternate between the two so that machine noise falls on both. The target: the median
added by corral is at most 50 ms.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import trio

from actors.lsp.config import LspConfig, LspServerConfig
from actors.lsp.service import LanguageServers

ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 200
TEXTS = ("import os\nprint(undefined_name)\n", "import os\nprint(os.name)\n")


class DirectRuff:
    """The smallest LSP client that can time ruff: blocking pipes, json, Content-Length."""

    def __init__(self, root: Path, path: Path) -> None:
        self.proc = subprocess.Popen(["ruff", "server"], cwd=root, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     start_new_session=True)
        self.uri = path.as_uri()
        self.ids = iter(range(1, 10**9))
        caps = {"textDocument": {"publishDiagnostics": {"versionSupport": True},
                                 "diagnostic": {"dynamicRegistration": False}}}
        self.call("initialize", {"processId": os.getpid(), "rootUri": root.as_uri(),
                                 "capabilities": caps})
        self.send({"method": "initialized", "params": {}})
        self.version = 1
        self.send({"method": "textDocument/didOpen", "params": {"textDocument": {
            "uri": self.uri, "languageId": "python", "version": 1, "text": TEXTS[1]}}})

    def check(self, text: str) -> tuple[float, int]:
        """Seconds from the change to its diagnostics, and how many came back."""
        start = time.perf_counter()
        self.version += 1
        self.send({"method": "textDocument/didChange", "params": {
            "textDocument": {"uri": self.uri, "version": self.version},
            "contentChanges": [{"text": text}]}})
        result = self.call("textDocument/diagnostic", {"textDocument": {"uri": self.uri}})
        return time.perf_counter() - start, len(result["items"])

    def call(self, method: str, params: Any) -> Any:
        rid = next(self.ids)
        self.send({"id": rid, "method": method, "params": params})
        while True:
            message = self.read()
            if message.get("id") == rid and "method" not in message:
                return message["result"]
            if "id" in message and "method" in message:  # a server request: answer null
                self.send({"id": message["id"], "result": None})

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        body = json.dumps({"jsonrpc": "2.0", **message}).encode()
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()

    def read(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        length = 0
        while (line := self.proc.stdout.readline().strip()):
            name, _, value = line.partition(b":")
            if name.lower() == b"content-length":
                length = int(value)
        message: dict[str, Any] = json.loads(self.proc.stdout.read(length))
        return message

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait()


def _summary(label: str, values: list[float]) -> str:
    ms = sorted(v * 1000 for v in values)
    p90 = ms[int(len(ms) * 0.9) - 1]
    return f"{label:<28} p50 {statistics.median(ms):7.2f} ms   p90 {p90:7.2f} ms   mean {statistics.fmean(ms):7.2f} ms"


async def main() -> None:
    if shutil.which("ruff") is None:
        sys.exit("ruff is not installed (pip install ruff==0.17.6)")
    root = Path(tempfile.mkdtemp(prefix="bench-lsp-"))
    (root / "pyproject.toml").write_text("[project]\nname = 'bench'\nversion = '0'\n")
    ours_path, direct_path = root / "ours.py", root / "direct.py"
    off = {sid: LspServerConfig(enabled=False) for sid in ("pyright", "typescript", "gopls", "clangd")}
    lsp = LanguageServers(LspConfig(servers=off), None)
    direct = DirectRuff(root, direct_path)
    ours: list[float] = []
    theirs: list[float] = []
    try:
        async with trio.open_nursery() as nursery:
            await nursery.start(lsp.run)
            await lsp.diagnostics_after_write(str(root), str(ours_path), TEXTS[1])  # warm-up
            for _ in range(10):
                direct.check(TEXTS[0])
            for i in range(ROUNDS):
                text = TEXTS[i % 2]
                start = time.perf_counter()
                report = await lsp.diagnostics_after_write(str(root), str(ours_path), text)
                ours.append(time.perf_counter() - start)
                seconds, count = direct.check(text)
                theirs.append(seconds)
                if len(report.diagnostics) != count or report.timed_out:
                    raise SystemExit(f"round {i}: corral saw {len(report.diagnostics)}, ruff {count}")
            nursery.cancel_scope.cancel()
    finally:
        direct.close()
        shutil.rmtree(root, ignore_errors=True)
    added = [a - b for a, b in zip(ours, theirs)]
    print(f"diagnostics after a write, ruff server, {ROUNDS} rounds (alternating error / fix)")
    print(_summary("ruff's own (bare client)", theirs))
    print(_summary("through corral's actor", ours))
    print(_summary("added by corral (paired)", added))
    extra = statistics.median(ours) - statistics.median(theirs)
    verdict = "within" if extra <= 0.050 else "OVER"
    print(f"median added: {extra * 1000:.2f} ms ({verdict} the 50 ms target)")


if __name__ == "__main__":
    trio.run(main)
