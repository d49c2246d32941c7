"""Supervision trees with Erlang/OTP semantics: mailboxes, child specs, restart policy, supervisors."""

from supervisor.tree.backoff import Backoff as Backoff
from supervisor.tree.backoff import GiveUp as GiveUp
from supervisor.tree.backoff import RestartAfter as RestartAfter
from supervisor.tree.backoff import RestartPolicy as RestartPolicy
from supervisor.tree.backoff import RestartTracker as RestartTracker
from supervisor.tree.mailbox import Mailbox as Mailbox
from supervisor.tree.mailbox import Reply as Reply
from supervisor.tree.specs import ChildSpec as ChildSpec
from supervisor.tree.specs import ChildType as ChildType
from supervisor.tree.specs import RestartType as RestartType
from supervisor.tree.specs import Strategy as Strategy
from supervisor.tree.specs import SupervisorSpec as SupervisorSpec
from supervisor.tree.specs import SupervisorStats as SupervisorStats
from supervisor.tree.supervisor import Supervisor as Supervisor
from supervisor.tree.supervisor import supervise as supervise
from supervisor.tree.supervisor import supervisor_child as supervisor_child
