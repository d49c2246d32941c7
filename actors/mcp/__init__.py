"""MCP servers as supervised, shared actors: one per distinct server definition."""

from actors.mcp.actor import ActorDeps as ActorDeps
from actors.mcp.actor import McpActor as McpActor
from actors.mcp.config import Definition as Definition
from actors.mcp.config import McpConfig as McpConfig
from actors.mcp.config import McpServerConfig as McpServerConfig
from actors.mcp.results import CallOutcome as CallOutcome
from actors.mcp.results import ToolInfo as ToolInfo
