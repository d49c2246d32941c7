"""The language-server client, sans IO: one server's state, frames in, frames and facts out.

Theory of operation. ``LspCore`` holds what corral knows about one running server: the
handshake state, the documents it opened (path → version, text), and the newest diagnostics
per document. The shell (``connection.py``) feeds it every frame payload the server writes
(``receive``) and sends whatever bytes it returns; time comes in as ``now``.

=============  =====================================================  ====================
state          what happens                                           next
=============  =====================================================  ====================
new            ``start()`` gives the ``initialize`` request           initializing
initializing   its answer: capabilities kept, ``initialized`` sent,   ready
               ``Ready`` emitted
ready          ``sync``/``pull``/``ping``; server requests answered   closed (``shutdown``)
=============  =====================================================  ====================

Server requests are answered at once, in every state (pyright does not analyse until its
``workspace/configuration`` is answered): configuration from the server's ``settings``,
``null`` for registrations and progress tokens, MethodNotFound for anything else.

Diagnostics. ``sync`` sends the whole text (``didOpen`` the first time, ``didChange`` after)
with a fresh version; unchanged text keeps its version and sends nothing. A pushed publish that
carries a ``version`` older than the document's is stale and dropped: it is never reported as
current. ``verdict`` says whether the diagnostics for ``version`` are known:

* a versioned result counts once its version is ``>= version`` (servers coalesce bursts, so
  waiting for an exact version could hang);
* a versionless one (ts-ls, gopls's first publish) counts only if it arrived after the change
  was sent and nothing newer came for ``settle`` seconds (``WaitUntil`` says until when);
* a pulled result (``textDocument/diagnostic``, used when the server offers it) belongs to the
  version current when the request was sent.
"""

from __future__ import annotations

import collections
import os
import urllib.parse
from pathlib import Path
from typing import Any, Literal, TypeAlias

import msgspec

from actors.lsp import messages as m
from protocol import jsonrpc
from protocol.errors import ProtocolError
from protocol.framing import ContentLengthFramer
from protocol.jsonrpc import Endpoint, ErrorResponse, Notification, Request, Response, RpcError

__all__ = ["Answered", "Done", "LspCore", "Output", "Pending", "Published", "Ready", "Result",
           "Send", "Verdict", "WaitUntil"]

State = Literal["new", "initializing", "ready", "closed"]


class Send(msgspec.Struct, frozen=True):
    """Framed bytes to write to the server's stdin, in order."""

    data: bytes


class Ready(msgspec.Struct, frozen=True):
    """The handshake is done; ``pull`` tells whether diagnostics are pulled."""

    server: str | None
    pull: bool


class Answered(msgspec.Struct, frozen=True):
    """The server answered request ``id`` (``error`` set if it failed)."""

    id: jsonrpc.RequestId
    method: str | None
    error: RpcError | None = None


class Published(msgspec.Struct, frozen=True):
    """New diagnostics were recorded for ``path``."""

    path: str


Output: TypeAlias = Send | Ready | Answered | Published


class Result(msgspec.Struct, frozen=True):
    """Diagnostics of one document: ``version`` None when the server gave none; ``text`` the
    document's text when they were recorded (to turn UTF-16 positions into columns)."""

    version: int | None
    items: tuple[m.Diagnostic, ...]
    at: float
    text: str


class Done(msgspec.Struct, frozen=True):
    result: Result


class WaitUntil(msgspec.Struct, frozen=True):
    """A versionless result is settling: ask again at ``when`` (or sooner if more arrives)."""

    when: float


class Pending(msgspec.Struct, frozen=True):
    """Nothing for this version yet."""


Verdict: TypeAlias = Done | WaitUntil | Pending


class _Doc:
    __slots__ = ("language_id", "sent_at", "text", "version")

    def __init__(self, language_id: str, text: str, sent_at: float) -> None:
        self.language_id, self.text, self.version, self.sent_at = language_id, text, 1, sent_at


_PUBLISH = "textDocument/publishDiagnostics"
_NULL_ANSWERS = frozenset({"client/registerCapability", "client/unregisterCapability",
                           "window/workDoneProgress/create", "window/showMessageRequest",
                           "window/showDocument"})


