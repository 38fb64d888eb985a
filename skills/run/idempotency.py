"""Idempotency keys: every tool call of a run carries one, the same on every retry of that call.

A key is built in workflow code from what the run knows, never from a clock or a random
number, so a retried activity, a replayed workflow and a continue-as-new run all send the
same key for the same call::

    skill-12/at-20261124T090000Z/step-fetch/1       a scheduled fire's Direct step
    skill-12/event-3f9c-at-20261124T0901Z/preflight-1/1   an event's run, its first pre-flight check
    skill-12/run-skills-12-brief-manual-.../turn-3/2   a manual run, the Agent's 2nd call in turn 3
    chat-telegram-42/msg-17/1                       a chat turn: conversation, message, call

It goes to the MCP server in the ``tools/call`` request's ``_meta`` under :data:`META_KEY`
(MCP's proposal SEP-3182 adds an optional idempotency key to ``tools/call``; the SDK the engine
uses has no request field for it yet, and ``_meta`` is the protocol's place for what a request
carries beside its arguments). The reserved ``io.modelcontextprotocol/`` prefix is the one the
protocol's own ``_meta`` keys use, so a server that honours the proposal finds it where it looks.
A server that does not ignores it: ``_meta`` is open by design. docs/tools.md says how a
third-party server honours it.
"""

from __future__ import annotations

import hashlib
import re
from datetime import UTC, datetime

META_KEY = "io.modelcontextprotocol/idempotency-key"
"""Where a ``tools/call`` request's ``_meta`` carries the key."""
CAPABILITY = "io.modelcontextprotocol/idempotency"
"""The name under ``capabilities.experimental`` by which a server says it honours the key."""
HEADER = "Idempotency-Key"
"""The HTTP header a server that posts on (the bundled webhook) passes the key on in."""

MAX_KEY_CHARS = 255
"""What a key may be at most: a server keeps them, and an HTTP header carries them."""
_PART_CHARS = 80
_SAFE = re.compile(r"[^A-Za-z0-9._:-]+")
_CHAT = "chat:"
"""``skills.naming.CHAT_CONVERSATION``, not imported: the bundled servers import this module, and
skills.naming would bring the Temporal SDK into each of them."""


def part(text: str, limit: int = _PART_CHARS) -> str:
    """``text`` as one readable segment of a key: letters, digits and ``._:-`` only, at most ``limit``
    characters. A longer or rewritten one keeps a readable head and ends in a digest of the original,
    so two different values never become the same segment."""
    cleaned = _SAFE.sub("-", text).strip("-") or "-"
    if cleaned == text and len(text) <= limit:
        return text
    digest = hashlib.sha256(text.encode()).hexdigest()[:16]
    return f"{cleaned[: max(0, limit - 17)]}~{digest}"


def fire_id(trigger: str, *, scheduled_at: datetime | None, event_id: str | None, workflow_id: str,
            event_time: datetime | None = None) -> str:
    """Which fire of a skill this is: its scheduled time for a schedule's fire, the event's id (and when
    it was emitted: past the dedupe window the same id is a new event, and runs the skill again) for an
    event's run, the workflow id for a manual run (and for a fire that lacks the other)."""
    if trigger == "schedule" and scheduled_at is not None:
        return "at-" + _stamp(scheduled_at)
    if trigger == "event" and event_id:
        return "event-" + part(event_id) + (f"-at-{_stamp(event_time)}" if event_time is not None else "")
    return "run-" + part(workflow_id)


def _stamp(moment: datetime) -> str:
    at = moment if moment.tzinfo else moment.replace(tzinfo=UTC)
    return at.astimezone(UTC).strftime("%Y%m%dT%H%M%S%fZ").replace("000000Z", "Z")


def run_prefix(skill_id: int, fire: str) -> str:
    """The part every key of one fire of one skill shares."""
    return f"skill-{skill_id}/{fire}"


def chat_prefix(conversation_id: str) -> str:
    """The part every key of one chat conversation shares (a loop that carries no run prefix: a chat's;
    a skill's run continued as new from before keys, by its conversation, the run's id)."""
    if conversation_id.startswith(_CHAT):
        return "chat-" + part(conversation_id.removeprefix(_CHAT))
    return "conversation-" + part(conversation_id)


def call_key(prefix: str, place: str, index: int) -> str:
    """The key of the ``index``-th call (from 1) at ``place`` (``step-<id>``, ``preflight-<n>``,
    ``turn-<n>``, ``msg-<seq>``) of the run or conversation ``prefix`` names."""
    key = f"{prefix}/{place}/{index}"
    return key if len(key) <= MAX_KEY_CHARS else part(key, MAX_KEY_CHARS)


def step_place(step_id: str) -> str:
    """The place of a Direct plan's step (a pre-flight check's is ``preflight-<n>``: a step may be
    named ``preflight-1`` too, and stays ``step-preflight-1``)."""
    return "step-" + part(step_id, 60)


def loop_call_key(prefix: str, conversation_id: str, step: int, message_seq: int, index: int) -> str:
    """The key of an Agent loop's ``index``-th tool call of a turn: ``turn-<step>`` under a skill run's
    ``prefix``; a chat (no prefix) by conversation and the message that asked for it."""
    if prefix:
        return call_key(prefix, f"turn-{step}", index)
    return call_key(chat_prefix(conversation_id), f"msg-{message_seq}", index)
