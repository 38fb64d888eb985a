"""Engine errors as Temporal failures: the one way an activity turns a :class:`SkillsError` into
an ``ApplicationError``, so every failure's type is the error's class name (the client maps it
back with :func:`skills.errors.error_class`) and only retryable errors are retried."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

from temporalio.exceptions import ApplicationError, ApplicationErrorCategory

from skills.errors import SkillNotFoundError, SkillsError, SkillValidationError


def application_error(error: SkillsError, *, details: Sequence[Any] = (), benign: bool = False,
                      next_retry_delay: timedelta | None = None) -> ApplicationError:
    """``error`` as the failure of an activity; ``benign`` for an answer, not a fault (logged at debug)."""
    return ApplicationError(
        str(error), *details, type=error.failure_type(), non_retryable=not error.retryable,
        next_retry_delay=next_retry_delay,
        category=ApplicationErrorCategory.BENIGN if benign else ApplicationErrorCategory.UNSPECIFIED,
    )


@contextmanager
def as_application_errors() -> Iterator[None]:
    """Around a store call answering a caller: "not found" and "refused" are answers, not faults."""
    try:
        yield
    except SkillNotFoundError as e:
        raise application_error(e, benign=True) from e
    except SkillValidationError as e:
        raise application_error(e, details=[[err.model_dump() for err in e.errors]], benign=True) from e
