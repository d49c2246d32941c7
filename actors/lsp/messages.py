"""The few Language Server Protocol messages corral sends and reads, as msgspec Structs.

Only what the diagnostics path needs is typed; every other member a server sends is ignored
(servers differ widely, and one odd shape must not wedge a request). Names are camelCase on the
wire (``rename="camel"``). Positions count UTF-16 code units, as LSP's default encoding says.
"""

from __future__ import annotations

from typing import Any

import msgspec

__all__ = [
    "CLIENT_CAPABILITIES",
    "ConfigurationParams",
    "Diagnostic",
    "DiagnosticReport",
    "InitializeResult",
    "PublishDiagnosticsParams",
]


class _Lsp(msgspec.Struct, rename="camel", kw_only=True, frozen=True, omit_defaults=True):
    """Base of every LSP Struct."""


class Position(_Lsp, kw_only=True, frozen=True):
    line: int
    character: int


class Range(_Lsp, kw_only=True, frozen=True):
    start: Position
    end: Position


class Diagnostic(_Lsp, kw_only=True, frozen=True):
    """One diagnostic; ``severity`` 1 error, 2 warning, 3 information, 4 hint (absent: error)."""

    range: Range
    message: str
    severity: int | None = None
    code: int | str | None = None
    source: str | None = None


class PublishDiagnosticsParams(_Lsp, kw_only=True, frozen=True):
    """``textDocument/publishDiagnostics``: ``version`` is absent where the server does not say."""

    uri: str
    diagnostics: list[Diagnostic]
    version: int | None = None


class DiagnosticReport(_Lsp, kw_only=True, frozen=True):
    """The answer to ``textDocument/diagnostic``: ``full`` carries ``items``; ``unchanged`` none."""

    kind: str
    items: list[Diagnostic] = []


class ServerCapabilities(_Lsp, kw_only=True, frozen=True):
    diagnostic_provider: Any = None
    position_encoding: str | None = None


class ServerInfo(_Lsp, kw_only=True, frozen=True):
    name: str
    version: str | None = None


class InitializeResult(_Lsp, kw_only=True, frozen=True):
    capabilities: ServerCapabilities = ServerCapabilities()
    server_info: ServerInfo | None = None


class ConfigurationItem(_Lsp, kw_only=True, frozen=True):
    section: str | None = None
    scope_uri: str | None = None


class ConfigurationParams(_Lsp, kw_only=True, frozen=True):
    items: list[ConfigurationItem]


class ClientInfo(_Lsp, kw_only=True, frozen=True):
    name: str
    version: str


class WorkspaceFolder(_Lsp, kw_only=True, frozen=True):
    uri: str
    name: str


class InitializeParams(_Lsp, kw_only=True, frozen=True):
    process_id: int | None
    client_info: ClientInfo
    root_uri: str
    root_path: str
    workspace_folders: list[WorkspaceFolder]
    capabilities: dict[str, Any]
    initialization_options: Any = None


class TextDocumentItem(_Lsp, kw_only=True, frozen=True):
    uri: str
    language_id: str
    version: int
    text: str


class DidOpenParams(_Lsp, kw_only=True, frozen=True):
    text_document: TextDocumentItem


class VersionedDocument(_Lsp, kw_only=True, frozen=True):
    uri: str
    version: int


class FullChange(_Lsp, kw_only=True, frozen=True):
    """A content change with no range: the whole new text."""

    text: str


class DidChangeParams(_Lsp, kw_only=True, frozen=True):
    text_document: VersionedDocument
    content_changes: list[FullChange]


class DocumentId(_Lsp, kw_only=True, frozen=True):
    uri: str


class DidCloseParams(_Lsp, kw_only=True, frozen=True):
    text_document: DocumentId


class DocumentDiagnosticParams(_Lsp, kw_only=True, frozen=True):
    text_document: DocumentId


CLIENT_CAPABILITIES: dict[str, Any] = {
    "general": {"positionEncodings": ["utf-16"]},
    "textDocument": {
        "synchronization": {"dynamicRegistration": False, "didSave": False},
        # versionSupport: the server says which version a publish is for, so a stale one is
        # recognised; the pull capability lets servers that offer pull (ruff) answer per request.
        "publishDiagnostics": {"versionSupport": True, "relatedInformation": False},
        "diagnostic": {"dynamicRegistration": False, "relatedDocumentSupport": False},
    },
    "workspace": {"configuration": True, "workspaceFolders": True},
    "window": {"workDoneProgress": True},
}
"""What corral's client declares: document sync with full text, diagnostics pushed or pulled."""
