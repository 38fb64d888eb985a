"""When a run tells the user about itself, and what it says.

A completion notice is for a run that did not itself message the user. Whether it did is
read from the run's tool calls: a successful call (not a pre-flight check) of the notifier
tool or of a messaging tool (``*_send_message``, ``*_post_message``: the bundled
``outbox_send_message``, ``telegram_send_message``, ``webhook_send_message``). For a
Direct-tier skill those are its plan's steps; for an Agent-tier skill, what the model called.

``notify_on_completion`` decides: unset (None) = automatic, a notice unless the run messaged
the user; ``true`` = always; ``false`` = never. ``deliver`` decides whether the result is worth
telling: ``always``; ``on_change``, only a result whose digest differs from the last one delivered
(the run is recorded ``unchanged`` otherwise); ``never``. A notice goes out at most once per
``notify_interval_minutes`` (0 = the global default). An Agent-tier run whose answer is exactly
``NOTHING_TO_REPORT`` is ``quiet``: no notice at all. A failure notifies when it opens an incident
(``skills.run.incidents``: the failures that repeat its cause are silent), a success that closes one says
it recovered, and an auto-disable always notifies.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Protocol

from skills.display import span
from skills.run.incidents import Incident
from skills.spec.models import RunRecord, Skill

NOTHING_TO_REPORT = "NOTHING_TO_REPORT"
"""An Agent-tier run's whole answer when it found nothing worth telling the owner (its system prompt
says so): the run is recorded ``quiet`` and sends no notice."""
QUIET_SUMMARY = "nothing to report"
MAX_MESSAGE = 1500
MESSAGING_SUFFIXES = ("_send_message", "_post_message")
"""Tools named like this deliver a message to the user (besides the configured notifier)."""


def is_messaging_tool(tool: str, notifier_tool: str) -> bool:
    return tool == notifier_tool or tool.endswith(MESSAGING_SUFFIXES)


def messaged_user(run: RunRecord, notifier_tool: str) -> bool:
    """Whether the run itself delivered a message to the user."""
    return any(call.ok and not call.refused and not call.step_id.startswith("preflight")
               and is_messaging_tool(call.tool, notifier_tool) for call in run.tool_calls)


@dataclass(frozen=True)
class Notice:
    """What a closed run tells its owner; ``digest``: the result it delivers, when it delivers one
    (remembered for ``deliver: on_change``)."""

    text: str
    digest: str | None = None
    result: str | None = None
    """The part of ``text`` that is the run's result (its completion notice): what ``deliver_to`` sends."""
    health: str | None = None
    """The part about the skill's health (a "recovered" line): the notifier's, whatever ``deliver_to`` says."""


def result_digest(result: str) -> str:
    """The digest ``deliver: on_change`` compares: SHA-256 (hex) of the result as stored (redacted)."""
    return hashlib.sha256(result.encode(errors="replace")).hexdigest()


class Delivers(Protocol):
    """What ``settle`` reads of a skill: a Skill, or the store's row of one."""

    @property
    def deliver(self) -> str: ...

    @property
    def delivered_digest(self) -> str | None: ...


def settle(skill: Delivers | None, run: RunRecord) -> RunRecord:
    """The run as it is recorded: an Agent-tier success that answered ``NOTHING_TO_REPORT`` is ``quiet``;
    with ``deliver: on_change``, a success whose result is the last delivered one is ``unchanged``.
    ``run`` is redacted already (the digest is of the stored text); ``skill`` as stored now."""
    if run.status != "success":
        return run
    if run.tier == "agent" and run.summary.strip() == NOTHING_TO_REPORT:
        return run.model_copy(update={"status": "quiet", "summary": QUIET_SUMMARY})
    if skill is not None and skill.deliver == "on_change" and skill.delivered_digest is not None:
        return run.model_copy(update={"unchanged": result_digest(run.summary) == skill.delivered_digest})
    return run


