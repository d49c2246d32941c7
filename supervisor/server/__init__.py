"""The daemon's server side: boot and shutdown, listeners, the gate, connection actors, out-queues."""

from supervisor.server.daemon import Host as Host
from supervisor.server.daemon import run_daemon as run_daemon
