"""A minimal MCP server on stdio (JSON-RPC lines) with one tool, ``secret_check``.

The tool reports whether the environment variable ``ECHO_TOKEN`` holds ``EXPECTED``: the proof
that a secret passed to Codex through ``env_vars`` reached the MCP server without ever being
written into argv. Run as ``python mcp_echo.py``.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

EXPECTED = "t0ps3cret"


def _send(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", **message}) + "\n")
    sys.stdout.flush()


def main() -> None:
    for line in sys.stdin:
        message = json.loads(line)
        request_id, method = message.get("id"), message.get("method")
        if method == "initialize":
            _send({"id": request_id, "result": {
                "protocolVersion": message["params"]["protocolVersion"],
                "capabilities": {"tools": {}}, "serverInfo": {"name": "echo", "version": "1"}}})
        elif method == "tools/list":
            _send({"id": request_id, "result": {"tools": [{
                "name": "secret_check", "description": "Says whether the secret arrived",
                "inputSchema": {"type": "object", "properties": {"word": {"type": "string"}}}}]}})
        elif method == "tools/call":
            ok = os.environ.get("ECHO_TOKEN") == EXPECTED
            word = message["params"].get("arguments", {}).get("word")
            _send({"id": request_id, "result": {"content": [
                {"type": "text", "text": f"token ok={ok} word={word}"}]}})
        elif request_id is not None:
            _send({"id": request_id, "error": {"code": -32601, "message": f"no {method}"}})


if __name__ == "__main__":
    main()
