"""The sans-IO LSP client: handshake, server requests, versions, settling and pulls, byte-level."""

from __future__ import annotations

import json
from typing import Any

import pytest

from actors.lsp.core import Answered, Done, LspCore, Pending, Published, Ready, Send, WaitUntil
from protocol.errors import ProtocolError
from protocol.framing import ContentLengthFramer

ROOT = "/w"
PATH = "/w/a.py"
URI = "file:///w/a.py"


def sent(data: bytes) -> list[dict[str, Any]]:
    framer = ContentLengthFramer()
    framer.receive_data(data)
    return [json.loads(frame) for frame in framer.frames()]


def frames(outputs: list[Any]) -> list[dict[str, Any]]:
    return [msg for out in outputs if isinstance(out, Send) for msg in sent(out.data)]


def server(**message: Any) -> bytes:
    return json.dumps({"jsonrpc": "2.0", **message}).encode()


def publish(version: int | None, *lines: int, uri: str = URI) -> bytes:
    params: dict[str, Any] = {"uri": uri, "diagnostics": [
        {"range": {"start": {"line": n, "character": 0}, "end": {"line": n, "character": 1}},
         "message": f"line {n}", "severity": 1} for n in lines]}
    if version is not None:
        params["version"] = version
    return server(method="textDocument/publishDiagnostics", params=params)


def ready_core(*, pull: bool = False, settings: dict[str, Any] | None = None) -> LspCore:
    core = LspCore(ROOT, settings=settings, initialization_options={"x": 1})
    rid, data = core.start()
    (init,) = sent(data)
    assert init["method"] == "initialize" and init["id"] == rid
    caps = init["params"]["capabilities"]
    assert caps["textDocument"]["publishDiagnostics"]["versionSupport"] is True
    assert init["params"]["rootUri"] == "file:///w" and init["params"]["initializationOptions"] == {"x": 1}
    result: dict[str, Any] = {"capabilities": {"diagnosticProvider": {}} if pull else {}}
    out = core.receive(server(id=rid, result=result), 0.0)
    assert frames(out) == [{"jsonrpc": "2.0", "method": "initialized", "params": {}}]
    assert Ready(None, pull) in out and Answered(rid, "initialize") in out
    assert core.state == "ready" and core.pull is pull
    return core


def test_initialized_is_the_first_thing_sent_after_the_answer() -> None:
    ready_core()


def test_server_requests_are_answered_in_every_state() -> None:
    core = LspCore(ROOT, settings={"python": {"analysis": {"mode": "basic"}}, "fake.flat": 7})
    core.start()
    items = [{"section": "python.analysis"}, {"section": "fake.flat"}, {"section": "nope"}, {}]
    out = frames(core.receive(server(id="c1", method="workspace/configuration",
                                     params={"items": items}), 0.0))
    assert out == [{"jsonrpc": "2.0", "id": "c1", "result": [
        {"mode": "basic"}, 7, None, {"python": {"analysis": {"mode": "basic"}}, "fake.flat": 7}]}]
    for method in ("client/registerCapability", "window/workDoneProgress/create"):
        assert frames(core.receive(server(id=5, method=method, params={}), 0.0)) == [
            {"jsonrpc": "2.0", "id": 5, "result": None}]
    (refused,) = frames(core.receive(server(id=6, method="custom/thing"), 0.0))
    assert refused["error"]["code"] == -32601


def test_sync_opens_then_changes_with_full_text_and_skips_unchanged_text() -> None:
    core = ready_core()
    version, out = core.sync(PATH, "python", "x = 1\n", 1.0)
    (opened,) = [m for data in out for m in sent(data)]
    assert version == 1 and opened["method"] == "textDocument/didOpen"
    assert opened["params"]["textDocument"] == {"uri": URI, "languageId": "python", "version": 1,
                                                "text": "x = 1\n"}
    assert core.sync(PATH, "python", "x = 1\n", 2.0) == (1, [])
    version, out = core.sync(PATH, "python", "x = 2\n", 3.0)
    (changed,) = [m for data in out for m in sent(data)]
    assert version == 2 and changed["method"] == "textDocument/didChange"
    assert changed["params"] == {"textDocument": {"uri": URI, "version": 2},
                                 "contentChanges": [{"text": "x = 2\n"}]}
    assert core.sent_at(PATH) == 3.0


def test_the_least_recently_used_document_is_closed_beyond_the_bound() -> None:
    core = LspCore(ROOT, max_documents=2)
    rid, _ = core.start()
    core.receive(server(id=rid, result={"capabilities": {}}), 0.0)
    core.sync("/w/a.py", "python", "a", 0.0)
    core.sync("/w/b.py", "python", "b", 0.0)
    core.sync("/w/a.py", "python", "a", 0.0)  # touch a: b is now the oldest
    _, out = core.sync("/w/c.py", "python", "c", 0.0)
    methods = [(m["method"], m["params"]["textDocument"]["uri"]) for d in out for m in sent(d)]
    assert methods == [("textDocument/didClose", "file:///w/b.py"), ("textDocument/didOpen", "file:///w/c.py")]
    assert core.version("/w/b.py") is None


