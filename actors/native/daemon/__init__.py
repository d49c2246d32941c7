"""The daemon's side of the native harness, run in the daemon's process: the driver and its
sans-IO translator, the configuration (``[native]``, ``[providers]``, prices), the answers to a
worker's asks (MCP, language servers) and the fork server's supervised service and client.

The native worker never imports anything here (``tests/test_layering.py``): it is a separate
process that may crash alone and reaches the daemon only by asks over its pipes."""
