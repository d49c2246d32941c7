"""Browser logins: one-time codes traded for a cookie, so the daemon's token never reaches a page.

``corral ui`` asks the daemon (over a token-authenticated connection, ``ui.login_code``) for a
code; the URL it prints carries it. ``GET /login?code=…`` redeems the code once, within
``CODE_TTL`` seconds, for a cookie value. The cookie is ``NONCE.ISSUED.MAC`` where MAC is an
HMAC-SHA256 under a key derived from the token: it proves the daemon issued it, survives a
daemon restart (the token file does; the page reconnects without a new login), and reveals
nothing about the token. Codes live in memory only, at most ``MAX_CODES`` at once (the oldest
goes first).

Pure: no I/O, no clock reads — the caller passes ``now`` (wall-clock seconds).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections import OrderedDict

__all__ = ["CODE_TTL", "COOKIE_TTL", "MAX_CODES", "Logins"]

CODE_TTL = 60.0
COOKIE_TTL = 7 * 24 * 3600.0
MAX_CODES = 32
_CODE_BYTES = 24


class Logins:
    """Mints and redeems one-time codes; issues and checks the cookies they are traded for."""

    def __init__(self, token: str) -> None:
        self._key = hmac.new(token.encode(), b"corral ui cookie v1", hashlib.sha256).digest()
        self._codes: OrderedDict[str, float] = OrderedDict()  # code -> expiry

    def mint(self, now: float) -> str:
        """A new code, valid until ``now + CODE_TTL`` and for one ``redeem``."""
        self._expire(now)
        while len(self._codes) >= MAX_CODES:
            self._codes.popitem(last=False)
        code = secrets.token_urlsafe(_CODE_BYTES)
        self._codes[code] = now + CODE_TTL
        return code

    def redeem(self, code: str, now: float) -> str | None:
        """The cookie value for a live, unused ``code`` (which is then spent), else ``None``."""
        self._expire(now)
        # Compare every stored code in constant time: a timing probe learns nothing of them.
        found = None
        for candidate in self._codes:
            if hmac.compare_digest(candidate.encode(), code.encode()):
                found = candidate
        if found is None:
            return None
        del self._codes[found]
        nonce = secrets.token_urlsafe(16)
        issued = str(int(now))
        return f"{nonce}.{issued}.{self._mac(nonce, issued)}"

    def check(self, cookie: str, now: float) -> bool:
        """True when ``cookie`` is one of ours and younger than ``COOKIE_TTL``."""
        parts = cookie.split(".")
        if len(parts) != 3 or not parts[1].isdigit() or len(parts[1]) > 12:
            return False
        nonce, issued, mac = parts
        if not hmac.compare_digest(mac.encode(), self._mac(nonce, issued).encode()):
            return False
        return 0 <= now - int(issued) <= COOKIE_TTL

    def _mac(self, nonce: str, issued: str) -> str:
        return hmac.new(self._key, f"{nonce}.{issued}".encode(), hashlib.sha256).hexdigest()

    def _expire(self, now: float) -> None:
        for code, expiry in list(self._codes.items()):
            if expiry <= now:
                del self._codes[code]
