"""``corral acp``: corral as an ACP v1 agent on stdio, for editors (Zed, JetBrains, …).

A client of the daemon like the CLI: ``schema`` (the ACP messages), ``convert`` and ``updates``
(corral's shapes and events as ACP's, pure), ``turns`` (one attached session's prompts and
permissions, sans IO), ``follow`` (a session's follower and the permission requests) and
``agent`` (the trio shell on stdin/stdout). docs/acp.md is the user's
page.
"""

from supervisor.acp.agent import AcpOptions as AcpOptions
from supervisor.acp.agent import serve as serve
