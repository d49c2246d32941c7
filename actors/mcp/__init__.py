"""MCP servers as supervised, shared actors: one per distinct server definition.

The actor (``actors.mcp.actor``) is not re-exported: it loads the MCP SDK (a second of imports),
which the CLI's client commands, importing the config from here, must not pay for.
"""

from actors.mcp.config import Definition as Definition
from actors.mcp.config import McpConfig as McpConfig
from actors.mcp.config import McpServerConfig as McpServerConfig
from actors.mcp.results import CallOutcome as CallOutcome
from actors.mcp.results import ToolInfo as ToolInfo
