"""corral's Trio runtime: supervision trees, process children, ledger, daemon, client, CLI."""
