"""corral's Trio runtime: supervision trees, process children, ledger, daemon, client, CLI."""

__version__ = "0.1.0"
