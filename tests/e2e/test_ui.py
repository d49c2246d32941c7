"""The browser UI in a real headless Chromium against a real daemon with the fake harness.

Each test starts its own daemon on a fixed free port; the browser is shared by the module (its
tabs are closed after each test). Screenshots of the main views land in ``tests/artifacts/``.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import threading
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from functools import partial
from pathlib import Path

import pytest
import trio
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support.ui import Select
from trio_websocket import open_websocket_url
from trio_websocket import HandshakeError

from tests.fakes.anthropic_server import FakeAnthropic, Scripted, bash, text
from tests.fakes.claude_offline import OFFLINE_ENV, claude_binary

from .uirig import CHROMEDRIVER, CHROMIUM, Daemon, Page, chromium, free_port, wait_for

pytestmark = [
    pytest.mark.skipif((CHROMIUM is None or CHROMEDRIVER is None) and not os.environ.get("CI"),
                       reason="needs Debian's chromium and chromium-driver (.ci/run installs them)"),
    pytest.mark.timeout(240),  # a browser, a daemon and the CLI on two shared cores
]


@pytest.fixture(scope="module")
def browser() -> Iterator[WebDriver]:
    driver = chromium()
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture
def driver(browser: WebDriver) -> Iterator[WebDriver]:
    """The shared browser, left with one blank tab after the test."""
    first = browser.window_handles[0]
    try:
        yield browser
    finally:
        for handle in browser.window_handles:
            if handle != first:
                browser.switch_to.window(handle)
                browser.close()
        browser.switch_to.window(first)
        browser.get("about:blank")


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[Daemon]:
    proc = Daemon(tmp_path / "state", free_port())
    proc.start()
    try:
        yield proc
    finally:
        proc.stop()


def new_session(daemon: Daemon, cwd: Path, name: str, *extra: str) -> str:
    return daemon.cli("new", "--harness", "fake", "--cwd", str(cwd), "--name", name, *extra).splitlines()[0]


def logged_in(driver: WebDriver, daemon: Daemon) -> Page:
    page = Page.open(driver, daemon.login_url())
    page.connected()
    assert driver.current_url == daemon.base + "/"  # the spent code left the address bar
    return page


def test_login_codes_work_once_and_nothing_else_gets_in(driver: WebDriver, daemon: Daemon) -> None:
    first = daemon.cli("ui")
    url = first.splitlines()[0]
    assert url.startswith(daemon.base + "/login?code=") and " " not in url
    token = (daemon.state / "token").read_text().strip()
    assert token not in first
    for target in (daemon.base + "/", daemon.base + "/login", daemon.base + "/login?code=forged"):
        Page.open(driver, target)
        assert "not authorised" in driver.find_element(By.TAG_NAME, "body").text, target
    page = Page.open(driver, url)
    page.connected()
    cookie = next(c for c in driver.get_cookies() if c["name"] == f"corral_ui_{daemon.port}")
    assert cookie["httpOnly"] and cookie["sameSite"] == "Strict" and token not in cookie["value"]
    assert page.js("return document.cookie") == ""  # HttpOnly: no script reads it
    Page.open(driver, url)  # replayed, even by the browser that used it
    assert "not authorised" in driver.find_element(By.TAG_NAME, "body").text
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(url, timeout=10)
    assert refused.value.code == 401


def test_a_new_session_is_listed_and_a_streamed_turn_is_identical_in_two_tabs(
        driver: WebDriver, daemon: Daemon, tmp_path: Path) -> None:
    a = logged_in(driver, daemon)
    sid = new_session(daemon, tmp_path, "alpha")
    wait_for(lambda: a.all(f'button[data-session-id="{sid}"]'), what="the new session in the list")
    assert "alpha" in a.text("#session-list") and "fake" in a.text("#session-list")
    # The list refreshes every second in place: a row keeps its element and its focus.
    row = a.find(f'button[data-session-id="{sid}"]')
    a.js("arguments[0].focus()", row)
    before = row.text
    wait_for(lambda: row.text != before, what="a refresh of the list")
    assert a.js("return document.activeElement === arguments[0]", row)
    a.select(sid)
    b = Page.open(driver, f"{daemon.base}/#{sid}")
    b.connected()
    a.focus()
    assert a.find("#prompt").accessible_name == "Prompt"
    a.prompt("/slow 6")
    for page in (a, b):
        page.wait_text("turn done (end_turn)")
    assert "w0 w1 w2 w3 w4 w5" in a.transcript()
    assert a.transcript() == b.transcript()
    last = daemon.events(sid)[-1]["seq"]
    wait_for(lambda: a.applied() == list(range(1, last + 1)), what="every seq once in tab A")
    assert b.applied() == a.applied()
    a.screenshot("ui-session")
    driver.set_window_size(390, 844)
    try:
        assert a.js("return document.documentElement.scrollWidth <= window.innerWidth")
        a.screenshot("ui-phone")
    finally:
        driver.set_window_size(1280, 800)
    external = a.js("return performance.getEntriesByType('resource').map(e => e.name)"
                    ".filter(n => !n.startsWith(location.origin))")
    assert external == []


def test_the_empty_state_points_to_the_session_list_where_the_layout_puts_it(
        driver: WebDriver, daemon: Daemon, tmp_path: Path) -> None:
    new_session(daemon, tmp_path, "listed")
    page = logged_in(driver, daemon)
    wait_for(lambda: page.all("#session-list button"), what="the session in the list")

    def where() -> tuple[str, str]:
        """The empty state's words, and where the list is relative to them."""
        words = page.text("#pick")
        nav, pick = (page.find(css).rect for css in ("nav.sessions", "#pick"))
        if nav["x"] + nav["width"] <= pick["x"]:
            return words, "left"
        return words, "above" if nav["y"] + nav["height"] <= pick["y"] else "elsewhere"

    assert where() == ("Pick a session on the left, or create one.", "left")
    driver.set_window_size(390, 844)
    try:
        assert where() == ("Pick a session from the list above, or create one.", "above")
    finally:
        driver.set_window_size(1280, 800)


