"""Language servers as supervised actors: one per (workspace root, server id), started lazily;
the diagnostics a native write or edit is decorated with (``LanguageServers``)."""

from actors.lsp.config import LspConfig as LspConfig
from actors.lsp.config import LspServerConfig as LspServerConfig
from actors.lsp.report import DiagnosticLine as DiagnosticLine
from actors.lsp.report import DiagnosticsQuery as DiagnosticsQuery
from actors.lsp.report import DiagnosticsReport as DiagnosticsReport
from actors.lsp.report import ServerStatus as ServerStatus
from actors.lsp.service import LanguageServers as LanguageServers
from actors.lsp.service import LspWarning as LspWarning
