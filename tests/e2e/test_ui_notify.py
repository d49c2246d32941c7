"""The page's "Notifications" switch in a real headless Chromium, with the notification
permission granted over CDP (``Browser.grantPermissions``): while the tab is hidden a permission
request and a finished turn show a system notification, observed through a wrapped
``window.Notification``; a visible tab shows none. ``document.visibilityState`` is overridden
in the page (headless Chromium has no window to hide)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from selenium.webdriver.remote.webdriver import WebDriver

from .test_ui import browser, daemon, driver, logged_in, new_session, pytestmark  # noqa: F401 - fixtures
from .uirig import Daemon, Page, wait_for

_OBSERVE = """
window.__shown = [];
const Real = window.Notification;
window.Notification = class extends Real {
  constructor(title, options) {
    super(title, options);
    window.__shown.push({ title, body: options?.body ?? "", tag: options?.tag ?? "" });
  }
};
"""
_VISIBILITY = "Object.defineProperty(document, 'visibilityState', {configurable: true, get: () => arguments[0]});"


def shown(page: Page) -> list[dict[str, Any]]:
    return list(page.js("return window.__shown"))


def test_the_switch_asks_for_permission_then_a_hidden_tab_notifies(
        driver: WebDriver, daemon: Daemon, tmp_path: Path) -> None:
    sid = new_session(daemon, tmp_path, "alpha")
    other = new_session(daemon, tmp_path, "beta")
    page = logged_in(driver, daemon)
    switch = page.find("#notify-toggle")
    assert switch.accessible_name == "Notifications" and switch.get_attribute("role") == "switch"
    assert switch.get_attribute("aria-checked") == "false"
    driver.execute_cdp_cmd("Browser.grantPermissions", {"origin": daemon.base, "permissions": ["notifications"]})
    switch.click()
    wait_for(lambda: switch.get_attribute("aria-checked") == "true", what="the switch on")
    assert page.js("return Notification.permission") == "granted"
    page.select(sid)
    page.js(_OBSERVE)

    # Visible: a finished turn shows nothing.
    page.prompt("hello there")
    page.wait_text("turn done (end_turn)")
    assert shown(page) == []

    # Hidden: the open session's permission request, then its finished turn.
    page.js(_VISIBILITY, "hidden")
    daemon.cli("send", sid, "/ask echo from-the-cli")
    wait_for(lambda: len(shown(page)) == 1, what="the permission's notification")
    assert shown(page)[0] == {"title": "alpha: permission needed", "body": "bash wants to run",
                              "tag": f"{sid}:permission"}
    daemon.cli("approve", sid, "p1")
    wait_for(lambda: len(shown(page)) == 2, what="the finished turn's notification")
    assert shown(page)[1] == {"title": "alpha: turn done", "body": "end_turn", "tag": f"{sid}:turn"}

    # Hidden: another session of the list starts waiting for a permission.
    daemon.cli("send", other, "/ask true")
    wait_for(lambda: len(shown(page)) == 3, what="the other session's notification")
    assert shown(page)[2] == {"title": "beta: permission needed", "body": "a tool wants to run",
                              "tag": f"{other}:permission"}

    # Off: nothing more, even hidden; the choice is remembered across a reload.
    switch.click()
    wait_for(lambda: switch.get_attribute("aria-checked") == "false", what="the switch off")
    daemon.cli("approve", other, "p1")
    daemon.cli("send", sid, "again")
    page.wait_text("echo: again")
    wait_for(lambda: page.text("#view-state") == "idle", what="the turn's end")
    assert len(shown(page)) == 3
    switch.click()
    wait_for(lambda: switch.get_attribute("aria-checked") == "true", what="the switch on again")
    driver.refresh()
    page.connected()
    assert page.find("#notify-toggle").get_attribute("aria-checked") == "true"
