"""Engine errors as Temporal failures: the one way an activity turns a :class:`SkillsError` into
an ``ApplicationError``, so every failure's type is the error's class name (the client maps it
back with :func:`skills.errors.error_class`) and only retryable errors are retried; and the
worker interceptor that keeps secrets out of every failure Temporal records."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

from temporalio import activity
from temporalio.exceptions import ApplicationError, ApplicationErrorCategory, CancelledError
from temporalio.worker import ActivityInboundInterceptor, ExecuteActivityInput, Interceptor

from config.secrets import redact, redact_value
from skills.errors import SkillNotFoundError, SkillsError, SkillValidationError
from skills.naming import OUTSIDE_TEXT


def application_error(error: SkillsError, *, details: Sequence[Any] = (), benign: bool = False,
                      next_retry_delay: timedelta | None = None) -> ApplicationError:
    """``error`` as the failure of an activity; ``benign`` for an answer, not a fault (logged at debug)."""
    return ApplicationError(
        redact(str(error)), *details, type=error.failure_type(), non_retryable=not error.retryable,
        next_retry_delay=next_retry_delay,
        category=ApplicationErrorCategory.BENIGN if benign else ApplicationErrorCategory.UNSPECIFIED,
    )


MAX_CAUSES = 8
"""How deep a failure's chain of causes is followed."""


@contextmanager
def as_application_errors() -> Iterator[None]:
    """Around a store call answering a caller: "not found" and "refused" are answers, not faults."""
    try:
        yield
    except SkillNotFoundError as e:
        raise application_error(e, benign=True) from e
    except SkillValidationError as e:
        raise application_error(e, details=[[err.model_dump() for err in e.errors]], benign=True) from e


class RedactingInterceptor(Interceptor):
    """Blots configured secrets out of every activity failure, and out of the results of the
    activities that return outside text (:data:`skills.naming.OUTSIDE_TEXT`), before Temporal records them.

    An LLM proxy that echoes the API key in its error, a tool that prints a token in its result,
    would otherwise put the secret in the workflow's history and in ``temporal workflow show``.
    A result or failure that carries no secret passes untouched; cancellations always do."""

    def intercept_activity(self, next: ActivityInboundInterceptor) -> ActivityInboundInterceptor:
        return _RedactFailures(next)


class _RedactFailures(ActivityInboundInterceptor):
    async def execute_activity(self, input: ExecuteActivityInput) -> Any:
        try:
            result = await super().execute_activity(input)
            return redact_value(result) if activity.info().activity_type in OUTSIDE_TEXT else result
        except (asyncio.CancelledError, CancelledError):
            raise
        except Exception as error:
            if not _carries_secret(error):
                raise
            raise _redacted(error, depth=0) from None


def _chain(error: BaseException | None) -> Iterator[BaseException]:
    for _ in range(MAX_CAUSES):
        if error is None:
            return
        yield error
        error = error.__cause__ or error.__context__


def _carries_secret(error: BaseException) -> bool:
    return any(redact(str(e)) != str(e) for e in _chain(error))


def _redacted(error: BaseException, depth: int) -> ApplicationError:
    """``error`` and its causes as application errors with redacted messages, types and retry kept."""
    cause = error.__cause__ or error.__context__
    if isinstance(error, ApplicationError):
        copy = ApplicationError(redact(error.message), *error.details, type=error.type,
                                non_retryable=error.non_retryable, next_retry_delay=error.next_retry_delay,
                                category=error.category)
    else:
        copy = ApplicationError(redact(str(error)), type=type(error).__name__)
    if cause is not None and depth < MAX_CAUSES:
        copy.__cause__ = _redacted(cause, depth + 1)
    return copy
