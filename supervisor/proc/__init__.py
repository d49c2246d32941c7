"""OS-process children: spawn, pipes and frames, the bounded close sequence, reaping, identity.

The data (``ProcessSpec``, ``ExitStatus``) is imported at once; the child itself (trio, psutil,
subprocess) only when it is first used, so a sans-IO core that takes an ``ExitStatus`` stays light.
"""

import typing

from supervisor.lazy import lazy_exports as _lazy_exports
from supervisor.proc.spec import ExitStatus as ExitStatus
from supervisor.proc.spec import ProcessSpec as ProcessSpec

if typing.TYPE_CHECKING:
    from supervisor.proc.child import ProcessChild as ProcessChild
    from supervisor.proc.child import open_child as open_child
    from supervisor.proc.child import run_child as run_child
else:
    __getattr__, __dir__ = _lazy_exports(__name__, {
        "ProcessChild": "supervisor.proc.child",
        "open_child": "supervisor.proc.child",
        "run_child": "supervisor.proc.child",
    })
