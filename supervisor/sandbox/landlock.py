"""Landlock through ctypes: the kernel's unprivileged access control, for the ``landlock`` mode.

Landlock only *grants*: a ruleset names the access rights it handles, and a restricted process
keeps those rights only beneath the paths (and TCP ports) its rules name. So the plan's
"read-only everywhere but …, hidden …" becomes rules that cover everything else:

* read (and execute) beneath ``/`` — split around each hidden and masked path:
  ``split(root, hidden)`` names every sibling on the way down instead of the root, so the hidden
  path gets no rule — and listing directories everywhere (a hidden directory's *names* stay
  listable, its files unreadable; without it no directory on the way to a hidden path could be
  listed);
* read beneath the read-only paths and write beneath the writable paths, the ``tmp_dir`` and
  ``/dev`` (``/dev/null`` and the terminals), split the same way around the hidden and masked
  paths (and the protected ones, for writing): a mask inside a writable cwd stays unreadable,
  while a path inside a mask (the session's own parts) is granted whole;
* TCP (ABI ≥ 4) when ``net`` is not ``on``: nothing for ``off``; for ``model`` connecting to
  ``proxy_port`` (the daemon's proxy listens there on the loopback) on any address: Landlock's
  rules name ports, not addresses.

A restriction applies to the calling thread and everything it starts afterwards and can never be
lifted. ``preexec_hook(plan)`` builds the ruleset in the parent and returns a ``preexec_fn`` that
only sets ``no_new_privs`` and enforces it (two system calls after the fork);
``restrict(plan)`` enforces it on the calling process (the native worker does that on itself).

Limits (docs/sandbox.md): there is no private ``/tmp`` and no new ``/proc``; UDP and Unix
sockets are not covered; files created after the rules were made under a split directory are
not readable; a hidden path is unreadable but its name, and a hidden directory's listing, stay
visible.
"""

from __future__ import annotations

import ctypes
import errno
import functools
import os
import platform
import stat
from collections.abc import Callable, Iterable
from pathlib import Path

from supervisor.sandbox.plan import NetMode, SandboxPlan

__all__ = ["LandlockError", "abi", "net_hook", "preexec_hook", "restrict", "split"]

_SYS = {"x86_64": (444, 445, 446), "aarch64": (444, 445, 446)}  # create_ruleset, add_rule, restrict_self
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1
_RULE_NET_PORT = 2
_PR_SET_NO_NEW_PRIVS = 38

# Access rights of files (bit i is right i; ABI that introduced it in the comment).
_EXECUTE, _WRITE_FILE, _READ_FILE, _READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3  # ABI 1
_REMOVE_DIR, _REMOVE_FILE, _MAKE_CHAR, _MAKE_DIR = 1 << 4, 1 << 5, 1 << 6, 1 << 7
_MAKE_REG, _MAKE_SOCK, _MAKE_FIFO, _MAKE_BLOCK, _MAKE_SYM = 1 << 8, 1 << 9, 1 << 10, 1 << 11, 1 << 12
_REFER = 1 << 13  # ABI 2
_TRUNCATE = 1 << 14  # ABI 3
_IOCTL_DEV = 1 << 15  # ABI 5
_NET_BIND_TCP, _NET_CONNECT_TCP = 1 << 0, 1 << 1  # ABI 4

_READ = _EXECUTE | _READ_FILE | _READ_DIR
_DIR_ONLY = _READ_DIR | _REMOVE_DIR | _REMOVE_FILE | _MAKE_CHAR | _MAKE_DIR | _MAKE_REG | \
    _MAKE_SOCK | _MAKE_FIFO | _MAKE_BLOCK | _MAKE_SYM | _REFER


class LandlockError(OSError):
    """The kernel refused to build or enforce a ruleset (``errno`` says why)."""


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64)]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


class _NetPortAttr(ctypes.Structure):
    _fields_ = [("allowed_access", ctypes.c_uint64), ("port", ctypes.c_uint64)]


