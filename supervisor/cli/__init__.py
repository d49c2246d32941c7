"""The ``corral`` command line; what runs the daemon is injected by the composition root."""

from supervisor.cli.commands import main as main