def test_a_permission_answered_in_one_tab_goes_from_the_other(
        driver: WebDriver, daemon: Daemon, tmp_path: Path) -> None:
    sid = new_session(daemon, tmp_path, "perm")
    a = logged_in(driver, daemon)
    a.select(sid)
    b = Page.open(driver, f"{daemon.base}/#{sid}")
    b.connected()
    b.find("#prompt").send_keys("/ask echo approved-here")
    b.find("#send").click()
    for page in (a, b):
        wait_for(lambda page=page: page.all('#permissions [data-permission-id="p1"]'), what="the request")
    buttons = a.all('#permissions button[data-permission-id="p1"]')
    assert [button.accessible_name for button in buttons] == ["Allow", "Deny", "Always"]
    a.screenshot("ui-permission")
    buttons[0].click()
    wait_for(lambda: not b.all('#permissions [data-permission-id="p1"]'), what="p1 gone from tab B")
    for page in (a, b):
        page.wait_text("permission p1: allow (by browser)")  # the page's name in its hello
        page.wait_text("exec · bash · completed")
        assert "approved-here\n" in page.content("li.tool")  # the command's output
    # The keyboard: "d" (outside the prompt box) denies the oldest open request.
    a.prompt("/ask echo never")
    wait_for(lambda: b.all('#permissions [data-permission-id="p2"]'), what="p2 in tab B")
    b.find("body").send_keys("d")
    for page in (a, b):
        page.wait_text("permission p2: deny")
        page.wait_text("denied by user")
        assert not page.all("#permissions [data-permission-id]")
    assert any(f["event"]["type"] == "permission_decided" and f["event"]["decision"] == "deny"
               for f in daemon.events(sid))


def test_steer_and_interrupt_from_the_page(driver: WebDriver, daemon: Daemon, tmp_path: Path) -> None:
    sid = new_session(daemon, tmp_path, "steer")
    page = logged_in(driver, daemon)
    page.select(sid)
    page.prompt("/slow 40")
    page.wait_text("w1 ")
    page.prompt("go left")
    page.wait_text("[steered: go left]")
    assert "You · steered" in page.transcript()
    assert page.find("#interrupt").accessible_name == "Interrupt"
    page.find("#interrupt").click()
    page.wait_text("turn done (interrupted)")
    assert "w39" not in page.transcript()


def test_the_page_catches_up_after_the_daemon_is_killed_and_restarted(
        driver: WebDriver, daemon: Daemon, tmp_path: Path) -> None:
    sid = new_session(daemon, tmp_path, "phoenix", "--prompt", "before")
    page = logged_in(driver, daemon)
    page.select(sid)
    page.wait_text("echo: before")
    daemon.kill()
    page.wait_text("disconnected", css="#link")
    daemon.start()
    page.connected()
    page.wait_text("exit: daemon_restarted")
    daemon.cli("resume", sid)
    page.prompt("after")
    page.wait_text("echo: after")
    events = daemon.events(sid)
    wait_for(lambda: page.applied() == [e["seq"] for e in events], what="the page to hold the log once")
    text = page.transcript()
    assert text.count("echo: before") == 1 and text.count("echo: after") == 1
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    page.screenshot("ui-after-restart")


