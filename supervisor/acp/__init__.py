"""``corral acp``: corral as an ACP v1 agent on stdio, for editors (Zed, JetBrains, …).

A client of the daemon like the CLI: ``schema`` (the ACP messages), ``convert`` and ``updates``
(corral's shapes and events as ACP's, pure), ``turns`` (one attached session's prompts and
permissions, sans IO), ``follow`` (a session's follower and the permission requests) and
``agent`` (the trio shell on stdin/stdout). docs/acp.md is the user's page. The shell loads
on first use (``supervisor.lazy``), so the sans-IO modules import without trio.
"""

import typing

from supervisor.lazy import lazy_exports as _lazy_exports

if typing.TYPE_CHECKING:
    from supervisor.acp.agent import AcpOptions as AcpOptions
    from supervisor.acp.agent import serve as serve
else:
    __getattr__, __dir__ = _lazy_exports(__name__, {
        "AcpOptions": "supervisor.acp.agent",
        "serve": "supervisor.acp.agent",
    })
