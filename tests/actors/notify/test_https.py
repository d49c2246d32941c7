"""The notifier's own post over HTTPS (a local receiver with a self-signed certificate the client
is told to trust through ``SSL_CERT_FILE``), with the URL's userinfo as Basic auth; and a
certificate it does not trust is a failed post, never a post in the clear."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
import trio

from actors.notify.compose import trial_notice
from actors.notify.config import NotifyTarget
from actors.notify.delivery import Notifier
from actors.vendors.opencode.http import HttpError
from tests.fakes.webhook import open_receiver, self_signed

pytestmark = pytest.mark.timeout(60)


async def test_a_post_over_https_with_basic_auth(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    context, cert = self_signed(tmp_path)
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))
    async with open_receiver(tls=context) as hook:
        url = hook.url.replace("https://", "https://bot:pa55@") + "?topic=t"
        target = NotifyTarget(url=url, format="ntfy", headers={"X-Priority": "high"})
        with trio.fail_after(30):
            status = await Notifier([target], str).post_once(target, trial_notice("http://127.0.0.1:1/"))
        assert status == 200
        [got] = hook.received
    assert (got.method, got.target, got.body) == ("POST", "/hook?topic=t", b"corral: a test notification")
    assert got.headers["host"] == f"127.0.0.1:{hook.port}"
    assert got.headers["authorization"] == "Basic " + base64.b64encode(b"bot:pa55").decode()
    assert (got.headers["title"], got.headers["x-priority"]) == ("corral: test", "high")
    assert got.headers["content-type"] == "text/plain; charset=utf-8"


async def test_an_untrusted_certificate_fails_the_post(tmp_path: Path) -> None:
    context, _ = self_signed(tmp_path)
    async with open_receiver(tls=context) as hook:
        target = NotifyTarget(url=hook.url)
        with trio.fail_after(30), pytest.raises(HttpError, match="CERTIFICATE_VERIFY_FAILED"):
            await Notifier([target], str).post_once(target, trial_notice("http://127.0.0.1:1/"))
        assert hook.received == []