def test_create_and_close_a_session_and_see_the_daemons_children(
        driver: WebDriver, daemon: Daemon, tmp_path: Path) -> None:
    page = logged_in(driver, daemon)
    page.find("#new-session").click()
    wait_for(lambda: page.all('#create-harness option[value="fake"]'), what="the harness list")
    Select(page.find("#create-harness")).select_by_value("fake")
    page.find("#create-cwd").send_keys(str(tmp_path))
    page.find("#create-name").send_keys("made-here")
    page.find("#create-prompt").send_keys("hi there")
    page.find('#create button[type="submit"]').click()
    page.wait_text("echo: hi there")
    sid = page.text("#view-title").split("(")[1].rstrip(")")
    page.find("#daemon-toggle").click()
    page.wait_text(sid, css="#daemon")
    assert "Supervisors" in page.text("#daemon") and "restarts" in page.text("#daemon")
    page.screenshot("ui-daemon")
    page.find("#close-session").click()
    wait_for(lambda: page.text("#view-state") == "closed", what="the session closed")
    page.wait_text("exit: closed")


async def _websocket_with(port: int, headers: list[tuple[str, str]], hello_token: str) -> str:
    """What a raw websocket client gets: 'refused' before the upgrade, else the first answer's
    type or code."""
    try:
        async with open_websocket_url(f"ws://127.0.0.1:{port}/v1", extra_headers=headers) as ws:
            await ws.send_message(json.dumps({"type": "hello", "protocol": 1, "token": hello_token}))
            with trio.fail_after(10):
                frame = json.loads(await ws.get_message())
            return str(frame.get("code") or frame["type"])
    except HandshakeError:
        return "refused"


def test_another_origin_cannot_use_the_page_or_its_cookie(
        driver: WebDriver, daemon: Daemon, tmp_path: Path) -> None:
    logged_in(driver, daemon)
    cookie = next(c for c in driver.get_cookies() if c["name"] == f"corral_ui_{daemon.port}")
    site = tmp_path / "site"
    site.mkdir()
    (site / "index.html").write_text("<!doctype html><title>elsewhere</title><p>another site</p>")
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(SimpleHTTPRequestHandler, directory=str(site)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        # Same host, another port: the browser sends the cookie (cookies ignore ports).
        page = Page.open(driver, f"http://127.0.0.1:{server.server_address[1]}/")
        outcome = driver.execute_async_script(
            "const done = arguments[arguments.length - 1];"
            "const ws = new WebSocket(arguments[0]);"
            "ws.onopen = () => done('open'); ws.onerror = () => done('error');", f"ws://127.0.0.1:{daemon.port}/v1")
        assert outcome == "error"
        read = driver.execute_async_script(
            "const done = arguments[arguments.length - 1];"
            "fetch(arguments[0], {credentials: 'include'}).then(r => r.text()).then(t => done('read ' + t.length),"
            " () => done('blocked'));", daemon.base + "/")
        assert read == "blocked"
        assert page.js("return document.title") == "elsewhere"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)
    jar = ("Cookie", f"{cookie['name']}={cookie['value']}")
    own, other = ("Origin", daemon.base), ("Origin", "http://127.0.0.1:1")
    assert trio.run(_websocket_with, daemon.port, [jar, own], "") == "welcome"
    assert trio.run(_websocket_with, daemon.port, [jar, other], "") == "refused"
    assert trio.run(_websocket_with, daemon.port, [jar], "") == "unauthorized"  # no Origin: not our page
    assert trio.run(_websocket_with, daemon.port, [own], "") == "unauthorized"  # no cookie


