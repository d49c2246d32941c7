"""Language servers as supervised actors: one per (workspace root, server id), started lazily;
the diagnostics a native write or edit is decorated with (``LanguageServers``).

The service (trio, language-server children) is imported on first use, so the sans-IO ``core``,
the config and the report Structs load without it (``supervisor.lazy``).
"""

import typing

from supervisor.lazy import lazy_exports as _lazy_exports

from actors.lsp.config import LspConfig as LspConfig
from actors.lsp.config import LspServerConfig as LspServerConfig
from actors.lsp.report import DiagnosticLine as DiagnosticLine
from actors.lsp.report import DiagnosticsQuery as DiagnosticsQuery
from actors.lsp.report import DiagnosticsReport as DiagnosticsReport
from actors.lsp.report import ServerStatus as ServerStatus

if typing.TYPE_CHECKING:
    from actors.lsp.service import LanguageServers as LanguageServers
    from actors.lsp.service import LspWarning as LspWarning
else:
    __getattr__, __dir__ = _lazy_exports(__name__, {
        "LanguageServers": "actors.lsp.service",
        "LspWarning": "actors.lsp.service",
    })
