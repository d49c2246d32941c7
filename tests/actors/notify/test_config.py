"""``[[notify]]`` tables: the URL rule (a typed error), masking, and the loader's per-table warnings."""

from __future__ import annotations

import pytest

from actors.app import Config
from actors.notify.config import NotifyTarget, check_url, masked
from protocol.errors import ConfigInvalid, ErrorCode
from supervisor.config import parse_config


@pytest.mark.parametrize("url", ["https://ntfy.sh/topic", "https://hooks.slack.com/services/T/B/x",
                                 "http://127.0.0.1:8080/hook", "http://127.1.2.3/x",
                                 "http://localhost/x", "http://[::1]:9/x"])
def test_https_and_loopback_http_are_accepted(url: str) -> None:
    check_url(url)
    assert NotifyTarget(url=url).url == url


@pytest.mark.parametrize("url", ["http://example.com/hook", "http://10.0.0.1/x", "ftp://127.0.0.1/x",
                                 "ntfy.sh/topic", "https:///nohost", "http://127.0.0.1:port/x",
                                 "http://localhost.example.com/x"])
def test_anything_else_is_a_config_error(url: str) -> None:
    with pytest.raises(ConfigInvalid) as refused:
        NotifyTarget(url=url)
    assert refused.value.code is ErrorCode.CONFIG_INVALID


@pytest.mark.parametrize("headers", [{"Bad Name": "x"}, {"X-Token": "a\r\nInjected: yes"}, {"": "x"}])
def test_a_header_that_is_not_http_is_a_config_error(headers: dict[str, str]) -> None:
    with pytest.raises(ConfigInvalid, match="not a valid HTTP header"):
        NotifyTarget(url="https://h.test/", headers=headers)
    assert NotifyTarget(url="https://h.test/", headers={"X-Token": "a b; c=d"}).headers == {"X-Token": "a b; c=d"}


def test_a_refused_url_is_shown_masked() -> None:
    with pytest.raises(ConfigInvalid) as refused:
        check_url("http://bot:hunter2@example.com/x?token=abc&topic=t")
    assert "hunter2" not in refused.value.message and "abc" not in refused.value.message
    assert "http://bot:***@example.com/x?token=***&topic=***" in refused.value.message


def test_masking_hides_userinfo_and_query_values() -> None:
    assert masked("https://ntfy.sh/topic") == "https://ntfy.sh/topic"
    assert masked("https://u:p@h.test/x?auth=secret&flag") == "https://u:***@h.test/x?auth=***&flag"
    assert masked("https://tok@h.test/x") == "https://***@h.test/x"


def test_masking_hides_token_shaped_path_segments() -> None:
    assert (masked("https://hooks.slack.com/services/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")
            == "https://hooks.slack.com/services/T0123ABCD/B0456EFGH/***")
    assert (masked("https://discord.com/api/webhooks/112233445566778899/abcDEF-123_ghiJKLmnoPQR")
            == "https://discord.com/api/webhooks/***/***")
    assert masked("https://ntfy.sh/my-corral-notifications") == "https://ntfy.sh/my-corral-notifications"


def test_the_loader_drops_only_the_refused_table_and_names_it() -> None:
    loaded = parse_config(Config, """
[[notify]]
url = "http://example.com/x?token=abc"
[[notify]]
url = "https://ntfy.sh/topic"
format = "ntfy"
events = ["turn_done"]
min_turn_s = 30
headers = { Authorization = "Bearer t" }
[[notify]]
url = "http://127.0.0.1:9/hook"
colour = "red"
[[notify]]
format = "slack"
""")
    assert loaded.config.notify == [
        NotifyTarget(url="https://ntfy.sh/topic", format="ntfy", events=["turn_done"], min_turn_s=30,
                     headers={"Authorization": "Bearer t"}),
        NotifyTarget(url="http://127.0.0.1:9/hook"),
    ]
    warnings = "\n".join(loaded.warnings)
    assert "'notify[0]'" in warnings and "must be https" in warnings and "abc" not in warnings
    assert "unknown key 'notify[2].colour' ignored" in warnings
    assert "bad value for 'notify[3]': Missing required argument 'url'" in warnings
    assert len(loaded.warnings) == 3


def test_defaults_notify_every_event_as_json() -> None:
    target = NotifyTarget(url="https://h.test/x")
    assert target.events == ["permission", "turn_done", "session_failed"]
    assert (target.format, target.min_turn_s, target.headers) == ("json", 0.0, {})
    assert Config().notify == []
