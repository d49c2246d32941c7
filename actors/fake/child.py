"""The default fake harness child: answers each prompt with a short streamed reply.

Run as ``python -m actors.fake.child``. It reads command lines (``protocol.fake``) on stdin and
writes event lines on stdout. A few prompts drive behaviours tests and demos need:

* ``/ask CMD``   asks permission for a ``bash`` tool call, then runs (or refuses) it;
* ``/tool CMD``  runs a ``bash`` tool call without asking;
* ``/slow N``    streams N words 0.2 s apart, taking steers and interrupts meanwhile;
* ``/crash``     exits with status 3 at once;
* ``/fail``      ends the turn with an error result.
Anything else is echoed back as ``echo: TEXT`` in (at most) three deltas.
"""

from __future__ import annotations

import os
import queue
import subprocess
import sys
import threading
from typing import Any

import msgspec

from protocol.fake import (
    FakeCommand,
    FakeInterrupt,
    FakePermissionDecision,
    FakeSetModel,
    FakeSteer,
    FakeUser,
    decode_command,
)

_encoder = msgspec.json.Encoder()


def main() -> int:
    """Serve prompts until stdin closes."""
    inbox: queue.Queue[FakeCommand | None] = queue.Queue()
    threading.Thread(target=_read_stdin, args=(inbox,), daemon=True).start()
    child = _Child(inbox)
    child.emit(
        type="init", vendor_session_id=os.environ.get("CORRAL_FAKE_RESUME", f"fake-{os.getpid()}"),
        model=child.model, cwd=os.getcwd(), tools=["bash"],
    )
    return child.serve()


class _Child:
    def __init__(self, inbox: queue.Queue[FakeCommand | None]) -> None:
        self.inbox = inbox
        self.model = os.environ.get("CORRAL_FAKE_MODEL", "fake-1")
        self.turns = 0
        self.permissions = 0

    def emit(self, **event: Any) -> None:
        sys.stdout.buffer.write(_encoder.encode(event) + b"\n")
        sys.stdout.buffer.flush()

    def serve(self) -> int:
        while (command := self.inbox.get()) is not None:
            match command:
                case FakeUser(text=text) | FakeSteer(text=text):
                    self.turn(text)
                case FakeSetModel(model=model):
                    self.model = model
                case FakePermissionDecision() | FakeInterrupt():
                    pass  # nothing is pending between turns
        return 0

    def turn(self, text: str) -> None:
        self.turns += 1
        word, _, rest = text.partition(" ")
        if word == "/crash":
            os._exit(3)
        elif word == "/ask":
            self.ask(rest)
        elif word == "/tool":
            self.run_tool(f"t{self.turns}", rest)
            self.result("end_turn")
        elif word == "/slow":
            self.slow(int(rest or "10"))
        elif word == "/fail":
            self.emit(type="error", code="fake.turn_failed", message="the turn failed", **{"class": "unknown"})
            self.result("error", is_error=True)
        else:
            reply = f"echo: {text}"
            third = max(1, -(-len(reply) // 3))
            for start in range(0, len(reply), third):
                self.emit(type="assistant", text=reply[start : start + third], delta=True)
            self.result("end_turn")

    def ask(self, command: str) -> None:
        self.permissions += 1
        pid = f"p{self.permissions}"
        self.emit(type="permission", permission_id=pid, tool="bash", kind="exec",
                  input={"command": command}, options=["allow", "deny", "allow_always"])
        while True:
            msg = self.inbox.get()
            if msg is None:
                sys.exit(0)
            if isinstance(msg, FakeInterrupt):
                self.result("interrupted")
                return
            if isinstance(msg, FakePermissionDecision) and msg.permission_id == pid:
                break
        if msg.decision in ("allow", "allow_always"):
            self.run_tool(f"t{self.turns}", command)
        else:
            self.emit(type="tool", call_id=f"t{self.turns}", name="bash", kind="exec",
                      phase="completed", input={"command": command}, output="denied by user",
                      is_error=True)
        self.result("end_turn")

    def run_tool(self, call_id: str, command: str) -> None:
        self.emit(type="tool", call_id=call_id, name="bash", kind="exec", phase="started",
                  input={"command": command})
        proc = subprocess.run(["/bin/sh", "-c", command], capture_output=True, text=True)
        self.emit(type="tool", call_id=call_id, name="bash", kind="exec", phase="completed",
                  input={"command": command}, output=proc.stdout + proc.stderr,
                  is_error=proc.returncode != 0)

    def slow(self, words: int) -> None:
        for n in range(words):
            self.emit(type="assistant", text=f"w{n} ", delta=True)
            try:
                msg = self.inbox.get(timeout=0.2)
            except queue.Empty:
                continue
            if msg is None:
                sys.exit(0)
            if isinstance(msg, FakeInterrupt):
                self.result("interrupted")
                return
            if isinstance(msg, FakeSteer):
                self.emit(type="assistant", text=f"[steered: {msg.text}] ", delta=True)
            if isinstance(msg, FakeSetModel):
                self.model = msg.model
        self.result("end_turn")

    def result(self, stop_reason: str, *, is_error: bool = False) -> None:
        self.emit(type="result", stop_reason=stop_reason, is_error=is_error,
                  usage={"input_tokens": 10 * self.turns, "output_tokens": 3})


def _read_stdin(inbox: queue.Queue[FakeCommand | None]) -> None:
    for line in sys.stdin.buffer:
        if line.strip():
            try:
                inbox.put(decode_command(line))
            except msgspec.DecodeError:
                continue
    inbox.put(None)


if __name__ == "__main__":
    sys.exit(main())
