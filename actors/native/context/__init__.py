"""Instruction files and tool policies of native sessions: discovery, activation, assembly.

Sans-ADK: plain functions and small classes over bounded file reads, tested on temporary trees.
The worker wires them into ADK (``actors.native.worker.depth``).
"""

from .discover import Discovery as Discovery
from .discover import Source as Source
from .discover import repo_root as repo_root
from .documents import ContextWarning as ContextWarning
from .frontmatter import split_frontmatter as split_frontmatter
from .instructions import Assembled as Assembled
from .instructions import Instructions as Instructions
from .policy import PolicySet as PolicySet
from .policy import ToolPolicy as ToolPolicy
from .policy import parse_policy as parse_policy
from .policy import tool_name as tool_name
from .skills import Catalog as Catalog
from .skills import SkillError as SkillError
from .skills import SkillRecord as SkillRecord
from .skills import discover_skills as discover_skills
