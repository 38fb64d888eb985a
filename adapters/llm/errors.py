"""The LLM endpoint's failures as the engine's errors (``skills.errors``), each saying what to fix.

A rate limit or a server error is retryable, after the ``retry-after`` the endpoint gives; a bad key,
a bad request or an unknown model is not. The activity turns them into Temporal failures.
"""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING

from skills.errors import LlmModelNotFoundError, LlmOverloadedError, LlmRefusedError

if TYPE_CHECKING:
    import openai

RETRYABLE_STATUSES = frozenset({408, 409, 429})


def status_error(error: openai.APIStatusError, model: str, endpoint: str) -> LlmOverloadedError | LlmRefusedError:
    status = error.status_code
    detail = error_detail(error)
    # The statuses the OpenAI SDK itself would retry: timeout, conflict (lock), rate limit, server error.
    if status in RETRYABLE_STATUSES or status >= 500:
        return LlmOverloadedError(f"the LLM endpoint {endpoint} answered {status} for the model '{model}': {detail}",
                                  retry_after=retry_after(error))
    hint = {
        401: "the endpoint refused the API key: set SKILLS_LLM_API_KEY",
        403: "the API key may not use this endpoint or model",
        404: f"the endpoint does not know the model '{model}': set the skill's model or SKILLS_LLM_MODEL",
    }.get(status, "the request was refused")
    kind = LlmModelNotFoundError if status == 404 else LlmRefusedError
    return kind(f"{hint} ({status}: {detail})")


def seconds(span: timedelta) -> str:
    return f"{span.total_seconds():g} s"


def connection(error: Exception) -> str:
    """A connection error with what lies under it: the SDK's says only "Connection error."."""
    cause = error.__cause__
    return f"{sentence(str(error))}: {cause}" if cause is not None and str(cause) else str(error)


def sentence(text: str) -> str:
    """A message to embed in another sentence: without its final period."""
    return text.rstrip().rstrip(".")


def error_detail(error: openai.APIStatusError) -> str:
    body = error.body
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and inner.get("message"):
            return str(inner["message"])[:300]
    return str(error.message)[:300]


def retry_after(error: openai.APIStatusError) -> timedelta | None:
    headers = error.response.headers if error.response is not None else {}
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue  # many endpoints say only ``retry-after``
        try:
            return timedelta(seconds=float(value) * scale)
        except ValueError:
            continue
    return None