def test_a_worktree_sessions_diff_is_shown(driver: WebDriver, daemon: Daemon, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run([*git, "init", "-q"], check=True, timeout=30)
    (repo / "README").write_text("hello\n")
    subprocess.run([*git, "add", "README"], check=True, timeout=30)
    subprocess.run([*git, "commit", "-qm", "first"], check=True, timeout=30)
    sid = new_session(daemon, repo, "wt", "--worktree", "--prompt", "/tool echo from-the-agent > made.txt")
    page = logged_in(driver, daemon)
    page.select(sid)
    page.wait_text("turn done (end_turn)")
    assert "branch corral/wt" in page.text("#view-meta")
    toggle = page.find("#diff-toggle")
    assert toggle.accessible_name == "Worktree diff"
    toggle.click()
    page.wait_text("+from-the-agent", css="#diff")
    assert "made.txt" in page.content("#diff")
    page.screenshot("ui-diff")


def test_the_transcript_applies_each_seq_once_and_reports_gaps(driver: WebDriver, daemon: Daemon) -> None:
    page = logged_in(driver, daemon)
    outcomes = driver.execute_async_script("""
        const done = arguments[arguments.length - 1];
        import('/ui/transcript.js').then(({ Transcript }) => {
          const t = new Transcript(document.createElement('ol'), document.createElement('div'));
          t.reset('s');
          const frame = (seq) => ({ seq, event: { type: 'assistant', text: `x${seq} `, delta: true } });
          const got = [1, 2, 2, 1, 4, 3, 4, 3].map((seq) => t.offer(frame(seq)));
          done({ got, applied: t.applied, text: t.list.textContent });
        }, (e) => done(String(e)));
    """)
    assert outcomes == {"got": ["applied", "applied", "duplicate", "duplicate", "gap", "applied", "applied",
                                "duplicate"],
                        "applied": [1, 2, 3, 4], "text": "x1 x2 x3 x4 "}
    assert page.js("return window.corral.transcript.sessionId") is None


def test_a_connection_the_sandbox_refused_is_marked_in_the_transcript(driver: WebDriver, daemon: Daemon) -> None:
    logged_in(driver, daemon)
    shown = driver.execute_async_script("""
        const done = arguments[arguments.length - 1];
        import('/ui/transcript.js').then(({ Transcript }) => {
          const list = document.createElement('ol');
          document.body.append(list);
          const t = new Transcript(list, document.createElement('div'));
          t.reset('s');
          t.offer({ seq: 1, event: { type: 'sandbox', kind: 'network', host: 'evil.example', port: 443,
                                     decision: 'denied', count: 1 } });
          t.offer({ seq: 2, event: { type: 'sandbox', kind: 'network', host: 'evil.example', port: 443,
                                     decision: 'denied', count: 7 } });
          const [item, repeats] = list.querySelectorAll('li');
          const bad = document.createElement('span');  // the page's colour for failures
          bad.className = 'error';
          document.body.append(bad);
          done({ text: item.textContent, repeats: repeats.textContent, classes: item.className,
                 color: getComputedStyle(item).color, bad: getComputedStyle(bad).color });
        }, (e) => done(String(e)));
    """)
    assert shown["text"] == "sandbox denied: network to evil.example:443 (not in allow_hosts)"
    assert shown["repeats"] == "sandbox denied ×7 more: network to evil.example:443 (not in allow_hosts)"
    assert shown["classes"] == "entry sandbox"
    assert shown["color"] == shown["bad"]  # shown as failures are


@contextmanager
def fake_anthropic(*script: Scripted) -> Iterator[int]:
    """The fake Anthropic server of ``tests.fakes`` in a thread of its own; yields its port."""
    ready: queue.Queue[tuple[int, trio.CancelScope, trio.lowlevel.TrioToken]] = queue.Queue()
    server = FakeAnthropic(script)

    async def main() -> None:
        async with trio.open_nursery() as nursery:
            port = await nursery.start(server.serve)
            ready.put((port, nursery.cancel_scope, trio.lowlevel.current_trio_token()))

    thread = threading.Thread(target=trio.run, args=(main,), daemon=True)
    thread.start()
    port, scope, token = ready.get(timeout=30)
    try:
        yield port
    finally:
        trio.from_thread.run_sync(scope.cancel, trio_token=token)
        thread.join(30)


@pytest.mark.vendor
@pytest.mark.skipif(claude_binary() is None, reason="Claude Code is not installed")
def test_a_claude_session_streams_and_asks_in_the_page(driver: WebDriver, daemon: Daemon, tmp_path: Path) -> None:
    work, home = tmp_path / "work", tmp_path / "home"
    work.mkdir()
    home.mkdir()
    script = [bash("echo made-by-claude > made.txt"), text("Made made.txt for you.")]
    with fake_anthropic(*script) as port:
        env = {**OFFLINE_ENV, "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{port}",
               "ANTHROPIC_API_KEY": "test-key", "HOME": str(home)}
        args = [f"--env={k}={v}" for k, v in env.items()]
        sid = daemon.cli("new", "--harness", "claude", "--cwd", str(work), "--name", "claude",
                         "--permissions", "ask", f"--option=binary={claude_binary()}",
                         f"--option=home={home / '.claude'}", *args).splitlines()[0]
        page = logged_in(driver, daemon)
        page.select(sid)
        page.prompt("make a file")
        wait_for(lambda: page.all("#permissions button[data-decision=allow]"), 90, what="Claude's question")
        page.find("#permissions button[data-decision=allow]").click()
        page.wait_text("Made made.txt for you.", timeout=90)
        page.wait_text("turn done (end_turn)")
        assert (work / "made.txt").read_text() == "made-by-claude\n"
        assert "exec · Bash · completed" in page.content("#transcript")
        page.screenshot("ui-claude")
        daemon.cli("close", sid)
