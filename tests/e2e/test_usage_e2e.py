"""``usage.summary`` and ``corral usage`` through a real daemon, against hand-computed figures.

One daemon, with a user price table (``$XDG_CONFIG_HOME/corral/prices.toml``), runs two fake
sessions (scripted children reporting usage, one model priced by the table, one not, one turn
with its own cost) and a native session whose worker talks to the fake model server and prices
its turn itself. The summary is checked field by field for each ``by``, with ``since``, over
the protocol and through ``corral usage --json`` with the daemon running and after it stopped
(the CLI then reads the state directory itself). A real Claude Code session (against the fake
Anthropic server) shows a vendor's own cost counted as reported, not estimated.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import trio

from tests.fakes.anthropic_server import FakeAnthropic, text
from tests.fakes.model_script import say
from tests.fakes.model_server import FakeModels

from .daemonproc import RawClient, raw_client, start_daemon, stop_daemon
from .test_claude_e2e import IDLE
from .test_claude_e2e import create_params as claude_params
from .vendor_rig import daemon_session, is_kind, of

REPO = Path(__file__).resolve().parents[2]
TIMEOUT = 120
PRICES = """
["fake-priced"]
input = 3.0
output = 15.0
cache_read = 0.3

["fake-model"]
input = 2.0
output = 10.0
"""


def result_line(**fields: Any) -> str:
    return "echo '" + json.dumps({"type": "result", "stop_reason": "end_turn", **fields}) + "'"


# Three turns of "fake-priced": (1000*3 + 100*15 + 2000*0.3)/1e6 = $0.0051 estimated; an error
# turn of 10 input tokens, $0.00003 estimated; a turn reporting its own $0.5.
PRICED = "; ".join([
    """echo '{"type":"init","model":"fake-priced"}'""",
    "read line", result_line(usage={"input_tokens": 1000, "output_tokens": 100, "cache_read_tokens": 2000}),
    "read line", result_line(is_error=True, usage={"input_tokens": 10}),
    "read line", result_line(usage={"input_tokens": 5}, cost_usd=0.5),
    "while read line; do :; done",
])
# One turn of a model no table prices.
UNPRICED = "; ".join([
    """echo '{"type":"init","model":"mystery"}'""",
    "read line", result_line(usage={"input_tokens": 7, "output_tokens": 3}),
    "while read line; do :; done",
])


def figures(turns: int, errors: int, i: int, o: int, cr: int, cost: float, est: float,
            unpriced: int) -> dict[str, Any]:
    return {"turns": turns, "errors": errors, "input_tokens": i, "output_tokens": o,
            "cache_read_tokens": cr, "cache_write_tokens": 0, "cost_usd": pytest.approx(cost, abs=1e-9),
            "estimated_cost_usd": pytest.approx(est, abs=1e-9), "unpriced_turns": unpriced}


PRICED_FIGURES = figures(3, 1, 1015, 100, 2000, 0.50513, 0.00513, 0)
UNPRICED_FIGURES = figures(1, 0, 7, 3, 0, 0.0, 0.0, 1)
NATIVE_FIGURES = figures(1, 0, 30, 7, 0, 0.00013, 0.0, 0)  # (30*2 + 7*10)/1e6, priced by the worker
TOTALS = figures(5, 1, 1052, 110, 2000, 0.50526, 0.00513, 1)


async def turns(client: RawClient, sid: str, prompts: int) -> list[dict[str, Any]]:
    """Prompt ``prompts`` times, each after the previous turn's result; the results."""
    results = []
    for n in range(prompts):
        await client.ok("session.prompt", session_id=sid, text=f"turn {n}")
        frames = await client.events_until(
            sid, lambda f: f["type"] == "event" and f["event"]["type"] == "result", timeout=TIMEOUT)
        results.append(frames[-1]["event"])
    return results


def corral_usage(state: Path, *args: str) -> dict[str, Any]:
    out = subprocess.run([sys.executable, "-m", "actors.app", "usage", "--json", "--state-dir",
                          str(state), *args], cwd=REPO, capture_output=True, text=True, timeout=60,
                         check=True)
    answer: dict[str, Any] = json.loads(out.stdout)
    return answer


