"""``options.sandbox`` over ``[sandbox]``: decoding, merging, and the check against this machine."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from actors.sandboxing.config import SandboxConfig
from actors.sandboxing.settings import check, check_worker, resolve
from protocol.errors import BadRequest, SandboxUnavailable
from protocol.sandbox import SandboxInfo
from supervisor.sandbox import landlock
from tests.needs import need_bwrap


def test_off_is_no_sandbox_and_the_config_mode_applies_when_the_session_names_none() -> None:
    assert resolve({}, SandboxConfig()) is None
    assert resolve({"sandbox": {"mode": "off"}}, SandboxConfig(mode="auto")) is None
    assert resolve({"sandbox": "read-only"}, SandboxConfig()) is None  # Codex's own option
    info = resolve({}, SandboxConfig(mode="auto"))
    assert info is not None and (info.mode, info.net) == ("auto", "model")


def test_the_session_overrides_keys_and_adds_to_deny_read_and_lists() -> None:
    config = SandboxConfig(mode="bwrap", net="off", allow_hosts=["a.example"], extra_rw=["/srv/cache"])
    info = resolve({"sandbox": {"net": "on", "allow_hosts": ["b.example:443"], "extra_rw": ["~/x"],
                                "deny_read": ["/srv/secret"]}}, config)
    assert info == SandboxInfo(
        mode="bwrap", effective="bwrap", net="on", allow_hosts=["a.example", "b.example:443"],
        extra_rw=["/srv/cache", os.path.expanduser("~/x")],
        deny_read=[*(os.path.expanduser(p) for p in ("~/.ssh", "~/.aws", "~/.config/gcloud", "~/.gnupg", "~/.netrc")),
                   "/srv/secret"])


@pytest.mark.parametrize("sandbox", [
    {"mode": "docker"}, {"net": "some"}, {"extra_rw": ["relative/path"]}, {"deny_read": "/one"},
    {"allow_hosts": ["http://x.example/"]}, {"allow_hosts": ["x.example:99999"]}, 3,
])
def test_a_malformed_sandbox_is_bad_request_naming_the_field(sandbox: object) -> None:
    with pytest.raises(BadRequest) as raised:
        resolve({"sandbox": sandbox}, SandboxConfig())
    assert raised.value.data is not None and str(raised.value.data["field"]).startswith("options.sandbox")


def test_no_bwrap_and_landlock_off_is_unavailable(tmp_path: Path) -> None:
    info = SandboxInfo(mode="auto", effective="off", net="on")
    for mode in ("auto", "bwrap", "landlock"):
        with pytest.raises(SandboxUnavailable):
            check(SandboxInfo(mode=mode, effective="off", net="on"), SandboxConfig(landlock=False),
                  path=str(tmp_path))  # an empty PATH: no bwrap
    if landlock.abi() >= 1:
        assert check(info, SandboxConfig(), path=str(tmp_path)).effective == "landlock"
    if shutil.which("bwrap"):
        assert check(info, SandboxConfig()).effective == "bwrap"


def _info(effective: str, net: str) -> SandboxInfo:
    return SandboxInfo(mode="auto", effective=effective, net=net)  # type: ignore[arg-type]


def test_a_native_worker_under_bwrap_needs_landlock_only_for_net_model() -> None:
    """Its bash commands reach the proxy through Landlock's TCP rules; ``off`` is a namespace."""
    off = SandboxConfig(landlock=False)
    with pytest.raises(SandboxUnavailable, match="Landlock is turned off"):
        check_worker(_info("bwrap", "model"), off, harness="native")
    check_worker(_info("bwrap", "off"), off, harness="native")
    check_worker(_info("bwrap", "on"), off, harness="native")
    if landlock.abi() >= 4:
        check_worker(_info("bwrap", "model"), SandboxConfig(), harness="native")


def test_bwrap_with_net_model_needs_unshare_and_nsenter(tmp_path: Path) -> None:
    """The session's network namespace is made with util-linux's ``unshare`` and joined with its
    ``nsenter``: a PATH with bubblewrap alone serves ``off`` but not ``model``."""
    bwrap = need_bwrap()
    (tmp_path / "bwrap").symlink_to(bwrap)
    only = str(tmp_path)
    assert check(SandboxInfo(mode="bwrap", effective="off", net="off"), SandboxConfig(), path=only).effective == "bwrap"
    with pytest.raises(SandboxUnavailable, match="unshare and nsenter"):
        check(SandboxInfo(mode="bwrap", effective="off", net="model"), SandboxConfig(), path=only)
    if landlock.abi() >= 4:  # auto falls back to Landlock
        auto = SandboxInfo(mode="auto", effective="off", net="model")
        assert check(auto, SandboxConfig(), path=only).effective == "landlock"
