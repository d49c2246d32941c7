"""Confining a process tree: what it may read, write and reach (``SandboxPlan``), and the two
backends that enforce a plan, bubblewrap (``wrap``: an argv around the program) and Landlock
(``landlock.preexec_hook``/``landlock.restrict``: rules the kernel enforces in the process).
``available`` says which backend a mode gets on this machine. Knows nothing of sessions or
harnesses: ``actors.sandboxing`` builds the plans."""

from supervisor.sandbox.available import Effective as Effective
from supervisor.sandbox.available import Mode as Mode
from supervisor.sandbox.available import Unavailable as Unavailable
from supervisor.sandbox.available import available as available
from supervisor.sandbox.bwrap import proxy_env as proxy_env
from supervisor.sandbox.bwrap import wrap as wrap
from supervisor.sandbox.plan import BRIDGE_PORT as BRIDGE_PORT
from supervisor.sandbox.plan import PROXY_DIR_INSIDE as PROXY_DIR_INSIDE
from supervisor.sandbox.plan import SandboxPlan as SandboxPlan
from supervisor.sandbox.plan import void_file as void_file
