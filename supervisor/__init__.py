"""corral's Trio runtime: supervision trees, process children, ledger, daemon, client, CLI."""

__version__ = "0.1.0"

from .backoff import Backoff as Backoff
from .backoff import RestartPolicy as RestartPolicy
from .backoff import RestartTracker as RestartTracker
from .client import Client as Client
from .client import open_client as open_client
from .follow import follow_session as follow_session
from .ledger import Ledger as Ledger
from .ledger import reconcile as reconcile
from .mailbox import Mailbox as Mailbox
from .mailbox import Reply as Reply
from .process import Child as Child
from .process import ExitStatus as ExitStatus
from .process import ProcessSpec as ProcessSpec
from .process import open_child as open_child
from .process import run_child as run_child
from .specs import ChildSpec as ChildSpec
from .specs import RestartType as RestartType
from .specs import Strategy as Strategy
from .specs import SupervisorSpec as SupervisorSpec
from .supervision import Supervisor as Supervisor
from .supervision import supervise as supervise
