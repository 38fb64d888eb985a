"""The LLM endpoint's client: one chat completion (streamed where the endpoint can), a model's context,
whether the endpoint answers.

Temporal owns retries: the OpenAI client is built with ``max_retries=0``, and a failure comes out as
one of the engine's LLM errors (``adapters.llm.errors``), which the activity turns into its failure.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager, nullcontext
from typing import TYPE_CHECKING, Any

from adapters.llm.errors import connection, error_detail, seconds, sentence, status_error
from adapters.llm.streaming import StreamedAnswer
from config.settings import OPENAI_API_URL, Settings
from skills.errors import LlmTimeoutError, LlmUnavailableError
from skills.llm.agent import ChatMessage, ToolCallMessage
from skills.llm.context import DEFAULT_CONTEXT, OPENAI_CONTEXT, context_from_model_entry

if TYPE_CHECKING:
    import openai

HEALTH_TIMEOUT = 3.0
IDEMPOTENCY_HEADER = "Idempotency-Key"

Waiting = Callable[[str | Callable[[], str]], AbstractAsyncContextManager[Any]]
"""What the caller does while an answer comes, told what has come so far (the activity heartbeats it)."""


def client_options(settings: Settings, timeout: float) -> dict[str, Any]:
    """The OpenAI client's options, for the async client here and the model list's sync one. Temporal
    retries the activity (and a registration asks again): retries inside the SDK as well would multiply them."""
    return {"base_url": settings.llm_base_url, "api_key": settings.llm_api_key or "none", "max_retries": 0,
            "timeout": timeout}


def _waiting(progress: str | Callable[[], str]) -> AbstractAsyncContextManager[Any]:
    return nullcontext()


class LlmEndpoint:
    def __init__(self, settings: Settings, client: openai.AsyncOpenAI | None = None,
                 log: logging.Logger | logging.LoggerAdapter[Any] | None = None) -> None:
        """``log``: where the endpoint's quirks are said (the activity's logger, to say which turn)."""
        self.settings = settings
        self.url = settings.llm_base_url or OPENAI_API_URL
        self.log = log or logging.getLogger(__name__)
        self._client = client
        self._contexts: dict[str, int] = {}
        self._unstreamed = False
        """The endpoint refused ``stream: true``: its answers are asked for whole."""

    @property
    def client(self) -> openai.AsyncOpenAI:
        """The LLM endpoint's client, made at the first LLM call: the openai package (14 MB resident)
        is not imported by a worker that runs no Agent-tier skill."""
        if self._client is None:
            import openai

            timeout = self.settings.llm_timeout.total_seconds()
            self._client = openai.AsyncOpenAI(**client_options(self.settings, timeout))
        return self._client

    @client.setter
    def client(self, client: openai.AsyncOpenAI) -> None:
        self._client = client

    async def complete(self, model: str, messages: list[ChatMessage], tools: list[dict[str, Any]],
                       response_format: dict[str, Any] | None = None, waiting: Waiting = _waiting,
                       idempotency_key: str | None = None) -> ChatMessage:
        """The model's answer to ``messages``, within ``SKILLS_LLM_TURN_TIMEOUT``; an ``LlmUnavailableError``
        or ``LlmRefusedError`` (of ``skills.errors``) that says what happened and what to fix.

        ``idempotency_key``: the same for every attempt of one turn, sent as the ``Idempotency-Key`` header
        (the IETF httpapi draft's): an endpoint or a proxy that keeps answers by it gives a retried turn the
        answer it already gave, instead of a second one (and a second bill); one that does not ignores it."""
        import openai

        turn_limit = self.settings.llm_turn_timeout
        headers = {IDEMPOTENCY_HEADER: idempotency_key} if idempotency_key else {}
        try:
            async with asyncio.timeout(turn_limit.total_seconds()):
                return await self._complete(model, messages, tools, response_format, waiting, headers)
        except TimeoutError as e:
            raise LlmTimeoutError(
                f"the LLM turn for the model '{model}' took longer than {seconds(turn_limit)} "
                "(SKILLS_LLM_TURN_TIMEOUT), its answer still coming") from e
        except openai.APIStatusError as e:
            raise status_error(e, model, self.url) from e
        except openai.APITimeoutError as e:  # before its base class: reached, and working, but slow
            raise LlmTimeoutError(
                f"the LLM endpoint {self.url} timed out after {seconds(self.settings.llm_timeout)} "
                f"without a word for the model '{model}' (SKILLS_LLM_TIMEOUT: how long it may stay "
                "silent, before its first token or between two); a slow model (a local one on CPU) may need "
                "a longer one, or a shorter prompt") from e
        except openai.APIConnectionError as e:
            # Not chained: the message says the cause, and the chain's stack traces (openai, httpx, httpcore,
            # anyio) outgrew the server's failure size limit: a retry's progress line read "after Failure
            # exceeds size limit".
            raise LlmUnavailableError(
                f"the LLM endpoint {self.url} could not be reached ({sentence(connection(e))}); is it running? "
                "(SKILLS_LLM_BASE_URL)") from None

    async def _complete(self, model: str, messages: list[ChatMessage], tools: list[dict[str, Any]],
                        response_format: dict[str, Any] | None, waiting: Waiting,
                        headers: dict[str, str]) -> ChatMessage:
        """One chat completion, streamed where the endpoint can (``SKILLS_LLM_STREAM``): the HTTP client's
        timeout is then how long the endpoint may stay silent, and ``waiting`` is told what has come,
        so a slow model that is answering is not taken for a dead one."""
        import openai

        arguments: dict[str, Any] = {"model": model, "messages": [m.to_openai() for m in messages],
                                     **({"tools": tools} if tools else {}),
                                     **({"response_format": response_format} if response_format else {}),
                                     **({"extra_headers": headers} if headers else {})}
        if self.settings.llm_stream and not self._unstreamed:
            try:
                return await self._streamed(arguments, waiting)
            except openai.BadRequestError as e:
                if "stream" not in str(e).lower():
                    raise
                # An endpoint that cannot stream says so in a 400: ask it whole, now and from now on.
                self.log.warning("the LLM endpoint %s refused to stream (%s): asking for whole answers; "
                                 "SKILLS_LLM_STREAM=false says so from the start", self.url,
                                 sentence(error_detail(e)))
                self._unstreamed = True
        async with waiting("waiting for the answer"):
            completion = await self.client.chat.completions.create(**arguments)
        choice = completion.choices[0].message
        usage = completion.usage
        return ChatMessage(
            role="assistant", content=choice.content,
            tool_calls=[ToolCallMessage(id=c.id, name=c.function.name, arguments=c.function.arguments or "")
                        for c in choice.tool_calls or [] if getattr(c, "function", None) is not None],
            prompt_tokens=usage.prompt_tokens if usage else 0,
            completion_tokens=usage.completion_tokens if usage else 0,
        )

    async def _streamed(self, arguments: dict[str, Any], waiting: Waiting) -> ChatMessage:
        """The answer streamed: the HTTP client's timeout is between two chunks, ``waiting`` is told how much came."""
        answer = StreamedAnswer()
        async with waiting(answer.progress):
            stream = await self.client.chat.completions.create(
                **arguments, stream=True, stream_options={"include_usage": True})
            async for chunk in stream:
                answer.add(chunk)
        return answer.message()

    async def context(self, model: str) -> int:
        """The model's context in tokens: ``SKILLS_LLM_CONTEXT``, else what the endpoint's model list says
        of it (asked once per model), else ``skills.llm.context.DEFAULT_CONTEXT``."""
        if self.settings.llm_context is not None:
            return self.settings.llm_context
        if model not in self._contexts:
            found = None
            try:
                listed = await self.client.models.list(timeout=HEALTH_TIMEOUT)
                entry = next((m for m in listed.data if m.id == model), None)
                found = context_from_model_entry(entry.model_dump()) if entry is not None else None
            except Exception as e:  # noqa: BLE001 - any failure to say leaves the default
                self.log.info("the LLM endpoint's model list does not say the context of %s: %s", model, e)
            # The OpenAI API states no context in its model list; its models hold 128k and more.
            self._contexts[model] = found or (OPENAI_CONTEXT if self.url == OPENAI_API_URL else DEFAULT_CONTEXT)
        return self._contexts[model]

    async def down(self) -> str | None:
        """Why the endpoint is down, asked for its models (short timeout); None: it answers."""
        import openai

        try:
            await self.client.models.list(timeout=HEALTH_TIMEOUT)
        except (openai.APIConnectionError, openai.APITimeoutError) as e:
            return f"unreachable: {e}"
        except openai.APIStatusError as e:
            # An answer, even a refusal (a key without the right to list models), means it is there;
            # a server error means it is not serving.
            return f"answering {e.status_code}" if e.status_code >= 500 else None
        return None
