"""Who may open the console, and which form posts are the owner's own.

- **The owner's token** (the one `skills mcp --http` wants, ``$SKILLS_MCP_TOKEN``) is asked once by the login
  form, or sent on each request as ``Authorization: Bearer <token>``. The form sets a session cookie:
  ``<issued>.<HMAC(token, issued)>``, ``HttpOnly``, ``SameSite=Strict``, valid :data:`SESSION_HOURS`. Nothing
  is kept on the server, and a new token ends every session.
- **CSRF**: every form that acts carries ``csrf``, ``HMAC(token, "csrf:" + session)``; a post without it, or
  with another session's, is refused before anything is read. A page of another site cannot read it (the
  same-origin policy), and ``SameSite=Strict`` keeps the cookie off its requests anyway: two locks.

Tokens and digests are compared in constant time.
"""

from __future__ import annotations

import hashlib
import hmac
from datetime import datetime, timedelta

COOKIE = "skills_console"
SESSION_HOURS = 12
MAX_TOKEN_CHARS = 512
"""A longer value is no token of ours: refused before it is hashed."""


class Keys:
    """The secrets derived from the owner's token."""

    def __init__(self, token: str) -> None:
        if not token:
            raise ValueError("token: the console needs the owner's token")
        self._token = token.encode()

    def _mac(self, text: str) -> str:
        return hmac.new(self._token, text.encode(), hashlib.sha256).hexdigest()

    def token_matches(self, given: str) -> bool:
        if len(given) > MAX_TOKEN_CHARS:
            return False
        return hmac.compare_digest(given.encode(), self._token)

    def session(self, now: datetime) -> str:
        """A new session cookie's value."""
        issued = str(int(now.timestamp()))
        return f"{issued}.{self._mac('session:' + issued)}"

    def session_valid(self, value: str, now: datetime) -> bool:
        issued, _, mac = value.partition(".")
        if not issued.isdigit() or len(issued) > 12:
            return False
        if not hmac.compare_digest(mac.encode(), self._mac("session:" + issued).encode()):
            return False
        age = now.timestamp() - int(issued)
        return -60 <= age <= timedelta(hours=SESSION_HOURS).total_seconds()

    def csrf(self, session: str) -> str:
        """The form token of a session (``""``: a request with the bearer header)."""
        return self._mac("csrf:" + session)

    def csrf_matches(self, session: str, given: str) -> bool:
        return hmac.compare_digest(given.encode(), self.csrf(session).encode())
