"""A scripted language server (stdlib only) for the faults no real server shows on demand.

Run as ``python lsp_server.py [flags]``. It reports one error diagnostic (source ``fake``, code
``E1``) for every line containing ``ERROR`` and a hint for every line containing ``HINT``.
Text containing ``CRASH`` makes it exit at once (code 3); ``HANG`` makes it stop reading and
answering for good. Before it publishes anything it asks ``workspace/configuration``,
``client/registerCapability`` and ``window/workDoneProgress/create``, and waits for the answers
(as pyright and gopls do).

Flags: ``--no-version`` publishes without versions; ``--stale`` publishes the previous
version's diagnostics (with its old version) before each current one; ``--pull`` offers pull
diagnostics and never pushes; ``--children`` starts two sleeping children, one in its process
group and one in a session of its own (like node servers and their workers); ``--ignore-term``
ignores SIGTERM; ``--slow-start`` answers ``initialize`` after a second; ``--log FILE`` appends ``{"pid", "method"}`` per message received, and the
configuration answer as ``{"pid", "configuration"}``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from typing import Any

ARGS = set(sys.argv[1:])
LOG = sys.argv[sys.argv.index("--log") + 1] if "--log" in sys.argv else None
_ids = iter(range(1000, 10**9))


def log(entry: dict[str, Any]) -> None:
    if LOG:
        with open(LOG, "a") as handle:
            handle.write(json.dumps({"pid": os.getpid(), **entry}) + "\n")


def read() -> dict[str, Any] | None:
    length = None
    while True:
        line = sys.stdin.buffer.readline()
        if not line:
            return None
        line = line.strip()
        if not line:
            break
        name, _, value = line.partition(b":")
        if name.lower() == b"content-length":
            length = int(value)
    assert length is not None
    return json.loads(sys.stdin.buffer.read(length))


def write(message: dict[str, Any]) -> None:
    body = json.dumps({"jsonrpc": "2.0", **message}).encode()
    sys.stdout.buffer.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    sys.stdout.buffer.flush()


def call(method: str, params: Any) -> Any:
    """A request to the client; messages that arrive before its answer are queued."""
    rid = next(_ids)
    write({"id": rid, "method": method, "params": params})
    while True:
        message = read()
        if message is None:
            sys.exit(0)
        if message.get("id") == rid and "method" not in message:
            return message.get("result")
        BACKLOG.append(message)


BACKLOG: list[dict[str, Any]] = []


def diagnostics(text: str) -> list[dict[str, Any]]:
    out = []
    for number, line in enumerate(text.split("\n")):
        for marker, severity in (("ERROR", 1), ("HINT", 4)):
            col = line.find(marker)
            if col >= 0:
                out.append({"range": {"start": {"line": number, "character": col},
                                      "end": {"line": number, "character": col + len(marker)}},
                            "severity": severity, "source": "fake", "code": "E1",
                            "message": f"bad line {number + 1}"})
    return out


def publish(uri: str, version: int, text: str) -> None:
    params: dict[str, Any] = {"uri": uri, "diagnostics": diagnostics(text)}
    if "--no-version" not in ARGS:
        params["version"] = version
    write({"method": "textDocument/publishDiagnostics", "params": params})


def check(text: str) -> None:
    if "CRASH" in text:
        sys.exit(3)
    if "HANG" in text:
        while True:
            time.sleep(3600)


def main() -> None:
    if "--ignore-term" in ARGS:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if "--children" in ARGS:
        sleeper = [sys.executable, "-c", "import time; time.sleep(600)"]
        subprocess.Popen(sleeper)
        subprocess.Popen(sleeper, start_new_session=True)
    docs: dict[str, tuple[int, str]] = {}
    configured = False
    while True:
        message = BACKLOG.pop(0) if BACKLOG else read()
        if message is None:
            return
        method = message.get("method")
        log({"method": method})
        params = message.get("params") or {}
        if method == "initialize":
            if "--slow-start" in ARGS:
                time.sleep(1.0)
            caps: dict[str, Any] = {"textDocumentSync": 1}
            if "--pull" in ARGS:
                caps["diagnosticProvider"] = {"interFileDependencies": False,
                                              "workspaceDiagnostics": False}
            write({"id": message["id"], "result": {"capabilities": caps,
                                                   "serverInfo": {"name": "fake"}}})
        elif method == "initialized" and not configured:
            configured = True
            answer = call("workspace/configuration", {"items": [{"section": "fake"}]})
            log({"configuration": answer})
            call("client/registerCapability", {"registrations": []})
            call("window/workDoneProgress/create", {"token": "t1"})
        elif method in ("textDocument/didOpen", "textDocument/didChange"):
            doc = params["textDocument"]
            uri, version = doc["uri"], doc["version"]
            text = doc["text"] if method.endswith("didOpen") else params["contentChanges"][-1]["text"]
            check(text)
            previous = docs.get(uri)
            docs[uri] = (version, text)
            if "--pull" in ARGS:
                continue
            if "--stale" in ARGS and previous is not None:
                publish(uri, previous[0], previous[1])
            publish(uri, version, text)
        elif method == "textDocument/diagnostic":
            _, text = docs[params["textDocument"]["uri"]]
            write({"id": message["id"], "result": {"kind": "full", "items": diagnostics(text)}})
        elif method == "shutdown":
            write({"id": message["id"], "result": None})
        elif method == "exit":
            if "--ignore-term" not in ARGS:
                return
        elif "id" in message and method is not None:
            write({"id": message["id"], "error": {"code": -32601, "message": f"no {method}"}})


if __name__ == "__main__":
    main()
