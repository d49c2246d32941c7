"""Login codes and cookies of the browser UI, pure: no clock but the ``now`` given."""

from __future__ import annotations

from supervisor.server.logins import CODE_TTL, COOKIE_TTL, MAX_CODES, Logins

NOW = 1_800_000_000.0


def test_a_code_is_traded_once_for_a_cookie_that_checks() -> None:
    logins = Logins("token")
    code = logins.mint(NOW)
    cookie = logins.redeem(code, NOW + 1)
    assert cookie is not None and logins.check(cookie, NOW + 2)
    assert logins.redeem(code, NOW + 2) is None  # replayed


def test_a_code_expires_after_its_ttl() -> None:
    logins = Logins("token")
    code = logins.mint(NOW)
    assert logins.redeem(code, NOW + CODE_TTL) is None


def test_forged_codes_and_cookies_are_refused() -> None:
    logins = Logins("token")
    logins.mint(NOW)
    assert logins.redeem("forged", NOW) is None
    assert logins.redeem("", NOW) is None
    cookie = logins.redeem(logins.mint(NOW), NOW)
    assert cookie is not None
    nonce, issued, mac = cookie.split(".")
    for bad in ("", "x", f"{nonce}.{issued}.{'0' * len(mac)}", f"other.{issued}.{mac}",
                f"{nonce}.{int(issued) + 1}.{mac}", f"{nonce}.-1.{mac}", cookie + ".x"):
        assert not logins.check(bad, NOW), bad
    assert not Logins("another token").check(cookie, NOW)  # the key comes from the token


def test_a_cookie_survives_a_restart_with_the_same_token_and_ages_out() -> None:
    cookie = Logins("token").redeem(Logins("token").mint(NOW) and "x", NOW)
    assert cookie is None  # a code lives in the memory of the Logins that minted it
    first = Logins("token")
    cookie = first.redeem(first.mint(NOW), NOW)
    assert cookie is not None
    assert Logins("token").check(cookie, NOW + 10)  # the daemon restarted: same token, same key
    assert not Logins("token").check(cookie, NOW + COOKIE_TTL + 1)


def test_outstanding_codes_are_bounded_oldest_first() -> None:
    logins = Logins("token")
    codes = [logins.mint(NOW) for _ in range(MAX_CODES + 1)]
    assert logins.redeem(codes[0], NOW) is None
    assert logins.redeem(codes[-1], NOW) is not None
