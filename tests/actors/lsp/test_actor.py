"""LSP actors against the scripted fake server: real processes, real pipes, generous timeouts."""

from __future__ import annotations

from pathlib import Path

import msgspec
import psutil
import pytest
import trio

from actors.lsp.report import DiagnosticsQuery, DiagnosticsReport
from supervisor.ledger.store import Ledger
from tests.actors.lsp.rig import fake_config, log_entries, running

LIMIT = 30  # seconds: every test here finishes far sooner unless something hangs


def states(report: DiagnosticsReport) -> dict[str, str]:
    return {s.server: s.state for s in report.servers}


def rendered(report: DiagnosticsReport) -> list[str]:
    return [d.render() for d in report.diagnostics]


async def test_diagnostics_come_back_and_a_fix_clears_them(tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    with trio.fail_after(LIMIT):
        async with running(fake_config(log=log)) as lsp:
            report = await lsp.diagnostics_after_write(str(tmp_path), "a.fk", "ok\n  ERROR here\n", 5)
            assert states(report) == {"fake": "ok"}
            assert rendered(report) == ["a.fk:2:3: error [fake E1] bad line 2"]
            assert report.text() == "Diagnostics:\na.fk:2:3: error [fake E1] bad line 2"
            fixed = await lsp.diagnostics_after_write(str(tmp_path), "a.fk", "ok\n", 5)
            assert states(fixed) == {"fake": "ok"} and fixed.diagnostics == [] and fixed.text() == ""
    entries = log_entries(log)
    methods = [e["method"] for e in entries if "method" in e]
    assert methods[:2] == ["initialize", "initialized"]
    assert methods.count("textDocument/didOpen") == 1 and methods.count("textDocument/didChange") == 1
    assert methods[-2:] == ["shutdown", "exit"]  # the polite goodbye came first
    assert {"configuration": [{"answer": 42}]} in [{k: v for k, v in e.items() if k != "pid"} for e in entries]


async def test_servers_start_lazily_one_per_root_and_server(tmp_path: Path) -> None:
    one, two = tmp_path / "one", tmp_path / "two"
    for root in (one, two):
        (root / ".git").mkdir(parents=True)
    with trio.fail_after(LIMIT):
        async with running(fake_config()) as lsp:
            assert lsp.infos() == []
            assert (await lsp.diagnostics_after_write(str(tmp_path), "notes.txt", "ERROR", 5)).servers == []
            assert lsp.infos() == []  # nothing handles .txt: nothing started
            async with trio.open_nursery() as nursery:  # two first writes at once: one actor
                for name in ("a.fk", "sub/b.fk"):
                    nursery.start_soon(lsp.diagnostics_after_write, str(tmp_path), f"one/{name}", "x", 5)
            assert [(i.root, i.server) for i in lsp.infos()] == [(str(one), "fake")]
            report = await lsp.diagnostics_after_write(str(tmp_path), "two/c.fk", "ERROR", 5)
            assert rendered(report) == ["two/c.fk:1:1: error [fake E1] bad line 1"]
            infos = lsp.infos()
            assert [(i.root, i.state, i.restarts) for i in infos] == [
                (str(one), "running", 0), (str(two), "running", 0)]
            assert len({i.pid for i in infos}) == 2


async def test_a_crash_is_reported_and_the_server_restarted(tmp_path: Path) -> None:
    with trio.fail_after(LIMIT):
        async with running(fake_config()) as lsp:
            await lsp.diagnostics_after_write(str(tmp_path), "a.fk", "fine", 5)
            (before,) = lsp.infos()
            report = await lsp.diagnostics_after_write(str(tmp_path), "a.fk", "CRASH", 5)
            assert states(report) == {"fake": "crashed"}
            assert report.text() == "Diagnostics: (fake crashed while checking this file)"
            after = await lsp.diagnostics_after_write(str(tmp_path), "a.fk", "ERROR", 5)
            assert states(after) == {"fake": "ok"} and len(after.diagnostics) == 1
            (info,) = lsp.infos()
            assert info.restarts == 1 and info.state == "running" and info.pid != before.pid
            assert not psutil.pid_exists(before.pid or 0)


async def test_past_its_restart_intensity_a_server_is_failed_and_answers_at_once(tmp_path: Path) -> None:
    with trio.fail_after(LIMIT):
        async with running(fake_config(restart_intensity=1)) as lsp:
            for _ in range(2):
                report = await lsp.diagnostics_after_write(str(tmp_path), "a.fk", "CRASH", 5)
                assert states(report) == {"fake": "crashed"}
            with trio.fail_after(5):
                await lsp.wait_until(lambda: lsp.infos()[0].state == "failed")
            (info,) = lsp.infos()
            assert (info.state, info.pid, info.restarts) == ("failed", None, 1)
            start = trio.current_time()
            report = await lsp.diagnostics_after_write(str(tmp_path), "a.fk", "fine", 5)
            assert states(report) == {"fake": "failed"} and trio.current_time() - start < 0.5


async def test_a_hung_server_is_killed_and_restarted(tmp_path: Path) -> None:
    with trio.fail_after(LIMIT):
        async with running(fake_config(request_timeout=0.5)) as lsp:
            await lsp.diagnostics_after_write(str(tmp_path), "a.fk", "fine", 5)
            (before,) = lsp.infos()
            report = await lsp.diagnostics_after_write(str(tmp_path), "a.fk", "HANG", 0.3)
            assert states(report) == {"fake": "timeout"}
            assert report.text() == "Diagnostics: (no diagnostics from fake within 0.3 s)"
            with trio.fail_after(10):  # the probe goes unanswered: killed, then restarted
                await lsp.wait_until(lambda: (lsp.infos()[0].restarts, lsp.infos()[0].state) == (1, "running"))
            assert not psutil.pid_exists(before.pid or 0)
            after = await lsp.diagnostics_after_write(str(tmp_path), "a.fk", "ERROR", 5)
            assert states(after) == {"fake": "ok"} and len(after.diagnostics) == 1


@pytest.mark.parametrize("flags", [("--no-version",), ("--no-version", "--stale")])
async def test_a_server_without_versions_is_settled(tmp_path: Path, flags: tuple[str, ...]) -> None:
    with trio.fail_after(LIMIT):
        async with running(fake_config(*flags)) as lsp:
            report = await lsp.diagnostics_after_write(str(tmp_path), "a.fk", "ERROR", 5)
            assert rendered(report) == ["a.fk:1:1: error [fake E1] bad line 1"]
            fixed = await lsp.diagnostics_after_write(str(tmp_path), "a.fk", "fine", 5)
            assert states(fixed) == {"fake": "ok"} and fixed.diagnostics == []


async def test_a_stale_versioned_publish_is_never_reported_as_current(tmp_path: Path) -> None:
    with trio.fail_after(LIMIT):
        async with running(fake_config("--stale")) as lsp:
            await lsp.diagnostics_after_write(str(tmp_path), "a.fk", "ERROR", 5)
            for _ in range(5):  # each change is preceded by the previous version's ERROR
                fixed = await lsp.diagnostics_after_write(str(tmp_path), "a.fk", "fine", 5)
                assert states(fixed) == {"fake": "ok"} and fixed.diagnostics == []
                broken = await lsp.diagnostics_after_write(str(tmp_path), "a.fk", "ERROR", 5)
                assert len(broken.diagnostics) == 1


async def test_pull_diagnostics_where_the_server_offers_them(tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    with trio.fail_after(LIMIT):
        async with running(fake_config("--pull", log=log)) as lsp:
            report = await lsp.diagnostics_after_write(str(tmp_path), "a.fk", "ERROR", 5)
            assert rendered(report) == ["a.fk:1:1: error [fake E1] bad line 1"]
            fixed = await lsp.diagnostics_after_write(str(tmp_path), "a.fk", "fine", 5)
            assert fixed.diagnostics == []
    methods = [e.get("method") for e in log_entries(log)]
    assert methods.count("textDocument/diagnostic") == 2


async def test_current_diagnostics_reads_the_file_and_reuses_a_known_version(tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    (tmp_path / "a.fk").write_text("x\nERROR\n")
    with trio.fail_after(LIMIT):
        async with running(fake_config(log=log)) as lsp:
            first = await lsp.current_diagnostics(str(tmp_path), "a.fk", 5)
            again = await lsp.current_diagnostics(str(tmp_path), str(tmp_path / "a.fk"), 5)
            assert rendered(first) == rendered(again) == ["a.fk:2:1: error [fake E1] bad line 2"]
    methods = [e.get("method") for e in log_entries(log)]
    assert methods.count("textDocument/didOpen") == 1 and "textDocument/didChange" not in methods


async def test_a_missing_program_is_a_warning_once_not_an_error(tmp_path: Path) -> None:
    config = fake_config()
    config.servers["fake"] = type(config.servers["fake"])(
        command=["corral-no-such-language-server"], extensions=[".fk"])
    with trio.fail_after(LIMIT):
        async with running(config) as lsp:
            for _ in range(2):
                report = await lsp.diagnostics_after_write(str(tmp_path), "a.fk", "ERROR", 5)
                assert states(report) == {"fake": "unavailable"} and report.text() == ""
            assert [(w.code, w.server) for w in lsp.warnings] == [("lsp.binary_missing", "fake")]
            assert lsp.infos() == []


async def test_closing_kills_the_whole_family_and_drops_the_ledger_rows(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / "state")
    with trio.fail_after(LIMIT):
        async with running(fake_config("--children", "--ignore-term"), ledger) as lsp:
            await lsp.diagnostics_after_write(str(tmp_path), "a.fk", "ERROR", 5)
            (info,) = lsp.infos()
            assert info.pid is not None
            assert len(psutil.Process(info.pid).children()) == 2
            assert [row.kind for row in ledger.rows()] == ["lsp:fake"]
        # running() checked that neither the server nor its two children survive
    assert ledger.rows() == []


async def test_an_idle_server_is_stopped_and_started_again_on_the_next_write(tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    with trio.fail_after(LIMIT):
        async with running(fake_config(log=log, idle_timeout=0.5)) as lsp:
            await lsp.diagnostics_after_write(str(tmp_path), "a.fk", "x", 5)
            (first,) = lsp.infos()
            with trio.fail_after(10):
                await lsp.wait_until(lambda: not lsp.infos())
            assert not psutil.pid_exists(first.pid or 0)
            report = await lsp.diagnostics_after_write(str(tmp_path), "a.fk", "ERROR", 5)
            assert states(report) == {"fake": "ok"} and len(report.diagnostics) == 1
            (second,) = lsp.infos()
            assert second.pid != first.pid and second.restarts == 0
    methods = [e.get("method") for e in log_entries(log)]
    assert methods.count("initialize") == 2 and methods.count("shutdown") == 2


async def test_the_worker_query_frame_round_trips_through_msgpack(tmp_path: Path) -> None:
    (tmp_path / "b.fk").write_text("ERROR\n")
    encode, decode = msgspec.msgpack.encode, msgspec.msgpack.decode
    with trio.fail_after(LIMIT):
        async with running(fake_config()) as lsp:
            for query in (DiagnosticsQuery(path="a.fk", text="x\nERROR", settle_timeout=5),
                          DiagnosticsQuery(path="b.fk", settle_timeout=5)):
                wire = decode(encode(query), type=DiagnosticsQuery)
                report = decode(encode(await lsp.answer(str(tmp_path), wire)), type=DiagnosticsReport)
                assert len(report.diagnostics) == 1 and report.text().startswith("Diagnostics:\n")
            missing = await lsp.answer(str(tmp_path), DiagnosticsQuery(path="gone.fk"))
            assert missing == DiagnosticsReport(path="gone.fk")


async def test_the_first_write_to_a_cold_server_waits_for_its_start_up(tmp_path: Path) -> None:
    with trio.fail_after(LIMIT):
        async with running(fake_config("--slow-start")) as lsp:
            start = trio.current_time()
            report = await lsp.diagnostics_after_write(str(tmp_path), "a.fk", "ERROR", 0.2)
            assert states(report) == {"fake": "ok"} and len(report.diagnostics) == 1
            assert trio.current_time() - start >= 1.0  # it did wait past the settle timeout