_libc = ctypes.CDLL(None, use_errno=True)


@functools.cache
def abi() -> int:
    """The kernel's Landlock ABI version; 0 where it has none (or it is disabled at boot)."""
    numbers = _SYS.get(platform.machine())
    if numbers is None:
        return 0
    found = _libc.syscall(numbers[0], None, ctypes.c_size_t(0), ctypes.c_uint32(_CREATE_RULESET_VERSION))
    return max(int(found), 0)


def split(root: Path, excluded: Iterable[Path]) -> list[Path]:
    """Paths whose subtrees together hold everything beneath ``root`` but the ``excluded`` paths:
    ``root`` itself when none is beneath it, nothing when it is excluded, else the same for
    each of its entries (so only directories on the way to an excluded path are listed)."""
    inside = [path for path in excluded if path == root or root in path.parents]
    if not inside:
        return [root]
    if root in inside or not root.is_dir() or root.is_symlink():
        return []
    found: list[Path] = []
    try:
        entries = sorted(Path(entry.path) for entry in os.scandir(root))
    except OSError:
        return []
    for entry in entries:
        if not entry.is_symlink():  # its target is covered (or not) under its own path
            found += split(entry, inside)
    return found


def preexec_hook(plan: SandboxPlan) -> Callable[[], None]:
    """A ``preexec_fn`` that confines the child per ``plan``. The ruleset is built here (in the
    parent) and its descriptor closed when the hook is dropped; after the fork the hook makes
    two system calls and no allocation. A child it cannot confine exits 126 before the exec:
    never unconfined. Raises ``LandlockError`` when the kernel refuses the ruleset."""
    return _Hook(_ruleset(plan), _restrict_self_number())


class _Hook:
    """The ``preexec_fn`` of ``preexec_hook``, owning the ruleset's descriptor."""

    def __init__(self, ruleset: int, restrict_self: int) -> None:
        self.ruleset = ruleset
        self.restrict_self = restrict_self

    def __call__(self) -> None:
        if _libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 or \
                _libc.syscall(self.restrict_self, self.ruleset, ctypes.c_uint32(0)) != 0:
            os._exit(126)

    def __del__(self) -> None:
        if self.ruleset >= 0:
            os.close(self.ruleset)
            self.ruleset = -1


def net_hook(net: NetMode, proxy_port: int) -> Callable[[], None]:
    """A ``preexec_fn`` laying only ``net``'s TCP rules on the child (another Landlock layer
    over whatever confines the caller already): ``off`` refuses every TCP connect and bind,
    ``model`` allows ``proxy_port`` alone. Raises ``LandlockError`` (ABI < 4, ``net = "on"``)."""
    version = abi()
    if version < 4 or net == "on":
        raise LandlockError(errno.ENOSYS, f"no TCP rules to lay for net {net!r} (Landlock ABI {version})")
    attr = _RulesetAttr(handled_access_fs=0, handled_access_net=_NET_BIND_TCP | _NET_CONNECT_TCP)
    size = ctypes.sizeof(_RulesetAttr) if version >= 6 else 16
    fd = int(_libc.syscall(_SYS[platform.machine()][0], ctypes.byref(attr), ctypes.c_size_t(size),
                           ctypes.c_uint32(0)))
    if fd < 0:
        _raise("landlock_create_ruleset")
    if net == "model":  # the session's proxy listens there: connect only
        try:
            _add_port(fd, proxy_port, _NET_CONNECT_TCP)
        except BaseException:
            os.close(fd)
            raise
    return _Hook(fd, _restrict_self_number())


def restrict(plan: SandboxPlan) -> None:
    """Confine the calling process (its thread, and everything it starts afterwards) per
    ``plan``. Raises ``LandlockError``; irreversible."""
    ruleset = _ruleset(plan)
    try:
        if _libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            _raise("prctl(PR_SET_NO_NEW_PRIVS)")
        if _libc.syscall(_restrict_self_number(), ruleset, ctypes.c_uint32(0)) != 0:
            _raise("landlock_restrict_self")
    finally:
        os.close(ruleset)


