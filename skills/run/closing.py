"""What a closed run does to its skill: the rule, apart from the store that applies it.

A run that ended (not one still running or waiting, and not a missed fire) becomes the skill's last run. A success
resets the failure count; an error adds one, and the ``BackoffPolicy.limit``-th disables the skill (``failures``).
The scheduled fire of a one-shot retires its schedule, whatever came of it (``fired``); the scheduled fire that
reaches a skill's ``max_runs`` pauses it (``ended``). The store (``adapters.store.runs``) reads the skill's row
under its lock, applies :func:`closed`, and writes what changed in the run's own transaction, so runs of one skill
closing at once on several workers each count.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from skills.run.backoff import BackoffPolicy
from skills.spec.models import ENDED, FAILURES, FIRED, RunRecord

OPEN = ("running", "waiting")
"""The statuses of a run not recorded as ended yet."""

ERROR_CHARS = 1000
"""Characters of a failed run's summary kept as the skill's last error."""


@dataclass(frozen=True)
class Tally:
    """What a skill keeps of its runs, as the rule reads and writes it."""

    enabled: bool
    disabled_reason: str | None
    consecutive_failures: int
    last_run_at: datetime | None
    last_run_status: str | None
    last_run_summary: str | None
    last_failure_at: datetime | None
    last_error: str | None
    schedule_id: str | None
    trigger_config: dict[str, Any] | None
    max_runs: int | None
    scheduled_runs: int


@dataclass(frozen=True)
class Closed:
    """The skill after its run, what disabled it (None: nothing did) and the schedule retired (a one-shot's)."""

    tally: Tally
    disabled: str | None = None
    retired_schedule: str | None = None


def closed(tally: Tally, run: RunRecord, policy: BackoffPolicy) -> Closed:
    """The skill after ``run`` closed, by the rules above."""
    disabled = None
    if run.status not in (*OPEN, "missed"):
        tally = replace(tally, last_run_at=run.finished_at or run.started_at, last_run_status=run.status,
                        last_run_summary=run.summary)
    if run.status == "success":
        tally = replace(tally, consecutive_failures=0)
    elif run.status == "error":
        tally = replace(tally, consecutive_failures=tally.consecutive_failures + 1, last_failure_at=run.finished_at,
                        last_error=run.summary[:ERROR_CHARS])
        if tally.consecutive_failures >= policy.limit and tally.enabled:
            tally, disabled = replace(tally, enabled=False, disabled_reason=FAILURES), FAILURES
    if run.trigger != "schedule":
        return Closed(tally, disabled)
    if (tally.trigger_config or {}).get("at") is not None:
        # A one-shot fires once, whatever came of it; the skill and its runs stay.
        if tally.enabled:
            tally, disabled = replace(tally, enabled=False, disabled_reason=FIRED), disabled or FIRED
        return Closed(replace(tally, schedule_id=None), disabled, tally.schedule_id)
    if tally.enabled and tally.max_runs is not None and tally.scheduled_runs >= tally.max_runs:
        # The last of its runs: the schedule (whose remaining actions ran out) is paused, saying why.
        tally, disabled = replace(tally, enabled=False, disabled_reason=ENDED), disabled or ENDED
    return Closed(tally, disabled)
