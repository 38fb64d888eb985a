"""What a failed activity said, in its own words, for run summaries and refusals."""

from __future__ import annotations

from temporalio.exceptions import ActivityError, ApplicationError


def activity_cause(error: ActivityError) -> str:
    """The activity's own words: the first application error of the chain (what it raised,
    not what it raised from)."""
    cause = error.cause
    while cause is not None and not isinstance(cause, ApplicationError) and cause.cause is not None:
        cause = cause.cause
    return str(getattr(cause, "message", None) or cause or error)