def test_a_versioned_result_counts_from_its_version_on_and_stale_ones_never() -> None:
    core = ready_core()
    core.sync(PATH, "python", "bad\n", 0.0)
    core.sync(PATH, "python", "good\n", 0.1)
    assert core.receive(publish(1, 0), 0.2) == []  # v1 after v2 was sent: stale, dropped
    assert core.verdict(PATH, 2, 0.1, 0.2, 0.5) == Pending()
    assert core.receive(publish(2), 0.3) == [Published(PATH)]
    verdict = core.verdict(PATH, 2, 0.1, 0.3, 0.5)
    assert isinstance(verdict, Done) and verdict.result.items == () and verdict.result.version == 2
    core.sync(PATH, "python", "bad\n", 0.4)
    core.sync(PATH, "python", "worse\n", 0.5)
    core.receive(publish(4, 0), 0.6)  # coalesced: only the newest version is published
    verdict = core.verdict(PATH, 3, 0.4, 0.6, 0.5)
    assert isinstance(verdict, Done) and verdict.result.version == 4 and verdict.result.text == "worse\n"


def test_a_versionless_result_settles_after_a_quiet_window() -> None:
    core = ready_core()
    core.sync(PATH, "python", "bad\n", 1.0)
    core.receive(publish(None, 0), 0.5)  # arrived before the change was sent
    assert core.verdict(PATH, 1, 1.0, 1.2, 0.5) == Pending()
    core.receive(publish(None, 0), 1.3)
    assert core.verdict(PATH, 1, 1.0, 1.4, 0.5) == WaitUntil(1.8)
    core.receive(publish(None), 1.6)  # a newer publish restarts the window
    assert core.verdict(PATH, 1, 1.0, 1.8, 0.5) == WaitUntil(2.1)
    verdict = core.verdict(PATH, 1, 1.0, 2.1, 0.5)
    assert isinstance(verdict, Done) and verdict.result.items == ()


def test_publishes_for_documents_not_open_are_ignored() -> None:
    core = ready_core()
    assert core.receive(publish(1, 0, uri="file:///w/other.py"), 0.0) == []
    assert core.receive(publish(1, 0, uri="untitled:1"), 0.0) == []


def test_percent_encoded_uris_name_the_same_path() -> None:
    core = ready_core()
    core.sync("/w/a b.py", "python", "x", 0.0)
    assert core.receive(publish(1, 0, uri="file:///w/a%20b.py"), 0.0) == [Published("/w/a b.py")]


def test_pull_results_belong_to_the_version_current_at_the_request() -> None:
    core = ready_core(pull=True)
    core.sync(PATH, "python", "bad\n", 0.0)
    rid, data = core.pull_request(PATH)
    (request,) = sent(data)
    assert request["method"] == "textDocument/diagnostic"
    assert request["params"] == {"textDocument": {"uri": URI}}
    core.sync(PATH, "python", "good\n", 0.1)
    full = {"kind": "full", "items": [{"range": {"start": {"line": 0, "character": 0},
                                                 "end": {"line": 0, "character": 1}},
                                       "message": "m"}]}
    out = core.receive(server(id=rid, result=full), 0.2)
    assert out == [Published(PATH), Answered(rid, "textDocument/diagnostic")]
    assert core.verdict(PATH, 2, 0.0, 0.2, 0.0) == Pending()  # that answer was for version 1
    verdict = core.verdict(PATH, 1, 0.0, 0.2, 0.0)
    assert isinstance(verdict, Done) and verdict.result.text == "bad\n"


def test_a_pull_error_is_answered_not_raised() -> None:
    core = ready_core(pull=True)
    core.sync(PATH, "python", "x", 0.0)
    rid, _ = core.pull_request(PATH)
    (out,) = core.receive(server(id=rid, error={"code": -32801, "message": "modified"}), 0.1)
    assert isinstance(out, Answered) and out.error is not None and out.error.code == -32801


def test_a_refused_initialize_is_a_protocol_error() -> None:
    core = LspCore(ROOT)
    rid, _ = core.start()
    with pytest.raises(ProtocolError, match="refused initialize"):
        core.receive(server(id=rid, error={"code": -32603, "message": "no"}), 0.0)


def test_garbage_and_malformed_publishes_are_protocol_errors() -> None:
    core = ready_core()
    with pytest.raises(ProtocolError):
        core.receive(b"{", 0.0)
    with pytest.raises(ProtocolError, match="publishDiagnostics"):
        core.receive(server(method="textDocument/publishDiagnostics", params={"uri": 1}), 0.0)


def test_the_ping_is_a_dollar_request_and_its_method_not_found_is_an_answer() -> None:
    core = ready_core()
    rid, data = core.ping()
    assert sent(data)[0]["method"].startswith("$/")
    (out,) = core.receive(server(id=rid, error={"code": -32601, "message": "unknown"}), 0.0)
    assert isinstance(out, Answered) and out.id == rid


def test_shutdown_then_exit() -> None:
    core = ready_core()
    rid, data = core.shutdown()
    assert sent(data)[0] == {"jsonrpc": "2.0", "id": rid, "method": "shutdown"}
    assert sent(core.exit()) == [{"jsonrpc": "2.0", "method": "exit"}]


def test_using_the_core_before_it_is_ready_is_our_bug() -> None:
    with pytest.raises(ValueError):
        LspCore(ROOT).sync(PATH, "python", "x", 0.0)
