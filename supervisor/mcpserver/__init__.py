"""corral as an MCP server: the ``corral_*`` tools over the daemon's client protocol.

``corral mcp-server`` serves them on stdio (``server.serve_stdio``); the daemon serves them at
``/mcp`` on its own port (``http``). The package loads the ``mcp`` SDK: import it only where it
is used (the daemon imports ``http`` on the first ``/mcp`` request).
"""
