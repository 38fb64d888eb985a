"""The check of a proposal against the user's words: a schedule that contradicts the message is flagged.

``Proposals`` calls :func:`checked_summary` on every change it records; the reading is
``skills.when.phrasing``'s (no model), and a message it is not sure of flags nothing.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from adapters.store import Store
from skills.display import shown
from skills.llm.agent import questions
from skills.spec.models import SkillSpec
from skills.when.calendar import upcoming

if TYPE_CHECKING:
    from skills.when.phrasing import Reading

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
    checked = _checked(store, conversation_id, tool, data, now=now, zone=zone)
    problems = checked[1] if checked is not None else []
    return summary + "".join(f"\n{shown('check: ' + problem)}" for problem in problems)


def read_instead(store: Store, conversation_id: str, data: dict[str, Any], *, now: datetime,
                 zone: str) -> tuple[dict[str, Any], list[str]] | None:
    """A new skill's fields with the schedule the user's words say, when the model's contradicts a reading
    the engine is sure of ("every evening at 10pm", proposed as ``22 * * * *`` by a 1.5B model), and the
    lines that say so; None when they agree or the words are not read for sure. The reader is the no-model
    path's (``skills.when.phrasing``): where it is sure, it is right more often than a small model, and the
    owner sees the proposal as it would be stored before saying yes."""
    checked = _checked(store, conversation_id, "memory_store_skill", data, now=now, zone=zone)
    if checked is None or not checked[1]:
        return None
    reading, problems, described = checked
    if not reading.repeats or not reading.time_given:
        # Only a whole rhythm with its time is the user's schedule: "at 9am" may answer "at what time?" about
        # a daily skill, and "every monday" alone is read at 09:00, a default. Those are flagged, not taken.
        return None
    fields = {**data, "trigger_config": reading.trigger, "business_days_only": False}
    lines = [f"check: the model proposed {described}, but {problem}: proposed as your words say instead"
             for problem in problems]
    return fields, lines


def _checked(store: Store, conversation_id: str, tool: str, data: Any, *, now: datetime,
             zone: str) -> tuple[Reading, list[str], str] | None:
    """The reading of the user's last message, how the proposed schedule contradicts it, and that schedule
    in words; None when there is nothing to check."""
    # The reader and the owner's-words cut load with a chat's first proposal, not with the worker (an idle
    # worker does without them: docs/performance.md, "Worker RSS").
    from skills.when.phrasing import SPAN, contradictions, read_schedule

    message = _last_user_message(store, conversation_id)
    if not isinstance(data, dict) or message is None:
        return None
    try:
        spec = SkillSpec.model_validate(data)
    except ValueError:
        return None
    trigger = spec.trigger_config
    if trigger is None or not spec.is_scheduled:
        return None
    zone = trigger.timezone or zone
    reading = read_schedule(message, now, zone)
    if reading is None or reading.ambiguous or tool == "memory_update_skill" and not reading.repeats:
        return None  # nothing said of when, or nothing certain: the fires are not worth computing
    fires = [fire.at for fire in upcoming(spec, anchor=now, now=now, count=SPAN) if not fire.skipped] \
        if spec.enabled else []
    if trigger.kind == "at" and trigger.at is not None:
        fires = [trigger.at]
    return reading, contradictions(message, trigger, fires, now=now, zone=zone), trigger.describe()


def _last_user_message(store: Store, conversation_id: str) -> str | None:
    """The user's own last message: not the engine's note asking a model again (``skills.llm.agent.questions``),
    and only the user's own words of it (``skills.chat.intent.own_words``): a quoted email's "every evening at 10"
    is not the owner's schedule."""
    from skills.chat.intent import own_words

    messages = store.conversations.load_messages(conversation_id)
    asked = questions(messages)
    return own_words(messages[asked[-1]].content or "") if asked else None
