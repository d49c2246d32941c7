"""One session's tool state: its root directory, limits, read records and output budget.

Every path a tool touches goes through ``Workspace.resolve``, which resolves symlinks and
refuses anything that lands outside the root. That makes ``..``, absolute paths elsewhere and
symlinks pointing out all the same refusal. (A symlink swapped in between the check and the use
is not defended against; the tools guard the model's mistakes, not a hostile local user.)
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Mapping
from pathlib import Path

from .errors import ToolError, ToolErrorCode
from .reads import ReadRecords
from .limits import Limits


class Workspace:
    """The per-session context every tool function takes as its first argument.

    ``root`` is resolved once and must be an existing directory. ``env`` is the environment
    bash commands get (``None``: this process's). One ``Workspace`` per session; it is safe to
    use from several asyncio tasks of one loop (file mutations are serialized by a lock).
    """

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        limits: Limits | None = None,
        env: Mapping[str, str] | None = None,
        reads: ReadRecords | None = None,
        confine: Callable[[], None] | None = None,
    ) -> None:
        self.root = Path(root).resolve(strict=True)
        if not self.root.is_dir():
            raise NotADirectoryError(f"workspace root {self.root} is not a directory")
        self.limits = limits if limits is not None else Limits()
        self.env = dict(env) if env is not None else None
        self.reads = reads if reads is not None else ReadRecords()
        self.confine = confine
        """A ``preexec_fn`` each bash command gets (a sandbox's TCP rules), or None."""
        self.output_used = 0
        # write/edit run in threads; one at a time so read-check-replace is not interleaved.
        self.mutation_lock = threading.Lock()

    def resolve(self, path: str) -> Path:
        """The absolute, symlink-free form of ``path`` (relative to the root, or absolute).

        Raises ``ToolError`` ``path_outside_workspace`` when it is not inside the root.
        """
        if "\x00" in path:
            raise ToolError(ToolErrorCode.INVALID_ARGUMENTS, "path contains a NUL byte")
        candidate = Path(path) if os.path.isabs(path) else self.root / path
        try:
            resolved = candidate.resolve(strict=False)
        except (OSError, RuntimeError) as exc:  # RuntimeError: a symlink loop
            raise ToolError(ToolErrorCode.IO_ERROR, f"cannot resolve {path}: {exc}") from exc
        if resolved == self.root or resolved.is_relative_to(self.root):
            return resolved
        lexical = Path(os.path.normpath(candidate))
        how = "through a symlink " if lexical == self.root or lexical.is_relative_to(self.root) else ""
        raise ToolError(
            ToolErrorCode.PATH_OUTSIDE_WORKSPACE,
            f"{path} leads {how}outside the workspace {self.root}; only paths inside it can be used.",
        )

    def display(self, path: Path) -> str:
        """``path`` (inside the root) as the model should name it: relative, ``/``-separated."""
        rel = path.relative_to(self.root).as_posix()
        return rel if rel else "."

    @property
    def output_left(self) -> int:
        """Bytes of tool text this session may still be shown."""
        return max(self.limits.session_output_bytes - self.output_used, 0)

    def reset_output_budget(self) -> None:
        """Forget the text shown so far (call it after compacting the conversation)."""
        self.output_used = 0
