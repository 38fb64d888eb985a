"""Accounting for every scheduled time, including the fires Temporal never started.

After the server or the worker was down, a schedule starts the oldest fire that
is still inside its catch-up window (late), skips the later missed ones because
that late run overlaps them, and drops the ones beyond the window. So when a
fire begins, the scheduled times between the previous fire and this one that
have no run are either:

- coalesced: they passed while the previous (late, catch-up) run had not started
  yet, and that one run stood for them all;
- overlapped: the previous run was still running when they came;
- missed: this fire is itself late, so the engine was down when they came, longer
  than the catch-up window.

Times that fit none of these (the schedule was paused) are not fires and are not
recorded.
"""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel

from skills.spec.models import RunStatus

MAX_ACCOUNTED = 100
"""At most this many rows for one gap; the last one says how many more there were."""


class PreviousFire(BaseModel):
    scheduled_at: datetime
    started_at: datetime
    finished_at: datetime | None = None


class GapFire(BaseModel):
    scheduled_at: datetime
    status: RunStatus
    summary: str


def account_gap(expected: list[datetime], previous: PreviousFire | None, late: bool) -> list[GapFire]:
    """Classify ``expected``: the scheduled times strictly between the previous fire and this
    one, which is ``late`` when it started well after its time (a catch-up after an outage)."""
    rows: list[GapFire] = []
    for moment in expected:
        if previous is not None and moment < previous.started_at:
            rows.append(GapFire(scheduled_at=moment, status="skipped",
                                summary=f"catch-up: coalesced into the late run scheduled for "
                                        f"{previous.scheduled_at.isoformat()}"))
        elif previous is not None and (previous.finished_at is None or moment < previous.finished_at):
            rows.append(GapFire(scheduled_at=moment, status="skipped",
                                summary="overlap: the previous run was still running"))
        elif late:
            rows.append(GapFire(scheduled_at=moment, status="missed",
                                summary="missed: the engine was down longer than the catch-up window"))
    if len(rows) > MAX_ACCOUNTED:
        extra = len(rows) - MAX_ACCOUNTED + 1
        last = rows[MAX_ACCOUNTED - 1]
        rows = [*rows[: MAX_ACCOUNTED - 1],
                last.model_copy(update={"summary": f"{last.summary} (and {extra - 1} more times like it)"})]
    return rows


def skipped_behind(overlap: str, catch_up: str, due: int) -> int:
    """Of ``due`` scheduled fires come since a run's own fire while it is still going, how many its schedule
    skipped (``adapters.schedules.schedule_policy``): ``skip`` every one; ``buffer_one`` all but the one
    it holds to start when the run ends; ``allow`` none (each started a run of its own); and a skill that
    catches up ``all`` queues every one (BUFFER_ALL), whatever its overlap says."""
    if catch_up == "all" or overlap == "allow":
        return 0
    if overlap == "buffer_one":
        return max(0, due - 1)
    return max(0, due)


def held_behind(overlap: str, catch_up: str, due: int) -> int:
    """Of those ``due`` fires, how many wait to start after the run (the rest ran or were skipped)."""
    if catch_up == "all":
        return max(0, due)
    return min(1, max(0, due)) if overlap == "buffer_one" else 0
