"""Hooks: ``POST /hooks/<skill>`` with the skill's bearer token runs it once, the JSON body as its event.

What is stored of a token is its SHA-256 digest. A token is 256 bits from the operating system's random
source, so a fast digest is enough: a slow hash (bcrypt, scrypt) protects passwords people choose, which
a guess can find; nobody can guess 2^256 values, however fast each guess is, so whoever reads the store
learns nothing that lets them fire a hook. Pure code.
"""

from __future__ import annotations

import hashlib
import hmac

from skills.when.events import MAX_EVENT_DATA_BYTES

HOOK_PATH = "/hooks/"
TOKEN_BYTES = 32
"""256 bits of randomness in a token (``secrets.token_urlsafe``: 43 characters)."""
MAX_TOKEN_CHARS = 200
"""A longer Authorization header is not a token of ours: refused without hashing it."""
MAX_HOOK_BODY = MAX_EVENT_DATA_BYTES
"""A hook's body is its event's data: the same cap as ``skills emit``, enforced before it is read."""
HOOKED_SKILLS_LIMIT = 16
"""Skills one hook path may name (a name shared by agents): the most the store's ``hook_digests`` returns."""


def token_digest(token: str) -> str:
    """The stored form of a token: SHA-256, hex."""
    return hashlib.sha256(token.encode()).hexdigest()


def token_matches(token: str, digest: str) -> bool:
    """Compared in constant time: how long a comparison takes says nothing about the stored digest."""
    return hmac.compare_digest(token_digest(token).encode(), digest.encode())


def hook_event_name(skill_id: int) -> str:
    """The event a hook's run sees as ``{{event.name}}``, and its dedupe key's scope. No emitted event's
    name contains ``:`` (``skills.when.events.EVENT_NAME``), so a hook's dedupe never meets an emit's."""
    return f"hook:{skill_id}"


def hook_workflow_id(task_queue: str, skill_id: int, event_id: str) -> str:
    """The EmitEvent workflow of one hook call: one per skill and Idempotency-Key."""
    return f"{task_queue}-hook:{skill_id}:{event_id}"
