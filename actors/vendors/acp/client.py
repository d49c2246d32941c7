"""The translator's half of ACP's client services (``fs/*``, ``terminal/*``): decide, hand out
``Work``, answer the agent when the work is done. Pure: the I/O is ``work_runner``'s.

* Reads, writes and terminal directories must be inside the session cwd and outside the
  daemon's state directory (``jobs.Confinement``: checked here on the path as written, and
  again by the work runner with symlinks resolved); anything else is refused with an error that says
  why, before any permission is asked.
* Every write is a ``tool`` event of kind ``edit`` (name ``write_text_file``, started when the
  write is let through, completed with its outcome), under the session's permission policy: a
  write is let through at once when the agent already asked for it (a permission allowed this
  turn for a tool call that names the path, or ``allow_always`` for an edit), else it becomes a
  ``permission`` event of kind ``edit`` first, which the session's policy or a client decides
  (``deny`` answers the agent with an error).
* Reads and terminals are not reported as tools: the agent reports the tool call that needed them.

Only when the session runs ``Work`` (``HarnessRequest.runs_work``) are the capabilities
advertised; otherwise the agent uses its own file access and shell, and any such request is
answered "method not found".
"""

from __future__ import annotations

import itertools
import os
from typing import Any

import msgspec

from actors.harness import Send, Work, WorkOutput
from protocol import jsonrpc
from protocol.events import Decision, Permission, Tool

from . import jobs, wire
from .rpc import Rpc

__all__ = ["ClientSide", "METHODS"]

METHODS = frozenset({"fs/read_text_file", "fs/write_text_file", "terminal/create",
                     "terminal/output", "terminal/wait_for_exit", "terminal/kill",
                     "terminal/release"})
DEFAULT_OUTPUT = 256 * 1024
_WRITE = "write_text_file"


class _Pending(msgspec.Struct):
    request_id: jsonrpc.RequestId
    write: jobs.WriteFile | None = None
    call_id: str | None = None


