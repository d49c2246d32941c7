"""The bounds every coding tool works within, as one small frozen Struct (config-decodable)."""

from __future__ import annotations

import msgspec

MIB = 1024 * 1024


class Limits(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Sizes are bytes, times seconds. The defaults suit a model with a ~200k-token context."""

    read_max_bytes: int = 5 * MIB
    """Files larger than this are refused by read (and so cannot be edited)."""
    read_default_lines: int = 2000
    """The window read returns when the model gives no ``limit``."""
    line_max_chars: int = 2000
    """Longer lines are cut in read and grep output (the file is untouched)."""
    call_output_bytes: int = 50_000
    """Most text one call shows the model; past it the middle is elided."""
    session_output_bytes: int = 4 * MIB
    """Running total of text shown per session; once spent, tools answer ``output_limit``."""
    diff_max_bytes: int = 64 * 1024
    """Bound on the diff carried in write/edit outcomes."""
    bash_timeout: float = 120.0
    """Used when the model gives no ``timeout``."""
    bash_max_timeout: float = 600.0
    """A larger ``timeout`` from the model is lowered to this."""
    bash_kill_grace: float = 2.0
    """Time between SIGTERM and SIGKILL of a bash process group."""
    bash_drain_grace: float = 1.0
    """After the shell exits, how long a background process may keep its output pipes open
    before the group is killed (so ``cmd &`` cannot hang the call)."""
    walk_max_entries: int = 100_000
    """Directory entries grep/find visit at most per call."""
    grep_max_matches: int = 200
    find_max_results: int = 1000
    ls_max_entries: int = 1000