class LspCore:
    """One server's client state; see the module docstring. Never does I/O, never reads a clock."""

    def __init__(self, root: str, *, initialization_options: Any = None,
                 settings: dict[str, Any] | None = None, max_documents: int = 64,
                 client_version: str = "0", process_id: int | None = None) -> None:
        self.root = root
        self.state: State = "new"
        self.pull = False
        self.server: str | None = None
        self._init_options = initialization_options
        self._settings = settings or {}
        self._max_documents = max_documents
        self._client_version = client_version
        self._process_id = process_id
        self._rpc = Endpoint()
        self._framer = ContentLengthFramer()
        self._init_id: jsonrpc.RequestId = 0
        self._docs: collections.OrderedDict[str, _Doc] = collections.OrderedDict()
        self._results: dict[str, Result] = {}
        self._pulls: dict[jsonrpc.RequestId, tuple[str, int, str]] = {}

    # --- our side -------------------------------------------------------------------------

    def start(self) -> tuple[jsonrpc.RequestId, bytes]:
        """The ``initialize`` request and its id (answered by ``Ready`` and ``Answered``)."""
        self._require("new")
        uri = Path(self.root).as_uri()
        params = m.InitializeParams(
            process_id=self._process_id,
            client_info=m.ClientInfo(name="corral", version=self._client_version),
            root_uri=uri, root_path=self.root,
            workspace_folders=[m.WorkspaceFolder(uri=uri, name=os.path.basename(self.root) or "/")],
            capabilities=m.CLIENT_CAPABILITIES, initialization_options=self._init_options)
        self._init_id, data = self._rpc.request("initialize", params)
        self.state = "initializing"
        return self._init_id, self._frame(data)

    def sync(self, path: str, language_id: str, text: str, now: float) -> tuple[int, list[bytes]]:
        """Give the server ``text`` as the content of ``path``: its version and the frames.

        The first time ``didOpen`` (closing the least recently used document beyond
        ``max_documents``); after that ``didChange`` with the full text, or nothing at all if
        the text is unchanged.
        """
        self._require("ready")
        uri = Path(path).as_uri()
        doc = self._docs.get(path)
        if doc is not None:
            self._docs.move_to_end(path)
            if doc.text == text:
                return doc.version, []
            doc.text, doc.version, doc.sent_at = text, doc.version + 1, now
            params: Any = m.DidChangeParams(
                text_document=m.VersionedDocument(uri=uri, version=doc.version),
                content_changes=[m.FullChange(text=text)])
            return doc.version, [self._frame(self._rpc.notify("textDocument/didChange", params))]
        frames = []
        while len(self._docs) >= self._max_documents:
            old, _ = self._docs.popitem(last=False)
            self._results.pop(old, None)
            params = m.DidCloseParams(text_document=m.DocumentId(uri=Path(old).as_uri()))
            frames.append(self._frame(self._rpc.notify("textDocument/didClose", params)))
        doc = self._docs[path] = _Doc(language_id, text, now)
        params = m.DidOpenParams(text_document=m.TextDocumentItem(
            uri=uri, language_id=language_id, version=doc.version, text=text))
        frames.append(self._frame(self._rpc.notify("textDocument/didOpen", params)))
        return doc.version, frames

    def sent_at(self, path: str) -> float:
        """When the current text of open ``path`` was sent."""
        return self._docs[path].sent_at

    def version(self, path: str) -> int | None:
        """The version of ``path`` the server has, None if it is not open."""
        doc = self._docs.get(path)
        return None if doc is None else doc.version

    def pull_request(self, path: str) -> tuple[jsonrpc.RequestId, bytes]:
        """A ``textDocument/diagnostic`` request for the current version of open ``path``."""
        self._require("ready")
        doc = self._docs[path]
        params = m.DocumentDiagnosticParams(text_document=m.DocumentId(uri=Path(path).as_uri()))
        rid, data = self._rpc.request("textDocument/diagnostic", params)
        self._pulls[rid] = (path, doc.version, doc.text)
        return rid, self._frame(data)

    def ping(self) -> tuple[jsonrpc.RequestId, bytes]:
        """A liveness probe: LSP requires every server to answer a ``$/`` request it does not
        know with MethodNotFound, so any answer proves the server still reads and writes."""
        rid, data = self._rpc.request("$/corral.ping", None)
        return rid, self._frame(data)

    def forget(self, rid: jsonrpc.RequestId) -> None:
        """Give up on request ``rid``; its late answer is dropped."""
        self._rpc.forget(rid)
        self._pulls.pop(rid, None)

    def shutdown(self) -> tuple[jsonrpc.RequestId, bytes]:
        """The ``shutdown`` request; send ``exit()`` after its answer."""
        self.state = "closed"
        rid, data = self._rpc.request("shutdown")
        return rid, self._frame(data)

    def exit(self) -> bytes:
        return self._frame(self._rpc.notify("exit"))

    # --- the server's side ----------------------------------------------------------------

    def receive(self, payload: bytes, now: float) -> list[Output]:
        """Take one frame payload from the server. ``ProtocolError`` for garbage."""
        message = self._rpc.receive(payload)
        match message:
            case Request(id=rid, method=method, params=params):
                return [Send(self._frame(self._answer(rid, method, params)))]
            case Notification(method=method, params=params) if method == _PUBLISH:
                publish = jsonrpc.decode_as(params, m.PublishDiagnosticsParams, _PUBLISH)
                return self._record_push(publish, now)
            case Response(id=rid, method=method, result=raw) if rid == self._init_id:
                return self._on_initialized(raw)
            case Response(id=rid, method=method, result=raw):
                out: list[Output] = []
                if rid in self._pulls:
                    out += self._record_pull(rid, raw, now)
                return [*out, Answered(rid, method)]
            case ErrorResponse(id=rid, method=method, error=error) if rid is not None:
                self._pulls.pop(rid, None)
                if rid == self._init_id:
                    raise ProtocolError(f"the server refused initialize: {error.message}",
                                        data={"code": error.code})
                return [Answered(rid, method, error)]
            case ErrorResponse(error=error):
                raise ProtocolError(f"the server could not read a request: {error.message}")
        return []  # other notifications (logMessage, $/progress …) and dropped late answers

    def verdict(self, path: str, version: int, sent_at: float, now: float, settle: float) -> Verdict:
        """Whether diagnostics for ``version`` of ``path`` are known (see the module docstring)."""
        result = self._results.get(path)
        if result is None:
            return Pending()
        if result.version is not None:
            return Done(result) if result.version >= version else Pending()
        if result.at < sent_at:
            return Pending()
        if now >= result.at + settle:
            return Done(result)
        return WaitUntil(result.at + settle)

    # --- internals ------------------------------------------------------------------------

    def _require(self, state: State) -> None:
        if self.state != state:
            raise ValueError(f"LSP client is {self.state}, not {state}")  # our bug, not the server's

    def _frame(self, payload: bytes) -> bytes:
        return self._framer.encode(payload)

    def _on_initialized(self, raw: msgspec.Raw) -> list[Output]:
        result = jsonrpc.decode_as(raw, m.InitializeResult, "initialize result")
        provider = result.capabilities.diagnostic_provider
        self.pull = provider is not None and provider is not False
        self.server = result.server_info.name if result.server_info else None
        self.state = "ready"
        initialized = self._frame(self._rpc.notify("initialized", {}))
        return [Send(initialized), Ready(self.server, self.pull), Answered(self._init_id, "initialize")]

    def _answer(self, rid: jsonrpc.RequestId, method: str, params: msgspec.Raw) -> bytes:
        if method == "workspace/configuration":
            items = jsonrpc.decode_as(params, m.ConfigurationParams, method).items
            return self._rpc.respond(rid, [self._section(item.section) for item in items])
        if method in _NULL_ANSWERS:
            return self._rpc.respond(rid, None)
        if method == "workspace/workspaceFolders":
            uri = Path(self.root).as_uri()
            return self._rpc.respond(rid, [m.WorkspaceFolder(uri=uri, name=os.path.basename(self.root))])
        if method == "workspace/applyEdit":
            return self._rpc.respond(rid, {"applied": False, "failureReason": "read-only client"})
        return self._rpc.respond_error(rid, jsonrpc.METHOD_NOT_FOUND, f"corral does not serve {method}")

    def _section(self, section: str | None) -> Any:
        """``settings`` looked up by a dotted section, flat keys first (``"python.analysis"``)."""
        if not section:
            return self._settings
        if section in self._settings:
            return self._settings[section]
        node: Any = self._settings
        for part in section.split("."):
            if not isinstance(node, dict) or part not in node:
                return None
            node = node[part]
        return node

    def _record_push(self, publish: m.PublishDiagnosticsParams, now: float) -> list[Output]:
        path = _path_of(publish.uri)
        doc = self._docs.get(path) if path is not None else None
        if path is None or doc is None:
            return []  # not a document we hold open: nobody asked
        if publish.version is not None and publish.version < doc.version:
            return []  # stale: it describes a text the document no longer has
        self._results[path] = Result(publish.version, tuple(publish.diagnostics), now, doc.text)
        return [Published(path)]

    def _record_pull(self, rid: jsonrpc.RequestId, raw: msgspec.Raw, now: float) -> list[Output]:
        path, version, text = self._pulls.pop(rid)
        report = jsonrpc.decode_as(raw, m.DiagnosticReport, "textDocument/diagnostic result")
        doc = self._docs.get(path)
        if doc is None or report.kind != "full":
            return []
        current = self._results.get(path)
        if current is not None and current.version is not None and current.version > version:
            return []
        self._results[path] = Result(version, tuple(report.items), now, text)
        return [Published(path)]


def _path_of(uri: str) -> str | None:
    """The local path a ``file:`` URI names (percent-decoded), None for any other scheme."""
    parsed = urllib.parse.urlsplit(uri)
    if parsed.scheme != "file" or parsed.netloc not in ("", "localhost"):
        return None
    return os.path.normpath(urllib.parse.unquote(parsed.path))
