"""git as a supervised process child: bounded in time and output, in a clean environment.

Every git command the daemon runs goes through ``Git.run``: it is spawned with
``supervisor.proc.open_child`` (its own process group, a crash-ledger row, the bounded close
sequence), its stdin closed at once, its stdout read in chunks up to a byte limit (the rest is
counted, not kept), and the whole run bounded by ``timeout``: past it the group is killed and
``Timeout`` raised.

The environment and configuration are made predictable, because the daemon runs git on the
user's repositories and parses what it prints:

* every ``GIT_*`` variable of the daemon's environment is dropped (a stray ``GIT_DIR`` or
  ``GIT_INDEX_FILE`` would aim every command at the wrong repository or index);
* ``LC_ALL=C`` (messages corral parses), no terminal prompts, ``true`` as every editor,
  ``GIT_OPTIONAL_LOCKS=0`` (a read never rewrites the index another process may be writing);
* ``-c core.hooksPath=/dev/null``: no hook runs for corral's own commands and commits. A
  ``pre-commit`` hook that reformats or refuses, a ``post-checkout`` hook that installs
  things, would make ``worktree add``, a commit or a merge do more, or less, than the request
  said, on the daemon's clock and outside the session's permissions. The agent's own git
  commands inside a worktree still run the hooks;
* ``core.fsmonitor=false``, ``gc.auto=0``, ``maintenance.auto=false``: git would otherwise start
  background daemons (``fsmonitor--daemon``, a detached ``gc``) that leave the process group
  and outlive the command; ``commit.gpgSign=false``: a signing prompt has no terminal here.

The user's identity and other configuration are kept; when git has no identity at all,
corral's commits are made as ``corral <corral@localhost>`` (see ``identity_env``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

import msgspec
import trio

from protocol.errors import GitFailed, LaunchFailed, Timeout
from supervisor.ledger.store import Ledger
from supervisor.proc.spec import ProcessSpec
from supervisor.threadimport import load

__all__ = ["FALLBACK_IDENTITY", "Git", "GitOutput", "identity_env"]

_CONFIG = (
    "core.hooksPath=/dev/null", "core.fsmonitor=false", "gc.auto=0", "maintenance.auto=false",
    "commit.gpgSign=false", "tag.gpgSign=false", "color.ui=false", "core.pager=cat",
)
_ENV = {"LC_ALL": "C", "LANGUAGE": None, "GIT_TERMINAL_PROMPT": "0", "GIT_EDITOR": "true",
        "GIT_SEQUENCE_EDITOR": "true", "GIT_PAGER": "cat", "GIT_OPTIONAL_LOCKS": "0",
        "GIT_ASKPASS": None, "SSH_ASKPASS": None}
_CHUNK = 64 * 1024
_OUTPUT_LIMIT = 16 * 1024 * 1024
_KILL_GRACE = 2.0

FALLBACK_IDENTITY: Mapping[str, str] = {
    "GIT_AUTHOR_NAME": "corral", "GIT_AUTHOR_EMAIL": "corral@localhost",
    "GIT_COMMITTER_NAME": "corral", "GIT_COMMITTER_EMAIL": "corral@localhost",
}
"""Who corral's commits are by when git knows no identity for the user."""


class GitOutput(msgspec.Struct, frozen=True, kw_only=True):
    """How one git command ended: its exit ``code``, the first ``limit`` bytes of stdout
    (``out``), how many more there were (``dropped``), and the last lines of its stderr."""

    code: int
    out: bytes
    dropped: int = 0
    err: list[str] = []

    @property
    def text(self) -> str:
        """stdout as text, without the final newline."""
        return self.out.decode("utf-8", "replace").removesuffix("\n")

    def message(self) -> str:
        """git's own explanation: its last stderr lines, or its exit code."""
        lines = [line for line in self.err if line.strip()]
        return " ".join(lines[-3:]) if lines else f"exit status {self.code}"


class Git:
    """Runs git commands as process children recorded in ``ledger`` (None in unit tests)."""

    def __init__(self, *, ledger: Ledger | None = None, binary: str = "git",
                 timeout: float = 120.0) -> None:
        self.ledger = ledger
        self.binary = binary
        self.timeout = timeout

    async def run(self, cwd: str, *args: str, env: Mapping[str, str | None] | None = None,
                  limit: int = _OUTPUT_LIMIT, check: bool = True) -> GitOutput:
        """Run ``git <args>`` in ``cwd``; its output once it has exited.

        ``check``: a non-zero exit raises ``GitFailed`` with git's message; else the caller
        reads ``code``. Raises ``Timeout`` after ``timeout`` seconds (the group is killed
        first), ``GitFailed`` if git cannot be started or is killed. Cancellation kills the
        group too (the close sequence is shielded and bounded).
        """
        spec = ProcessSpec(
            key=f"git:{args[0] if args else ''}", kind="git", cwd=cwd,
            argv=[self.binary, *(arg for item in _CONFIG for arg in ("-c", item)), *args],
            env={**_clean_env(), **(env or {})}, framing="raw", frame_limit=_CHUNK,
            shutdown=_KILL_GRACE, stderr_lines=20)
        output: GitOutput | None = None
        try:
            with trio.move_on_after(self.timeout):
                output = await self._run(spec, limit)
        except LaunchFailed as exc:
            raise GitFailed(f"cannot run git ({self.binary!r}): {exc.message}", data=exc.data) from None
        if output is None:
            raise Timeout(f"git {_command(args)} took longer than {self.timeout:g} s and was killed",
                          data={"cwd": cwd})
        if check and output.code != 0:
            raise GitFailed(f"git {_command(args)} failed: {output.message()}",
                            data={"cwd": cwd, "exit_code": output.code})
        return output

    async def _run(self, spec: ProcessSpec, limit: int) -> GitOutput:
        await load("supervisor.proc.child")  # off the event loop, with the first git command
        from supervisor.proc.child import open_child

        async with open_child(spec, ledger=self.ledger) as child:
            await child.close_stdin()
            kept = bytearray()
            dropped = 0
            async for chunk in child.frames():
                room = limit - len(kept)
                kept += chunk[:room]
                dropped += max(0, len(chunk) - room)
            status = await child.wait()
        if status.exit_code is None:
            raise GitFailed(f"git {_command(spec.argv[1 + 2 * len(_CONFIG):])} was killed "
                            f"({status.signal or status.reason})")
        return GitOutput(code=status.exit_code, out=bytes(kept), dropped=dropped,
                         err=child.stderr_tail())


async def identity_env(git: Git, cwd: str) -> dict[str, str]:
    """Extra environment for a commit in ``cwd``: none when git knows who the user is, else
    ``FALLBACK_IDENTITY`` (git refuses to commit without a name and an e-mail address)."""
    found = await git.run(cwd, "var", "GIT_COMMITTER_IDENT", check=False)
    return {} if found.code == 0 else dict(FALLBACK_IDENTITY)


def _clean_env() -> dict[str, str | None]:
    dropped: dict[str, str | None] = {name: None for name in os.environ if name.startswith("GIT_")}
    return {**dropped, **_ENV}


def _command(args: Sequence[str]) -> str:
    return " ".join(args[:2]) if args else ""
