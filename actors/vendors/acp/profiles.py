"""The ACP agents corral knows, as data: one ``Profile`` per harness name, one driver for all.

A profile says how to start the agent (binary, args, fixed env, where ``options.home`` goes, how a
model is passed), how corral's permission modes map onto the agent's own session modes or config
options, how to read its version, the oldest version we vouch for, and its known quirks.

Quirks (checked against the pinned versions):

* ``missing_file_empty``: a missing file on ``fs/read_text_file`` is answered with empty content,
  not an error (Gemini CLI 0.61.0 reads a file before writing it and gives up on an error).
* ``load_next_minute``: ``session/load`` in a process that opens the session within the same
  wall-clock minute as the process that wrote it clobbers the conversation (Gemini CLI 0.61.0
  names its chat file ``session-<UTC minute>-<id prefix>``; a second writer of that name appends a
  fresh header that hides the history). A resumed child is started only once the minute has
  changed (see ``launch``): at most 60 s late, never lost.
* ``usage_cumulative``: ``PromptResponse.usage`` counts the whole session, not the turn (Copilot
  CLI 1.0.102); the turn's usage is the growth.
* ``tool_name_in_id``: the tool's name is the part of ``toolCallId`` before ``__`` (Gemini).
* ``version_from_package``: ``--version`` prints nothing, so it is not run (``claude-code-acp``).
  Any profile with a ``package`` reports that package's version when its binary comes from it.

``opencode-acp`` (OpenCode 1.18.33, ``opencode acp``) has no permission mode in its ACP session
(its ``mode`` option picks an agent, ``build`` or ``plan``): corral's mode reaches it as
``OPENCODE_PERMISSION`` in its environment (``mode_env``), fixed for the child's life. Its config
and session store live in ``XDG_CONFIG_HOME``/``XDG_DATA_HOME`` (``options.home``), and its model
is the ``model`` config option (``provider/model``).

``codex-acp`` (0.16.0) has approval presets as session modes (``read-only``, ``auto``,
``full-access``); ``read-only`` runs commands sandboxed without asking, so corral's ``ask`` is
Codex's ``untrusted`` approval policy on the command line (``mode_args``). Refusing is its
``abort`` option, which ends the turn (``cancelled``: see ``translate``). Its sandbox needs
``bwrap`` on ``PATH``; the package ships none.

Profiles for agents not pinned in ``.ci/run`` (``cursor``, ``omp``, ``grok``) follow their
vendors' documentation and carry no version floor.
"""

from __future__ import annotations

import json

import msgspec

__all__ = ["PROFILES", "Profile"]


class Profile(msgspec.Struct, frozen=True, kw_only=True):
    """How to drive one ACP agent."""

    name: str
    """The harness name (``session.create {harness}``)."""
    binary: str
    """The executable looked up on ``PATH``."""
    args: tuple[str, ...] = ()
    """Arguments that start the agent in ACP mode on stdio."""
    env: dict[str, str] = {}
    """Environment every child gets (the session's ``env`` wins over it)."""
    home_env: dict[str, str] = msgspec.field(default_factory=lambda: {"HOME": ""})
    """The variables ``options.home`` is written to (the agent's config home): name → subdirectory
    of the home (``""`` for the home itself)."""
    model_arg: str | None = None
    """The flag that takes ``model`` on the command line; ``None``: ``session/set_model`` after the
    session opens (when the agent offers models)."""
    modes: dict[str, str] = {}
    """corral permission mode → the agent's ``session/set_mode`` id."""
    config: dict[str, tuple[str, str]] = {}
    """corral permission mode → ``(configId, value)`` for ``session/set_config_option``."""
    mode_args: dict[str, tuple[str, ...]] = {}
    """corral permission mode → arguments after ``args``, for a mode the agent's session modes
    do not offer (fixed for the child's life)."""
    mode_env: dict[str, dict[str, str]] = {}
    """corral permission mode → environment of the child, for agents whose ACP session has no
    permission mode to set (the session's ``env`` wins over it)."""
    auth_method: str | None = None
    """An ``authenticate`` method id to call after ``initialize`` when the agent offers it
    (``options.auth_method`` overrides)."""
    min_version: str | None = None
    """The oldest version corral vouches for; older ones are ``available: false``."""
    package: str | None = None
    """The npm package that ships the binary (its ``package.json`` names the version)."""
    quirks: frozenset[str] = frozenset()
    """Known deviations, named in the module docstring."""


def _opencode_permission(edit: str, bash: str) -> str:
    """OpenCode's ``OPENCODE_PERMISSION`` (merged over its config's ``permission``)."""
    return json.dumps({"edit": edit, "bash": bash}, sort_keys=True)


PROFILES: dict[str, Profile] = {p.name: p for p in (
    Profile(name="gemini", binary="gemini", args=("--acp",), model_arg="--model",
            env={"GEMINI_CLI_NO_RELAUNCH": "true"},
            modes={"ask": "default", "auto_edit": "autoEdit", "auto": "yolo"},
            min_version="0.61.0", package="@google/gemini-cli",
            quirks=frozenset({"missing_file_empty", "load_next_minute", "tool_name_in_id"})),
    Profile(name="copilot", binary="copilot", model_arg="--model",
            args=("--acp", "--no-auto-update", "--disable-client-telemetry"),
            home_env={"COPILOT_HOME": ""}, config={"auto": ("allow_all", "on")},
            min_version="1.0.102", package="@github/copilot",
            quirks=frozenset({"usage_cumulative"})),
    Profile(name="claude-acp", binary="claude-code-acp", home_env={"CLAUDE_CONFIG_DIR": ""},
            modes={"ask": "default", "auto_edit": "acceptEdits", "auto": "bypassPermissions"},
            min_version="0.16.2", package="@zed-industries/claude-code-acp",
            quirks=frozenset({"version_from_package"})),
    Profile(name="codex-acp", binary="codex-acp", home_env={"CODEX_HOME": ""},
            modes={"auto_edit": "auto", "auto": "full-access"},
            mode_args={"ask": ("-c", 'approval_policy="untrusted"',
                               "-c", 'sandbox_mode="workspace-write"')},
            min_version="0.16.0", package="@zed-industries/codex-acp",
            quirks=frozenset({"version_from_package"})),
    Profile(name="opencode-acp", binary="opencode", args=("acp",), package="opencode-ai",
            home_env={"XDG_CONFIG_HOME": "config", "XDG_DATA_HOME": "data"},
            mode_env={mode: {"OPENCODE_PERMISSION": _opencode_permission(edit, bash)}
                      for mode, (edit, bash) in (("ask", ("ask", "ask")),
                                                 ("auto_edit", ("allow", "ask")),
                                                 ("auto", ("allow", "allow")))},
            min_version="1.18.33"),
    Profile(name="cursor", binary="cursor-agent", args=("acp",), model_arg="--model",
            auth_method="cursor_login"),
    Profile(name="omp", binary="omp", args=("acp",)),
    Profile(name="grok", binary="grok", args=("agent", "stdio"), auth_method="cached_token"),
)}
"""Every ACP harness by name."""
