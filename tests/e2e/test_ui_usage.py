"""The browser's Usage view and each session's cost, in a real headless Chromium.

The state directory starts with four closed sessions of four harnesses whose figures were
computed by hand (``tests.actors.usage.logs``), priced by a user ``prices.toml``; the page must
show exactly those figures (totals, by day, by harness, by model, and each session's cost in the
list), and then follow a live fake session whose turn reports a cost of its own.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from selenium.webdriver.remote.webdriver import WebDriver

from tests.actors.usage.logs import EXPECTED_BY, EXPECTED_TOTALS, write_fixture

from .uirig import CHROMEDRIVER, CHROMIUM, Daemon, Page, chromium, free_port, wait_for

pytestmark = [
    pytest.mark.skipif((CHROMIUM is None or CHROMEDRIVER is None) and not os.environ.get("CI"),
                       reason="needs Debian's chromium and chromium-driver (.ci/run installs them)"),
    pytest.mark.timeout(240),
]

PRICES = '["m-priced"]\ninput = 2.0\noutput = 10.0\ncache_read = 0.5\n'
SCRIPT = ("read line; echo '" + json.dumps({"type": "result", "stop_reason": "end_turn", "cost_usd": 0.25,
                                            "usage": {"input_tokens": 40, "output_tokens": 2}})
          + "'; while read line; do :; done")


def dollars(value: float) -> str:
    return f"${value:.4f}"


def cost_text(f: dict[str, float]) -> str:
    """What usage.js's ``costText`` shows for figures ``f``."""
    text = dollars(f["cost_usd"])
    if f["estimated_cost_usd"] > 0:
        text += f" (est. {dollars(f['estimated_cost_usd'])})"
    if f["unpriced_turns"]:
        text += f" + {f['unpriced_turns']} unpriced turn" + ("" if f["unpriced_turns"] == 1 else "s")
    return text


@pytest.fixture
def driver() -> Iterator[WebDriver]:
    browser = chromium()
    try:
        yield browser
    finally:
        browser.quit()


@pytest.fixture
def daemon(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Daemon]:
    (tmp_path / "config" / "corral").mkdir(parents=True)
    (tmp_path / "config" / "corral" / "prices.toml").write_text(PRICES)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    write_fixture(tmp_path / "state")
    proc = Daemon(tmp_path / "state", free_port())
    proc.start()
    try:
        yield proc
    finally:
        proc.stop()


def rows_of(page: Page, by: str) -> dict[str, list[str]]:
    """A Usage table's rows by key: the cells' text."""
    rows = page.js(f"""return [...document.querySelectorAll('table[data-usage-by="{by}"] tbody tr')]
        .map(tr => [...tr.children].map(c => c.textContent))""")
    return {row[0]: row[1:] for row in rows}


def cells(f: dict[str, float]) -> list[str]:
    return [str(f[k]) for k in ("turns", "errors", "input_tokens", "output_tokens", "cache_read_tokens",
                                "cache_write_tokens")] + [
        dollars(f["cost_usd"]), dollars(f["estimated_cost_usd"]), str(f["unpriced_turns"])]


def test_the_usage_view_and_each_sessions_cost(driver: WebDriver, daemon: Daemon, tmp_path: Path) -> None:
    page = Page.open(driver, daemon.login_url(), new_tab=False)
    page.connected()
    for sid, figures in EXPECTED_BY["session"].items():
        expected = f"{figures['turns']} turn{'' if figures['turns'] == 1 else 's'} · {cost_text(figures)}"
        wait_for(lambda sid=sid, expected=expected: page.all(f'button[data-session-id="{sid}"] .cost')
                 and page.text(f'button[data-session-id="{sid}"] .cost') == expected,
                 what=f"{sid}'s cost {expected!r}")
    page.find("#usage-toggle").click()
    t = EXPECTED_TOTALS
    totals = (f"{t['turns']} turns · {t['errors']} errors · {t['input_tokens']} input and "
              f"{t['output_tokens']} output tokens · cost {cost_text(t)}")
    wait_for(lambda: page.all("#usage-totals") and page.text("#usage-totals") == totals, what=totals)
    assert page.find("#usage-toggle").get_attribute("aria-expanded") == "true"
    for by in ("day", "harness", "model"):
        assert rows_of(page, by) == {key: cells(f) for key, f in EXPECTED_BY[by].items()}, by
    page.screenshot("ui-usage")

    # A live session: its turn's own cost reaches its row, its header and the open view.
    (tmp_path / "work").mkdir()
    sid = daemon.cli("new", "--harness", "fake", "--cwd", str(tmp_path / "work"), "--name", "live",
                     "--option", f"script={SCRIPT}").splitlines()[0]
    page.select(sid)
    wait_for(lambda: page.text(f'button[data-session-id="{sid}"] .cost') == "no turns yet",
             what="a session without turns")
    page.prompt("go")
    wait_for(lambda: page.text(f'button[data-session-id="{sid}"] .cost') == "1 turn · $0.2500",
             what="the live session's cost")
    wait_for(lambda: "cost so far $0.2500" in page.text("#view-meta"), what="the cost in the header")
    wait_for(lambda: page.text("#usage-totals").startswith(f"{t['turns'] + 1} turns · "),
             what="the view updated")
    assert rows_of(page, "harness")["fake"][0] == "3"
