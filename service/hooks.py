"""``POST /hooks/<skill>``: a skill fired from outside, with its own bearer token (``SKILLS_HOOKS=on``).

The request's JSON body becomes the run's event (``{{event.data.…}}`` in a plan, the Agent's input), and
an ``Idempotency-Key`` header is the event's id: the same key again within ``event_dedupe_window`` starts
nothing. The run is started as an emit's is: by an ``EmitEvent`` workflow, aimed at the one skill, started
through the worker's own client, so it is one of the engine's workflows that acts (activities.guard).

What answers what, so that a caller without a skill's token learns nothing about which skills exist or
have hooks:

- no ``Authorization: Bearer …`` header: 401, whatever the path names;
- a token that is not the hook token of a skill the path names (by id or name), or a path that names no
  skill, or a skill without a hook: 404, one and the same answer;
- then, with the right token: 413 (a body over :data:`~skills.when.hooks.MAX_HOOK_BODY`, before it is read),
  400 (not JSON, nested too deep, a bad Idempotency-Key), 409 (the skill is disabled, or its run for this
  key is still running), 202 (started), 200 (a replayed key: nothing started again).

Tokens are compared as SHA-256 digests in constant time (``skills.when.hooks``), always as many of them
(:data:`MAX_CANDIDATES`): a path that names no skill takes the time one with a hook takes. The store
keeps only digests. Everything but the body is decided before the body is read (:meth:`HookEndpoint.admit`).
"""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
import secrets
from typing import Any
from urllib.parse import unquote

from temporalio.client import Client

from adapters.store import Store
from client import SkillsClient
from config.settings import Settings
from service.health import Reply, Request
from skills.errors import SkillNotFoundError, SkillsError, SkillValidationError
from skills.spec.limits import too_deep
from skills.spec.models import Skill
from skills.when.events import EVENT_ID
from skills.when.hooks import HOOK_PATH, HOOKED_SKILLS_LIMIT, MAX_HOOK_BODY, MAX_TOKEN_CHARS, token_digest

logger = logging.getLogger(__name__)

START_TIMEOUT = 30.0
"""Seconds the caller waits for the EmitEvent workflow to claim the key and start the run."""
MAX_CANDIDATES = HOOKED_SKILLS_LIMIT
"""Digests compared for every request, whatever the path names: the most the store returns for a name."""
_NO_TOKEN = token_digest(secrets.token_urlsafe(32))
"""A digest of a token nobody holds: what a missing candidate is compared against."""
NOT_HERE = Reply(404, "application/json", json.dumps({"error": "no such hook"}) + "\n")
"""The one answer for a skill that does not exist, has no hook, or is not the token's."""


class HookEndpoint:
    """The ``/hooks/`` request endpoint of the health server."""

    max_body = MAX_HOOK_BODY

    def __init__(self, store: Store, skills: SkillsClient) -> None:
        self.store = store
        self.skills = skills

    async def admit(self, request: Request) -> Reply | Skill:
        """The skill whose hook the request's token opens, from its method, path and headers alone
        (the server calls this before it reads a byte of the body); else the answer to give."""
        if request.method != "POST":
            return _json(405, {"error": "POST only"}, {"Allow": "POST"})
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            return _json(401, {"error": "an Authorization: Bearer <token> header is required"},
                         {"WWW-Authenticate": 'Bearer realm="hooks"'})
        ref = unquote(request.path.removeprefix(HOOK_PATH))
        if not ref or "/" in ref or len(ref) > 200 or len(token) > MAX_TOKEN_CHARS:
            return NOT_HERE
        candidates = await asyncio.to_thread(self.store.events.hook_digests, ref)
        # Always MAX_CANDIDATES comparisons, the missing ones against a digest no token has, and every one
        # made, match or not: the time taken says neither which candidate matched nor how many there were.
        # The skill itself is loaded only for the right token (loading it cost 0.4 ms: which skills have
        # hooks was learnable from a wrong token's answer time).
        presented = token_digest(token).encode()
        padded = [*candidates, *[(None, _NO_TOKEN)] * (MAX_CANDIDATES - len(candidates))]
        matches = [skill_id for skill_id, digest in padded if hmac.compare_digest(presented, digest.encode())]
        if len(matches) != 1 or matches[0] is None:
            return NOT_HERE
        try:
            return await asyncio.to_thread(self.store.skills.get_skill, matches[0])
        except SkillNotFoundError:
            return NOT_HERE  # deleted since

    async def __call__(self, request: Request) -> Reply:
        skill = request.admitted if request.admitted is not None else await self.admit(request)
        if isinstance(skill, Reply):
            return skill
        key = request.headers.get("idempotency-key")
        if key is not None and not EVENT_ID.fullmatch(key):
            return _json(400, {"error": "Idempotency-Key: letters, digits and . _ : @ / + = -, at most 200, "
                                        "starting with a letter or digit"})
        data = _body(request.body)
        if isinstance(data, Reply):
            return data
        if not skill.enabled:
            return _json(409, {"error": f"skill '{skill.name}' is disabled ({skill.disabled_reason or 'by user'}): "
                                        "nothing was run"})
        try:
            result = await asyncio.wait_for(self.skills.fire_hook(skill.id, data, key), START_TIMEOUT)
        except SkillValidationError as e:
            return _json(400, {"error": str(e)})
        except (SkillsError, TimeoutError) as e:
            logger.warning("hook of skill %s not started: %s", skill.id, e)
            return _json(503, {"error": "the run could not be started now; try again"})
        answer: dict[str, Any] = {"skill": skill.name, "skill_id": skill.id, "event_id": result.event_id}
        if result.duplicate:
            return _json(200, {**answer, "duplicate": True, "runs": [r.workflow_id for r in result.started],
                               "first_seen_at": result.first_seen_at.isoformat() if result.first_seen_at else None})
        if not result.started:
            reason = result.skipped[0].reason if result.skipped else "the skill has no hook now"
            return _json(409, {**answer, "error": f"nothing was run: {reason}"})
        return _json(202, {**answer, "run": result.started[0].workflow_id})


def _body(raw: bytes) -> Any | Reply:
    """The event's data: the body as JSON (an empty body is null)."""
    if not raw.strip():
        return None
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError) as e:  # RecursionError: nested past what the parser takes
        return _json(400, {"error": f"the body is not JSON: {str(e)[:200] or type(e).__name__}"})
    deep = too_deep("body", data)
    if deep is not None:
        return _json(400, {"error": f"{deep.field}: {deep.message}"})
    return data


def _json(status: int, body: dict[str, Any], headers: dict[str, str] | None = None) -> Reply:
    return Reply(status, "application/json", json.dumps(body) + "\n", headers or {})


def hook_routes(settings: Settings, store: Store, client: Client) -> dict[str, HookEndpoint]:
    """``/hooks/`` on the health port when ``hooks`` is on (a skill still needs a token); else none."""
    if not settings.hooks:
        return {}
    return {HOOK_PATH: HookEndpoint(store, SkillsClient(client, settings.task_queue))}
