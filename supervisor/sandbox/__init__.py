"""Confining a process tree: what it may read, write and reach (``SandboxPlan``), and the two
backends that enforce a plan, bubblewrap (``wrap``: an argv around the program) and Landlock
(``landlock.preexec_hook``/``landlock.restrict``: rules the kernel enforces in the process).
``available.available`` says which backend a mode gets on this machine. Knows nothing of sessions or
harnesses: ``actors.sandboxing`` builds the plans."""

import typing

from supervisor.lazy import lazy_exports
from supervisor.sandbox.plan import BRIDGE_PORT as BRIDGE_PORT
from supervisor.sandbox.plan import SandboxPlan as SandboxPlan
from supervisor.sandbox.plan import void_file as void_file

# ``wrap`` is imported on first use, and ``available`` (it runs bubblewrap and loads Landlock) is
# imported from its module, which shares its name: so the pure modules beside them
# (``allowlist``, ``httphead``) load no ``subprocess``.
if typing.TYPE_CHECKING:
    from supervisor.sandbox.bwrap import proxy_env as proxy_env
    from supervisor.sandbox.bwrap import wrap as wrap
else:
    __getattr__, __dir__ = lazy_exports(__name__, {
        "proxy_env": "supervisor.sandbox.bwrap", "wrap": "supervisor.sandbox.bwrap"})