def keyed(answer: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {g.pop("key"): g for g in answer["groups"]}


async def test_fake_and_native_sessions_sum_to_the_hand_computed_figures(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "config" / "corral").mkdir(parents=True)
    (tmp_path / "config" / "corral" / "prices.toml").write_text(PRICES)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))  # the daemon's and the CLI's
    (tmp_path / "work").mkdir()
    state = tmp_path / "state"
    server = FakeModels([say("Done.", input_tokens=30, output_tokens=7)])
    with trio.fail_after(TIMEOUT):
        async with trio.open_nursery() as nursery:
            port = await nursery.start(server.serve)
            daemon = await start_daemon(state)
            try:
                async with raw_client(daemon) as client:
                    sids = {}
                    created = await client.call(  # a native worker may take a while to start
                        "session.create", timeout=TIMEOUT, harness="native",
                        cwd=str(tmp_path / "work"), model="openai/fake-model",
                        options={"base_url": f"http://127.0.0.1:{port}/v1"},
                        env={"OPENAI_API_KEY": "sk-usage-e2e"}, permissions={"mode": "auto"})
                    assert created["type"] == "ok", created
                    sids["native"] = created["result"]["session"]["id"]
                    await client.ok("session.subscribe", session_id=sids["native"])
                    for name, script in (("priced", PRICED), ("unpriced", UNPRICED)):
                        created = await client.ok("session.create", harness="fake", cwd=str(tmp_path),
                                                  options={"script": script})
                        sids[name] = created["session"]["id"]
                        await client.ok("session.subscribe", session_id=sids[name])
                    priced = await turns(client, sids["priced"], 3)
                    assert [r["is_error"] for r in priced] == [False, True, False]
                    await turns(client, sids["unpriced"], 1)
                    (native,) = await turns(client, sids["native"], 1)
                    assert native["cost_usd"] == pytest.approx(0.00013)
                    await client.ok("session.close", session_id=sids["priced"])  # closed ones count

                    answer = await client.ok("usage.summary")
                    assert answer == {"totals": TOTALS, "groups": []}
                    by_harness = await client.ok("usage.summary", by="harness")
                    assert by_harness["totals"] == TOTALS
                    assert keyed(by_harness) == {
                        "fake": figures(4, 1, 1022, 103, 2000, 0.50513, 0.00513, 1),
                        "native": NATIVE_FIGURES}
                    by_session = keyed(await client.ok("usage.summary", by="session"))
                    assert by_session == {sids["priced"]: PRICED_FIGURES,
                                          sids["unpriced"]: UNPRICED_FIGURES,
                                          sids["native"]: NATIVE_FIGURES}
                    by_model = keyed(await client.ok("usage.summary", by="model"))
                    native_model = [k for k in by_model if k not in ("fake-priced", "mystery")]
                    assert native_model in (["openai/fake-model"], ["fake-model"])
                    assert by_model == {"fake-priced": PRICED_FIGURES, "mystery": UNPRICED_FIGURES,
                                        native_model[0]: NATIVE_FIGURES}
                    today = dt.datetime.now(dt.UTC).date()
                    by_day = await client.ok("usage.summary", by="day", since="1d")
                    days = [g["key"] for g in by_day["groups"]]
                    assert days in ([today.isoformat()],
                                    [(today - dt.timedelta(days=1)).isoformat(), today.isoformat()])
                    assert by_day["totals"] == TOTALS
                    tomorrow = (today + dt.timedelta(days=1)).isoformat()
                    later = await client.ok("usage.summary", since=tomorrow, by="day")
                    assert later == {"totals": figures(0, 0, 0, 0, 0, 0.0, 0.0, 0), "groups": []}
                    for params, field in (({"since": "soon"}, "since"), ({"by": "week"}, "by")):
                        refused = await client.call("usage.summary", **params)
                        assert refused["type"] == "error" and refused["code"] == "bad_request"
                        assert refused["data"]["field"] == field

                    # corral usage asks the running daemon: the same figures
                    live = await trio.to_thread.run_sync(corral_usage, state, "--by", "harness")
                    assert live == await client.ok("usage.summary", by="harness")
            finally:
                assert await stop_daemon(daemon) == 0
            nursery.cancel_scope.cancel()
    # No daemon: corral usage reads the state directory itself, closed sessions and all.
    assert not (state / "daemon.json").exists()
    for index in state.glob("sessions/*/usage.idx"):
        index.unlink()  # rebuilt from the logs
    offline = corral_usage(state, "--by", "session")
    assert offline["totals"] == TOTALS
    assert keyed(offline) == by_session
    table = subprocess.run([sys.executable, "-m", "actors.app", "usage", "--by", "harness",
                            "--state-dir", str(state)], cwd=REPO, capture_output=True, text=True,
                           timeout=60, check=True).stdout.splitlines()
    assert table[0].split() == ["HARNESS", "TURNS", "ERRORS", "INPUT", "OUTPUT", "CACHE", "READ",
                                "CACHE", "WRITE", "COST", "ESTIMATED", "UNPRICED"]
    assert table[1].split() == ["fake", "4", "1", "1,022", "103", "2,000", "0", "$0.5051", "$0.0051", "1"]
    assert table[-1].split() == ["total", "5", "1", "1,052", "110", "2,000", "0", "$0.5053", "$0.0051", "1"]
    refused = subprocess.run([sys.executable, "-m", "actors.app", "usage", "--since", "soon",
                              "--state-dir", str(state)], cwd=REPO, capture_output=True, text=True,
                             timeout=60)
    assert refused.returncode == 1 and refused.stderr.startswith("corral: since 'soon'")
    assert "Traceback" not in refused.stderr


@pytest.mark.vendor
async def test_claude_codes_own_cost_counts_as_reported(tmp_path: Path) -> None:
    from .test_claude_e2e import BINARY, INSTALL_HINT

    if BINARY is None and not os.environ.get("CI"):
        pytest.skip(f"Claude Code is not installed ({INSTALL_HINT})")
    server = FakeAnthropic([text("One."), text("Two.")])
    with trio.fail_after(TIMEOUT):
        async with trio.open_nursery() as nursery:
            port = await nursery.start(server.serve)
            async with daemon_session(tmp_path / "state", claude_params(tmp_path, port),
                                      timeout=TIMEOUT, ready=IDLE) as rig:
                results = [of(await rig.turn(prompt), "result")[0] for prompt in ("one", "two")]
                assert all(r["cost_usd"] and r["cost_usd"] > 0 for r in results), results
                init = await rig.client.ok("session.get", session_id=rig.sid)
                answer = await rig.client.ok("usage.summary", by="model")
                usage = [r["usage"] for r in results]
                expected = {
                    "turns": 2, "errors": 0,
                    **{k: sum(u[k] for u in usage) for k in usage[0]},
                    "cost_usd": pytest.approx(sum(r["cost_usd"] for r in results), abs=1e-9),
                    "estimated_cost_usd": 0.0, "unpriced_turns": 0}
                assert answer["totals"] == expected
                assert expected["input_tokens"] > 0 and expected["output_tokens"] > 0
                (group,) = answer["groups"]
                assert group.pop("key").startswith("claude"), init
                assert group == expected
                await rig.until(is_kind("status", state="idle"))
            nursery.cancel_scope.cancel()
