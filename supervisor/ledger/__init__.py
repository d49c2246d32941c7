"""The crash ledger: one durable row per live child process, and the boot-time reconcile."""

from supervisor.ledger.reconcile import ReconcileReport as ReconcileReport
from supervisor.ledger.reconcile import reconcile as reconcile
from supervisor.ledger.store import Ledger as Ledger
from supervisor.ledger.store import LedgerRow as LedgerRow
