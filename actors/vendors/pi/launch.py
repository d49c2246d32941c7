"""The pure launch builder: a ``HarnessRequest`` in, the ``pi --mode rpc`` argv and env out.

``argv`` is ``[binary, "--mode", "rpc", (-e GATE), (--model M), (--session FILE),
(--append-system-prompt TEXT), *options.extra_args]``.

* ``options.binary`` picks the executable (else the driver's resolved binary, else ``pi``).
* ``model`` is pi's own naming, passed as ``--model`` (``provider/id``, a bare id or a pattern,
  optionally ``:thinking``).
* ``options.home`` becomes ``PI_CODING_AGENT_DIR`` (pi's config, ``models.json``, login and
  session store).
* ``env`` is added to the parent environment (provider keys such as ``OPENAI_API_KEY`` reach
  pi this way); ``PI_CODING_AGENT_DIR`` from ``options.home`` wins over it.
* ``resume`` (the session file pi reported, or ``options.resume``) becomes ``--session FILE``.
* Permissions: in ``ask`` and ``auto_edit`` modes corral's permission gate (``permission_gate.js``,
  shipped in this package) is loaded with ``-e``: every tool call that can change something asks
  the client, and the session's policy answers what it may. ``auto`` and ``inherit`` load no gate:
  pi runs its tools as it is configured to (it has no permission prompts of its own).
* pi has no MCP client: a request with ``mcp_servers`` is refused.

Every mistake in the request raises ``protocol.errors.BadRequest`` whose message names keys only.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from actors.harness import HarnessRequest, Launch
from actors.vendors.options import VendorOptions, home_env, vendor_options
from protocol.errors import BadRequest

__all__ = ["DEFAULT_BINARY", "GATE", "HOME_ENV", "build_launch", "gated"]

DEFAULT_BINARY = "pi"

HOME_ENV = {"PI_CODING_AGENT_DIR": ""}
"""Where ``options.home`` goes (``home_env``): pi's agent directory is the home itself."""
"""The executable looked up on ``PATH`` when neither the request nor detection names one."""

GATE = Path(str(resources.files(__package__).joinpath("permission_gate.js")))
"""corral's permission-gate extension for pi (a data file of this package)."""


def gated(request: HarnessRequest) -> bool:
    """Whether the session's permission mode loads the gate (tool calls ask the client)."""
    return request.permissions.mode in ("ask", "auto_edit")


def build_launch(request: HarnessRequest, *, default_binary: str = DEFAULT_BINARY) -> Launch:
    """The argv, env overrides and cwd that start ``pi --mode rpc`` for ``request``."""
    options = vendor_options(request, VendorOptions)
    if request.mcp_servers:
        raise BadRequest("pi has no MCP client: mcp_servers must be empty for harness pi")
    argv = [options.binary or default_binary, "--mode", "rpc"]
    if gated(request):
        argv += ["-e", str(GATE)]
    if request.model:
        argv += ["--model", request.model]
    if request.resume:
        argv += ["--session", request.resume]
    if request.instructions:
        argv += ["--append-system-prompt", request.instructions]
    argv += options.extra_args
    env = {**request.env, **home_env(options.home, HOME_ENV)}
    return Launch(argv=argv, env=env, cwd=request.cwd)

