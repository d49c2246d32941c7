"""OS-process children: spawn, pipes and frames, the bounded close sequence, reaping, identity."""

from supervisor.proc.child import ProcessChild as ProcessChild
from supervisor.proc.child import open_child as open_child
from supervisor.proc.child import run_child as run_child
from supervisor.proc.spec import ExitStatus as ExitStatus
from supervisor.proc.spec import ProcessSpec as ProcessSpec
