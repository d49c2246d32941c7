"""The skills toolset: ``list_skills``, ``load_skill``, ``load_skill_resource`` as ADK tools.

They exist only when the session's ``Catalog`` has a model-invocable skill (``skill_tools``
returns none otherwise), so a session without skills shows the model no skill tools. A loaded
skill's ``allowed-tools`` / ``disallowed-tools`` go to ``on_policy`` (the session narrows the
rest of the turn's tools with it; the skill tools themselves stay allowed, so its resources can
still be read). Bodies are
read on first use and checked against the digest taken at discovery; resources are bounded
UTF-8 files under the skill's root (``actors.native.context.skills``). Results are
``{"output": text}`` or ``{"error": text}`` like the coding tools'; none of them asks for
permission (they only read what discovery already listed).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from google.adk.tools.base_tool import BaseTool
from google.adk.tools.tool_context import ToolContext
from google.genai import types

import msgspec

from actors.native.context import Catalog, SkillError, ToolPolicy
from actors.native.context.policy import ToolRule

__all__ = ["SKILL_TOOLS", "skill_tools"]

SKILL_TOOLS = ("list_skills", "load_skill", "load_skill_resource")

_NAME = {"type": "string", "description": "The skill's name as list_skills shows it."}


class _SkillTool(BaseTool):
    def __init__(self, name: str, description: str, properties: dict[str, Any],
                 run: Callable[[dict[str, Any]], str]) -> None:
        super().__init__(name=name, description=description)
        self._schema = {"type": "object", "properties": properties,
                        "required": sorted(properties)}
        self._run = run

    def _get_declaration(self) -> types.FunctionDeclaration:
        return types.FunctionDeclaration(name=self.name, description=self.description,
                                         parameters_json_schema=self._schema)

    async def run_async(self, *, args: dict[str, Any], tool_context: ToolContext) -> Any:
        try:
            return {"output": self._run(args)}
        except SkillError as exc:
            return {"error": f"{exc.code}: {exc.message}"}


def skill_tools(catalog: Catalog, max_bytes: int,
                on_policy: Callable[[ToolPolicy], None]) -> list[BaseTool]:
    """The three tools over ``catalog``, or none when it offers the model no skill."""
    if not catalog.invocable():
        return []

    def listing(args: dict[str, Any]) -> str:
        return json.dumps(catalog.invocable(), indent=1)

    def load(args: dict[str, Any]) -> str:
        record, body, policy = catalog.read_body(_text(args, "name"), max_bytes)
        if policy.allow is not None:
            policy = msgspec.structs.replace(
                policy, allow=(*policy.allow, *(ToolRule(name) for name in SKILL_TOOLS)))
        if not policy.empty:
            on_policy(policy)
        files = "\n".join(f"- {r}" for r in record.resources) or "(none)"
        return (f"# Skill {record.name} ({record.qualified})\n\nIts files, for "
                f"load_skill_resource:\n{files}\n\n{body}")

    def resource(args: dict[str, Any]) -> str:
        return catalog.read_resource(_text(args, "name"), _text(args, "path"), max_bytes)

    return [
        _SkillTool("list_skills", "List the skills available in this session: name, "
                   "description, and where each comes from.", {}, listing),
        _SkillTool("load_skill", "Load a skill's instructions (and the list of its files) "
                   "before doing what it describes.", {"name": _NAME}, load),
        _SkillTool("load_skill_resource", "Read one file of a loaded skill, by its path "
                   "relative to the skill (as load_skill lists them).",
                   {"name": _NAME, "path": {"type": "string",
                                            "description": "A file of the skill."}}, resource),
    ]


def _text(args: dict[str, Any], key: str) -> str:
    value = args.get(key)
    if not isinstance(value, str) or not value:
        raise SkillError("skills.bad_arguments", f"{key} must be a non-empty string")
    return value