class ClientSide:
    """fs/terminal requests of one agent child."""

    def __init__(self, rpc: Rpc, root: str, *, enabled: bool,
                 missing_empty: bool, epoch: str, state_dir: str | None = None) -> None:
        self.enabled = enabled
        self._rpc = rpc
        self._root = os.path.normpath(root)
        self._confined = jobs.Confinement(self._root, state_dir, resolve=os.path.normpath)
        self._missing_empty = missing_empty
        self._epoch = epoch
        self._ids = itertools.count(1)
        self._running: dict[int, _Pending] = {}
        self._asks: dict[str, _Pending] = {}
        self._approved: set[str] = set()
        self._edits_always = False

    def capabilities(self) -> dict[str, Any]:
        """``clientCapabilities`` for ``initialize``."""
        if not self.enabled:
            return {"fs": {"readTextFile": False, "writeTextFile": False}, "terminal": False}
        return {"fs": {"readTextFile": True, "writeTextFile": True}, "terminal": True}

    def request(self, method: str, request_id: jsonrpc.RequestId,
                params: msgspec.Raw) -> list[WorkOutput]:
        """Serve one fs/terminal request."""
        if not self.enabled:
            return [self._error(request_id, jsonrpc.METHOD_NOT_FOUND,
                                f"corral does not serve {method} for this session")]
        match method:
            case "fs/read_text_file":
                read = jsonrpc.decode_as(params, wire.ReadTextFile, method)
                refusal = self._confined.refusal(read.path)
                if refusal is not None:
                    return [self._error(request_id, refusal.code, refusal.message)]
                return [self._work(request_id, jobs.ReadFile(
                    path=read.path, line=read.line, limit=read.limit,
                    missing_empty=self._missing_empty))]
            case "fs/write_text_file":
                return self._write(request_id, jsonrpc.decode_as(params, wire.WriteTextFile, method))
            case "terminal/create":
                create = jsonrpc.decode_as(params, wire.TerminalCreate, method)
                cwd = create.cwd or self._root
                refusal = self._confined.refusal(cwd)
                if refusal is not None:
                    return [self._error(request_id, refusal.code, refusal.message)]
                return [self._work(request_id, jobs.OpenTerminal(
                    command=create.command, args=create.args, cwd=cwd,
                    env={var.name: var.value for var in create.env},
                    limit=create.output_byte_limit or DEFAULT_OUTPUT))]
        tid = jsonrpc.decode_as(params, wire.TerminalRef, method).terminal_id
        job: jobs.Job
        match method:
            case "terminal/output":
                job = jobs.TerminalOutput(terminal_id=tid)
            case "terminal/wait_for_exit":
                job = jobs.WaitTerminal(terminal_id=tid)
            case "terminal/kill":
                job = jobs.CloseTerminal(terminal_id=tid)
            case _:
                job = jobs.CloseTerminal(terminal_id=tid, release=True)
        return [self._work(request_id, job)]

    def approve(self, paths: list[str], *, always: bool) -> None:
        """The agent's permission for an edit naming ``paths`` was allowed: its writes pass."""
        self._approved.update(os.path.normpath(p) for p in paths)
        self._edits_always = self._edits_always or always

    def decide(self, permission_id: str, decision: Decision) -> list[WorkOutput] | None:
        """Answer a write's ``permission``; ``None`` if the id is not one of ours."""
        ask = self._asks.pop(permission_id, None)
        if ask is None or ask.write is None:
            return None
        if decision == "deny":
            return [Tool(call_id=permission_id, name=_WRITE, kind="edit", phase="completed",
                         input={"path": ask.write.path}, output="denied", is_error=True),
                    self._error(ask.request_id, jobs.DENIED, "the user denied this write")]
        if decision == "allow_always":
            self._edits_always = True
        return self._let_write(ask.request_id, ask.write, permission_id)

    def finished(self, work_id: int, outcome: Any) -> list[WorkOutput]:
        """The agent's answer (and the write's ``completed`` tool event) for a finished job."""
        pending = self._running.pop(work_id, None)
        if pending is None:
            return []
        out: list[WorkOutput] = []
        if pending.write is not None and pending.call_id is not None:
            failed = isinstance(outcome, jobs.Failed)
            out.append(Tool(call_id=pending.call_id, name=_WRITE, kind="edit",
                            phase="completed", input={"path": pending.write.path},
                            output=outcome.message if failed else None, is_error=failed))
        if isinstance(outcome, jobs.Done):
            out.append(self._rpc.respond(pending.request_id, outcome.result))
        elif isinstance(outcome, jobs.Failed):
            out.append(self._error(pending.request_id, outcome.code, outcome.message))
        return out

    def withdraw(self) -> list[WorkOutput]:
        """Refuse every write still waiting for a decision (an interrupt or a close)."""
        out: list[WorkOutput] = [self._error(ask.request_id, jobs.DENIED, "cancelled")
                                 for ask in self._asks.values()]
        self._asks.clear()
        return out

    def turn_ended(self) -> None:
        """Permissions given for this turn's edits end with it."""
        self._approved.clear()

    def _write(self, request_id: jsonrpc.RequestId, write: wire.WriteTextFile) -> list[WorkOutput]:
        call_id = f"{self._epoch}:write:{request_id}"
        job = jobs.WriteFile(path=write.path, content=write.content)
        refusal = self._confined.refusal(write.path)
        if refusal is not None:
            return [Tool(call_id=call_id, name=_WRITE, kind="edit", phase="started",
                         input={"path": write.path}),
                    Tool(call_id=call_id, name=_WRITE, kind="edit", phase="completed",
                         input={"path": write.path}, output=refusal.message, is_error=True),
                    self._error(request_id, refusal.code, refusal.message)]
        if self._edits_always or os.path.normpath(write.path) in self._approved:
            return self._let_write(request_id, job, call_id)
        self._asks[call_id] = _Pending(request_id=request_id, write=job, call_id=call_id)
        return [Permission(permission_id=call_id, tool=_WRITE, kind="edit",
                           input={"path": write.path, "content": write.content[:2000]},
                           options=["allow", "deny", "allow_always"])]

    def _let_write(self, request_id: jsonrpc.RequestId, job: jobs.WriteFile,
                   call_id: str) -> list[WorkOutput]:
        work = self._work(request_id, job, call_id)
        return [Tool(call_id=call_id, name=_WRITE, kind="edit", phase="started",
                     input={"path": job.path}), work]

    def _work(self, request_id: jsonrpc.RequestId, job: jobs.Job,
              call_id: str | None = None) -> Work:
        work_id = next(self._ids)
        write = job if isinstance(job, jobs.WriteFile) else None
        self._running[work_id] = _Pending(request_id=request_id, write=write, call_id=call_id)
        return Work(id=work_id, job=job)

    def _error(self, request_id: jsonrpc.RequestId, code: int, message: str) -> Send:
        return self._rpc.error(request_id, code, message)