def handled_fs(version: int) -> int:
    """Every file-system right ``version`` of the ABI knows."""
    rights = (1 << 13) - 1
    if version >= 2:
        rights |= _REFER
    if version >= 3:
        rights |= _TRUNCATE
    if version >= 5:
        rights |= _IOCTL_DEV
    return rights


def _ruleset(plan: SandboxPlan) -> int:
    version = abi()
    if version < 1:
        raise LandlockError(errno.ENOSYS, "this kernel has no Landlock")
    if plan.net != "on" and version < 4:
        raise LandlockError(errno.ENOSYS, f"Landlock ABI {version} has no TCP rules (4 needed)")
    handled = handled_fs(version)
    attr = _RulesetAttr(handled_access_fs=handled,
                        handled_access_net=0 if plan.net == "on" else _NET_BIND_TCP | _NET_CONNECT_TCP)
    size = ctypes.sizeof(_RulesetAttr) if version >= 6 else 16  # ``scoped`` came with ABI 6
    numbers = _SYS[platform.machine()]
    fd = int(_libc.syscall(numbers[0], ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0)))
    if fd < 0:
        _raise("landlock_create_ruleset")
    try:
        hidden = list(plan.hidden)
        # Listing (names only) everywhere, so the directories on the way to a hidden path can
        # still be listed (``ls ~``); reading a hidden file's content stays refused.
        _add_path(fd, Path("/"), _READ_DIR & handled)
        for path in split(Path("/"), [*hidden, *plan.masked]):
            _add_path(fd, path, _READ & handled)
        # A mask inside a granted path is left out of the grant (a cwd that holds corral's
        # state directory); a granted path inside a mask is granted whole (the session's parts).
        for top in plan.read_only:
            for path in split(top, [*hidden, *plan.masked]):
                _add_path(fd, path, _READ & handled)
        writable = [*plan.writable, *([plan.tmp_dir] if plan.tmp_dir else []), Path("/dev")]
        for top in writable:
            for path in split(top, [*hidden, *plan.protected, *plan.masked]):
                _add_path(fd, path, handled)
        for top in plan.protected:
            for path in split(top, hidden):
                _add_path(fd, path, _READ & handled)
        if plan.net == "model":  # the daemon's proxy listens there; nothing may bind
            _add_port(fd, plan.proxy_port, _NET_CONNECT_TCP)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _add_path(ruleset: int, path: Path, access: int) -> None:
    try:
        target = os.open(path, os.O_PATH | os.O_CLOEXEC | os.O_NOFOLLOW)
    except OSError:
        return  # gone or unreachable: nothing to grant
    try:
        if stat.S_ISLNK(os.fstat(target).st_mode):
            return  # a symlink named by the plan: its target is what is reached
        if not os.path.isdir(path):
            access &= ~_DIR_ONLY  # the kernel refuses directory rights on a file
        rule = _PathBeneathAttr(allowed_access=access, parent_fd=target)
        if _libc.syscall(_SYS[platform.machine()][1], ruleset, _RULE_PATH_BENEATH,
                         ctypes.byref(rule), ctypes.c_uint32(0)) != 0:
            _raise(f"landlock_add_rule({path})")
    finally:
        os.close(target)


def _add_port(ruleset: int, port: int, access: int) -> None:
    rule = _NetPortAttr(allowed_access=access, port=port)
    if _libc.syscall(_SYS[platform.machine()][1], ruleset, _RULE_NET_PORT, ctypes.byref(rule),
                     ctypes.c_uint32(0)) != 0:
        _raise(f"landlock_add_rule(port {port})")


def _restrict_self_number() -> int:
    return _SYS[platform.machine()][2]


def _raise(what: str) -> None:
    code = ctypes.get_errno()
    raise LandlockError(code, f"{what}: {os.strerror(code)}")


