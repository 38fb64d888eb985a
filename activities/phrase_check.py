"""The check of a proposal against the user's words: a schedule that contradicts the message is flagged.

``Proposals`` calls :func:`checked_summary` on every change it records; the reading is
``skills.when.phrasing``'s (no model), and a message it is not sure of flags nothing.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from adapters.store import Store
from skills.display import shown
from skills.llm.agent import questions
from skills.spec.models import SkillSpec
from skills.when.calendar import upcoming
from skills.when.phrasing import SPAN, contradictions, read_schedule

CHECKED_TOOLS = ("memory_store_skill", "memory_update_skill")


def checked_summary(store: Store, conversation_id: str, tool: str, arguments: dict[str, Any], summary: str,
                    *, now: datetime, zone: str) -> str:
    """``summary`` with the check's lines after it, if the proposed schedule contradicts the last message
    the user wrote in the conversation. An update is checked only against a message that states a rhythm
    ("make it every weekday at 9"): "move it to 10" says a time, not that the skill stops repeating.
    (``contradictions`` reads the message again: a few hundred microseconds, against a proposal's tens of ms.)"""
    if tool not in CHECKED_TOOLS:
        return summary
    data = arguments.get("data") if tool == "memory_store_skill" else arguments.get("patch")
    message = _last_user_message(store, conversation_id)
    if not isinstance(data, dict) or message is None:
        return summary
    try:
        spec = SkillSpec.model_validate(data)
    except ValueError:
        return summary
    trigger = spec.trigger_config
    if trigger is None or not spec.is_scheduled:
        return summary
    zone = trigger.timezone or zone
    reading = read_schedule(message, now, zone)
    if reading is None or reading.ambiguous or tool == "memory_update_skill" and not reading.repeats:
        return summary  # nothing said of when, or nothing certain: the fires are not worth computing
    fires = [fire.at for fire in upcoming(spec, anchor=now, now=now, count=SPAN) if not fire.skipped] \
        if spec.enabled else []
    if trigger.kind == "at" and trigger.at is not None:
        fires = [trigger.at]
    problems = contradictions(message, trigger, fires, now=now, zone=zone)
    return summary + "".join(f"\n{shown('check: ' + problem)}" for problem in problems)


def _last_user_message(store: Store, conversation_id: str) -> str | None:
    """The user's own last message: not the engine's note asking a model again (``skills.llm.agent.questions``)."""
    messages = store.conversations.load_messages(conversation_id)
    asked = questions(messages)
    return messages[asked[-1]].content if asked else None
