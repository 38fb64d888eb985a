"""When a run tells the user about itself, and what it says.

Completions notify only when the skill asks (``notify_on_completion``) and at
most once per ``notify_interval_minutes`` (0 = the global default); failures and
auto-disables always notify.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from skills.models import RunRecord, Skill

MAX_MESSAGE = 1500


def completion_due(skill: Skill, now: datetime, default_interval: timedelta) -> bool:
    if not skill.notify_on_completion:
        return False
    interval = timedelta(minutes=skill.notify_interval_minutes) if skill.notify_interval_minutes else default_interval
    return skill.last_notified_at is None or now - skill.last_notified_at >= interval


def completion_message(skill: Skill, run: RunRecord) -> str:
    return _cut(f"✅ {skill.name}: {run.summary or 'done'}")


def failure_message(skill: Skill, run: RunRecord, failures: int, retry_after: datetime | None) -> str:
    retry = ""
    if retry_after is not None and skill.is_scheduled:
        retry = f" Scheduled fires resume after {retry_after.isoformat(timespec='seconds')}."
    count = f" (failure {failures} in a row)" if failures > 1 else ""
    return _cut(f"❌ {skill.name}{count}: {run.summary}.{retry}")


def disabled_message(skill: Skill, reason: str, detail: str) -> str:
    return _cut(f"⛔ {skill.name} was disabled ({reason}). {detail}")


def _cut(text: str) -> str:
    return text if len(text) <= MAX_MESSAGE else text[: MAX_MESSAGE - 1] + "…"