def completion_due(skill: Skill, run: RunRecord, now: datetime, default_interval: timedelta,
                   notifier_tool: str) -> bool:
    if skill.notify_on_completion is False or skill.deliver == "never" or run.unchanged:
        return False
    if skill.notify_on_completion is None and messaged_user(run, notifier_tool):
        return False
    interval = timedelta(minutes=skill.notify_interval_minutes) if skill.notify_interval_minutes else default_interval
    return skill.last_notified_at is None or now - skill.last_notified_at >= interval


def completion_message(skill: Skill, run: RunRecord) -> str:
    return _cut(f"✅ {skill.name}: {run.summary or 'done'}")


def failure_message(skill: Skill, run: RunRecord, failures: int, retry_after: datetime | None) -> str:
    """What failed; for a recurring schedule, when its fires resume (a one-shot has no next fire)."""
    retry = ""
    if retry_after is not None and skill.is_scheduled and not skill.is_one_shot:
        retry = f" Scheduled fires resume after {retry_after.isoformat(timespec='seconds')}."
    count = f" (failure {failures} in a row)" if failures > 1 else ""
    return _cut(f"❌ {skill.name}{count}: {sentence(run.summary)}{retry}")


def incident_message(skill: Skill, run: RunRecord, incident: Incident, retry_after: datetime | None) -> str:
    """An incident opened: the error, what to do, and that its repeats stay silent."""
    retry = ""
    if retry_after is not None and skill.is_scheduled and not skill.is_one_shot:
        retry = f" Scheduled fires resume after {retry_after.isoformat(timespec='seconds')}."
    if skill.is_one_shot:
        return _cut(f"❌ {skill.name}: {sentence(run.summary)}")  # it fires once: no repeat to keep quiet about
    if skill.remind_after_minutes:
        quiet = f"while it fails the same way you hear again every {_every(skill.remind_after_minutes)}"
    else:
        quiet = "while it fails the same way you hear nothing more"
    return _cut(f"❌ {skill.name}: {sentence(run.summary)}{retry} Incident {incident.id}: {quiet}; "
                f"`skills incidents` shows it, `skills runs {skill.id}` every run.")


def reminder_message(skill: Skill, run: RunRecord, incident: Incident) -> str:
    """An open incident told again (``remind_after_minutes``): still failing, since when, how many runs."""
    runs = f"{incident.failures} failed run{'s' * (incident.failures != 1)}"
    return _cut(f"❌ {skill.name} still failing: incident {incident.id}, for {span(incident.last_failure_at - incident.opened_at)} "
                f"({runs}). Last error: {sentence(run.summary)} `skills runs {skill.id}` shows every run.")


def _every(minutes: int) -> str:
    return f"{minutes // 60} h" if minutes % 60 == 0 else f"{minutes} min"


def recovered_message(skill: Skill, incident: Incident) -> str:
    end = incident.closed_at or incident.last_failure_at
    runs = f"{incident.failures} failed run{'s' * (incident.failures != 1)}"
    return _cut(f"✅ {skill.name} recovered: incident {incident.id} lasted {span(end - incident.opened_at)} "
                f"({runs}, {sentence(incident.first_error)[:300]})")


def disabled_message(skill: Skill, reason: str, detail: str) -> str:
    return _cut(f"⛔ {skill.name} was disabled ({reason}). {detail}")


def sentence(text: str) -> str:
    """``text`` ending with one full stop: "Connection error." stays, "timed out" gets one."""
    text = text.rstrip()
    return text if text.endswith((".", "!", "?", "…")) else f"{text}."


def _cut(text: str) -> str:
    return text if len(text) <= MAX_MESSAGE else text[: MAX_MESSAGE - 1] + "…"


def digest_message(results: list[tuple[str, str]]) -> str:
    """A destination's digest: each skill's result, in the order they came."""
    lines = [f"📬 {len(results)} result{'s' * (len(results) != 1)}:"]
    lines += [f"• {name}: {sentence(summary)}" for name, summary in results]
    return _cut("\n".join(lines))
