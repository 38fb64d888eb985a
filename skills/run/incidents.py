"""Incidents: consecutive failures of one skill with the same cause, told to the owner once.

A failure opens an incident (one notice, with the error and what to do); the next failures with the
same cause join it without a word; the next success closes it (one "recovered" notice, with how long
it lasted and how many runs failed); auto-disable closes it too (its notice is the last). A failure
with another cause closes the open incident and opens a new one. Skips, quiet runs and denials
change nothing. Pure: the store keeps the incidents, these functions say what an outcome means.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Literal

from pydantic import BaseModel, ConfigDict

from skills import linear

CAUSE_LENGTH = 200
"""Characters of a failure's summary that name its cause."""

_VARYING = linear.compile(r"\b0x[0-9a-f]+|\b[0-9a-f]{8,}(?:-[0-9a-f]{4,})*\b|\d+(?:[.:,]\d+)*",
                          linear.IGNORECASE)
"""What changes from one failure of a cause to the next: counts, durations, times, ids and digests."""

IncidentEvent = Literal["opened", "repeated", "reminded", "recovered", "disabled"]
"""What a run did to its skill's incident: ``reminded`` is a repeat told again (``remind_after_minutes``)."""

ClosedBy = Literal["recovered", "disabled", "cause changed", "deleted"]


class Incident(BaseModel):
    model_config = ConfigDict(frozen=True)

    id: int
    skill_id: int
    skill_name: str
    cause: str
    """The failure's summary with what varies between its repeats (numbers, ids) written as ``#``."""
    first_error: str
    last_error: str
    opened_at: datetime
    last_failure_at: datetime
    failures: int
    """Runs that failed with this cause, the one that opened it included."""
    last_notified_at: datetime | None = None
    closed_at: datetime | None = None
    closed_by: ClosedBy | None = None

    @property
    def open(self) -> bool:
        return self.closed_at is None


def reminder_due(remind_after_minutes: int, last_told: datetime, now: datetime) -> bool:
    """Whether a repeat of an open incident is told again: its skill asks for reminders, and that many
    minutes have passed since the incident was last told."""
    return remind_after_minutes > 0 and now - last_told >= timedelta(minutes=remind_after_minutes)


class IncidentNote(BaseModel):
    """What a closed run did to its skill's incident (on ``RunOutcome``), for the notice it sends."""

    model_config = ConfigDict(frozen=True)

    event: IncidentEvent
    incident: Incident


def cause_of(summary: str) -> str:
    """The cause a failure's summary names: its first line, numbers and ids folded, cut to
    ``CAUSE_LENGTH``. "outbox_send_message failed: timed out after 30 s" and "... after 31 s" are one."""
    first = summary.strip()[:CAUSE_LENGTH * 4].splitlines()[0] if summary.strip() else "failed"
    return _VARYING.sub("#", first)[:CAUSE_LENGTH]
