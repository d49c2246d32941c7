"""The rig of the browser UI's tests: a daemon process on a fixed port, the CLI, and Chromium.

Synchronous on purpose: Selenium's WebDriver is blocking, so these tests are plain functions
that run the daemon and the ``corral`` CLI as subprocesses (``sys.executable``) and drive
Debian's ``chromium`` through its ``chromedriver`` (no browser download). Screenshots go to
``tests/artifacts/`` (ignored by git).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support.ui import WebDriverWait

from tests.daemonconfig import without_prewarm

REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / "tests" / "artifacts"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")
TIMEOUT = 30.0
_T = TypeVar("_T")


def wait_for(condition: Callable[[], _T], timeout: float = TIMEOUT, what: str = "condition") -> _T:
    """Poll ``condition`` until it returns something truthy; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(0.05)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Daemon:
    """``corral daemon`` on ``state`` and a fixed ``port`` (so a restart keeps the page's origin)."""

    def __init__(self, state: Path, port: int) -> None:
        self.state = state
        self.port = port
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        self.state.mkdir(parents=True, exist_ok=True)
        (self.state / "daemon.json").unlink(missing_ok=True)
        with open(self.state / "test-daemon.out", "ab") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "actors.app", "daemon", "--state-dir", str(self.state),
                 "--port", str(self.port), "--config",
                 without_prewarm(self.state.parent / f"{self.state.name}-config")], stdout=log, stderr=subprocess.STDOUT, cwd=REPO,
                env={**os.environ, "PYTHONPATH": str(REPO)})
        wait_for(lambda: self._ready(), what="daemon.json")

    def _ready(self) -> bool:
        if self.process is not None and self.process.poll() is not None:
            raise RuntimeError((self.state / "test-daemon.out").read_text(errors="replace"))
        return (self.state / "daemon.json").exists()

    def kill(self) -> None:
        """SIGKILL the daemon (its harness children are left for the next boot to reconcile)."""
        if self.process is not None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(TIMEOUT)

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(TIMEOUT)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            raise

    def cli(self, *args: str) -> str:
        """Run ``corral ARGS`` on this daemon; its stdout (fails on a non-zero exit)."""
        done = subprocess.run([sys.executable, "-m", "actors.app", *args, "--state-dir", str(self.state)],
                              capture_output=True, text=True, cwd=REPO, timeout=TIMEOUT,
                              env={**os.environ, "PYTHONPATH": str(REPO)})
        if done.returncode != 0:
            raise AssertionError(f"corral {' '.join(args)}: {done.returncode} {done.stderr}")
        return done.stdout

    def login_url(self) -> str:
        """``corral ui``: the URL alone on the first line."""
        return self.cli("ui").splitlines()[0]

    def events(self, session_id: str) -> list[dict[str, Any]]:
        """The session's log as its event frames."""
        return [json.loads(line) for line in self.cli("logs", session_id, "--json").splitlines() if line]


def chromium() -> WebDriver:
    """Headless Chromium at 1280×800 (Debian's, through chromedriver)."""
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM or "chromium"
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1280,800",
                "--no-first-run", "--disable-background-networking", "--disable-component-update"):
        options.add_argument(arg)
    return webdriver.Chrome(service=Service(CHROMEDRIVER or "chromedriver"), options=options)


class Page:
    """One browser tab showing the UI."""

    def __init__(self, driver: WebDriver, handle: str) -> None:
        self.driver = driver
        self.handle = handle

    @classmethod
    def open(cls, driver: WebDriver, url: str, *, new_tab: bool = True) -> Page:
        if new_tab:
            driver.switch_to.new_window("tab")
        driver.get(url)
        return cls(driver, driver.current_window_handle)

    def focus(self) -> Page:
        self.driver.switch_to.window(self.handle)
        return self

    def find(self, css: str) -> WebElement:
        return self.focus().driver.find_element(By.CSS_SELECTOR, css)

    def all(self, css: str) -> list[WebElement]:
        return self.focus().driver.find_elements(By.CSS_SELECTOR, css)

    def text(self, css: str) -> str:
        return str(self.find(css).text)

    def js(self, script: str, *args: Any) -> Any:
        return self.focus().driver.execute_script(script, *args)

    def connected(self) -> None:
        wait_for(lambda: self.text("#link") == "connected", what="the page's connection")

    def select(self, session_id: str) -> None:
        wait_for(lambda: self.all(f'button[data-session-id="{session_id}"]'), what=f"{session_id} listed")
        self.find(f'button[data-session-id="{session_id}"]').click()
        wait_for(lambda: self.find("#view-title").text.endswith(f"({session_id})") or
                 self.find("#view-title").text == session_id, what="the session view")

    def transcript(self) -> str:
        return self.text("#transcript")

    def content(self, css: str) -> str:
        """The text of ``css`` with folded parts (closed ``details``) included."""
        return str(self.find(css).get_property("textContent"))

    def wait_text(self, needle: str, css: str = "#transcript", timeout: float = TIMEOUT) -> None:
        wait_for(lambda: needle in self.content(css), timeout, what=f"{needle!r} in {css}")

    def applied(self) -> list[int]:
        """The seqs the page applied to the open transcript, in order."""
        return list(self.js("return window.corral.transcript.applied"))

    def prompt(self, text: str) -> None:
        box = self.find("#prompt")
        box.clear()
        box.send_keys(text + "\n")

    def screenshot(self, name: str) -> Path:
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        path = ARTIFACTS / f"{name}.png"
        self.focus().driver.save_screenshot(str(path))
        return path

    def wait(self) -> WebDriverWait[WebDriver]:
        return WebDriverWait(self.focus().driver, TIMEOUT)
