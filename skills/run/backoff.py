"""Graduated backoff: after failure 1, 2, 3, 4 a fire inside the window is skipped; the 5th disables.

The failure count lives in the store (not in memory), so a restart neither forgets
a failing skill nor retries it early.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from pydantic import BaseModel, Field


class BackoffPolicy(BaseModel):
    """Windows after consecutive failures, and how many failures disable a skill."""

    steps: list[timedelta] = Field(
        default_factory=lambda: [timedelta(minutes=m) for m in (1, 5, 15, 60)]
    )
    """After the n-th consecutive failure, fires within steps[n-1] of it are skipped (the last step repeats)."""
    limit: int = 5
    """The limit-th consecutive failure disables the skill."""

    def window(self, failures: int) -> timedelta | None:
        if failures <= 0 or not self.steps:
            return None
        return self.steps[min(failures, len(self.steps)) - 1]


class FailureState(BaseModel):
    """A skill's consecutive failures, as the store keeps them."""

    consecutive_failures: int = 0
    last_failure_at: datetime | None = None
    last_error: str | None = None

    def retry_after(self, policy: BackoffPolicy) -> datetime | None:
        """Until when scheduled fires are skipped (None when not backing off)."""
        window = policy.window(self.consecutive_failures)
        if window is None or self.last_failure_at is None or self.consecutive_failures >= policy.limit:
            return None
        return self.last_failure_at + window

    def skip_reason(self, policy: BackoffPolicy, at: datetime) -> str | None:
        until = self.retry_after(policy)
        if until is None or at >= until:
            return None
        return (f"backoff: {self.consecutive_failures} consecutive failure"
                f"{'s' if self.consecutive_failures != 1 else ''}, next attempt after {until.isoformat()}")
