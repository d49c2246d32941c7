"""What the editor sends as corral's shapes, and corral's as ACP's (pure).

* MCP servers: ACP's stdio (``env`` as ``[{name, value}]``) and ``http`` (``headers`` likewise)
  servers become session ``McpServer``s; ``sse`` ones are left out (not offered: corral's MCP
  clients speak stdio and streamable HTTP).
* Prompts: text blocks are the text; an embedded resource (``resource`` with text) is quoted
  with its URI; a ``resource_link`` is written as a Markdown link. Images and audio are not
  offered, so they are refused.
* Sessions: the permission modes are ACP modes whose ids are corral's mode names; the model is
  a ``select`` config option (category ``model``) when the harness's models are known.
"""

from __future__ import annotations

from typing import Any, Final

from protocol.models import McpServer, SessionInfo, WorkspaceSpec

from . import schema as s

__all__ = ["mcp_servers", "modes", "prompt_text", "session_result", "worktree"]

_MODES: Final = {
    "ask": ("Ask", "Ask before running tools (the editor answers)"),
    "auto_edit": ("Auto edit", "Reads and edits run without asking; the rest asks"),
    "auto": ("Auto", "Every tool runs without asking"),
    "inherit": ("Inherit", "The harness's own settings decide"),
}


class UnsupportedContent(ValueError):
    """A prompt block corral did not offer to take (an image, audio)."""


def modes() -> list[str]:
    """The mode ids, in the order offered."""
    return list(_MODES)


def mcp_servers(servers: list[s.McpServer]) -> list[McpServer]:
    """The editor's MCP servers as session MCP servers (``sse`` ones left out)."""
    out = []
    for server in servers:
        if server.type in (None, "stdio") and server.command:
            out.append(McpServer(name=server.name, command=server.command, args=list(server.args),
                                 env={e.name: e.value for e in server.env}))
        elif server.type == "http" and server.url:
            out.append(McpServer(name=server.name, url=server.url,
                                 headers={h.name: h.value for h in server.headers}))
    return out


def worktree(value: Any) -> WorkspaceSpec | None:
    """``_meta.corral.worktree``: ``true``, or ``{base?, branch?}``, runs the session in a new
    git worktree; absent or false does not."""
    if value is True:
        return WorkspaceSpec(mode="worktree")
    if isinstance(value, dict):
        base, branch = value.get("base"), value.get("branch")
        return WorkspaceSpec(mode="worktree", base=base if isinstance(base, str) else None,
                             branch=branch if isinstance(branch, str) else None)
    return None


def prompt_text(blocks: list[dict[str, Any]]) -> str:
    """One prompt's content blocks as the text corral sends; ``UnsupportedContent`` for an image
    or audio block."""
    parts = []
    for block in blocks:
        kind = block.get("type")
        if kind == "text":
            parts.append(str(block.get("text", "")))
        elif kind == "resource_link":
            uri = str(block.get("uri", ""))
            parts.append(f"[{block.get('name') or uri}]({uri})")
        elif kind == "resource":
            resource = block.get("resource") or {}
            uri = str(resource.get("uri", ""))
            if isinstance(resource.get("text"), str):
                parts.append(f'<context uri="{uri}">\n{resource["text"]}\n</context>')
            else:
                parts.append(f"[{uri}]({uri})")
        else:
            raise UnsupportedContent(f"{kind} content is not supported")
    return "\n\n".join(p for p in parts if p)


def session_result(info: SessionInfo, models: list[str], *, with_id: bool) -> s.SessionResult:
    """What ``session/new`` (``with_id``), ``load`` and ``resume`` answer: the modes and the
    config options (mode, and model when known)."""
    available = [s.ModeInfo(id=mode, name=name, description=text) for mode, (name, text) in _MODES.items()]
    options = [s.ConfigOption(id="mode", name="Permission mode", category="mode",
                              current_value=info.permissions,
                              options=[s.ConfigChoice(value=m.id, name=m.name) for m in available])]
    choices = list(models)
    if info.model and info.model not in choices:
        choices.insert(0, info.model)
    if choices:
        options.append(s.ConfigOption(id="model", name="Model", category="model",
                                      current_value=info.model or choices[0],
                                      options=[s.ConfigChoice(value=m, name=m) for m in choices]))
    return s.SessionResult(session_id=info.id if with_id else None,
                           modes=s.Modes(current_mode_id=info.permissions, available_modes=available),
                           config_options=options)
