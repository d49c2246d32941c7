"""Section ``[sandbox]``: the defaults of every session's ``options.sandbox``.

Example::

    [sandbox]
    mode = "auto"        # off | auto | bwrap | landlock
    net = "model"        # on | model | off
    landlock = true      # false: never use Landlock (``auto`` without bubblewrap then refuses)
    allow_hosts = ["pypi.org", "files.pythonhosted.org:443"]
    extra_rw = ["~/.cache/pip"]
    deny_read = ["~/.ssh", "~/.aws", "~/.config/gcloud", "~/.gnupg", "~/.netrc"]
"""

from __future__ import annotations

from msgspec import Struct, field

from protocol.sandbox import NetMode, SandboxMode

__all__ = ["DEFAULT_DENY_READ", "SandboxConfig"]

DEFAULT_DENY_READ = ["~/.ssh", "~/.aws", "~/.config/gcloud", "~/.gnupg", "~/.netrc"]
"""Credentials no sandboxed session may see (corral's state directory and the other sessions'
worktrees are hidden as well, always)."""


class SandboxConfig(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Section ``[sandbox]``: confinement of sessions (``options.sandbox`` overrides each key;
    its ``deny_read`` adds to this one's)."""

    mode: SandboxMode = "off"  # off | auto | bwrap | landlock
    net: NetMode = "model"  # on | model | off, for sandboxed sessions
    landlock: bool = True  # false: Landlock is never used (auto needs bubblewrap then)
    allow_hosts: list[str] = []  # HOST or HOST:PORT that net = "model" lets through besides the model's
    extra_rw: list[str] = []  # paths every sandboxed session may write besides its cwd
    deny_read: list[str] = field(default_factory=lambda: list(DEFAULT_DENY_READ))  # paths no sandboxed session may read
