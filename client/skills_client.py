"""The Python client: everything a program needs to manage skills, over Temporal only.

It never opens the database. Changes run as workflows (RegisterSkill,
ChangeSkill), reads as standalone activities on the worker's task queue, and a
manual run is a SkillRun workflow started now. So a client anywhere with a
Temporal connection can manage skills, and every call is visible in Temporal.

:class:`SkillsClient` is its parts, one module an aggregate, each over :class:`client.base.ClientBase`:
skills and their revisions (:mod:`client.skill_calls`), runs and rehearsals (:mod:`client.run_calls`),
approvals and standing grants (:mod:`client.approval_calls`), events and hooks (:mod:`client.event_calls`),
the worker's catalog, outbox and sandbox (:mod:`client.worker_calls`). This module opens and closes the
connection, and holds the chat turn.

    async with await SkillsClient.connect() as skills:
        result = await skills.register({"name": "water", "in_minutes": 5, ...})

Leaving the ``async with`` (or ``await skills.close()``) releases the Temporal connection and
the threads of its runtime while the event loop still runs. A script that skips it may abort
at interpreter exit (``Fatal Python error: PyGILState_Release``, temporalio/sdk-python#300):
the SDK's default runtime lives in a module global, so its Rust threads are still running, and
calling into Python, while the interpreter tears itself down.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import uuid
import weakref
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from temporalio.api.enums.v1 import PendingActivityState
from temporalio.client import Client
from temporalio.converter import PayloadCodec
from temporalio.envconfig import ClientConfig
from temporalio.runtime import Runtime
from temporalio.service import PayloadLimitsConfig, RPCError

from client.approval_calls import ApprovalCalls
from client.base import ATTRIBUTION
from client.codec import codec_from_environ, data_converter
from client.event_calls import EventCalls
from client.run_calls import RunCalls, run_result
from client.skill_calls import SkillCalls
from client.worker_calls import WorkerCalls
from config.logs import sdk_telemetry
from skills.chat.reply import NoticeRef, run_ref_problem
from skills.errors import FieldError, SkillValidationError, TemporalUnavailableError
from skills.messages.chat import ChatInput, ChatReply
from skills.naming import CHAT_TURN, LLM_TURN, slug
from skills.spec.limits import TEMPORAL_PAYLOAD_WARNING_BYTES, valid_text
from skills.spec.revisions import BY_CLIENT

__all__ = ["ATTRIBUTION", "SkillsClient", "connect", "run_result", "wait_line"]
"""``ATTRIBUTION`` (:mod:`client.base`) and ``run_result`` (:mod:`client.run_calls`) are read from here too."""

DEFAULT_ADDRESS = "localhost:7233"
WAIT_NOTICE = timedelta(seconds=10)
"""How often ``chat(waiting=...)`` says what a turn waits on."""
FAILURE_CHARS = 120
"""Characters of a failed attempt's reason a wait line carries (its first clause)."""


def wait_line(what: str, *, since: datetime, now: datetime, attempt: int, maximum: int, last_failure: str,
              started: bool, next_attempt: datetime | None, said: str) -> str:
    """One line of a turn's wait: how long since the turn began (not since this attempt), and for a retry
    which attempt it is and why: ``waiting for the model, 14 s (attempt 2 of 6 after the LLM endpoint ...
    could not be reached (...); waiting for the first token)``. ``said``: the attempt's own heartbeat."""
    seconds = max(0, int((now - since).total_seconds()))
    parts = []
    if attempt > 1:
        reason = last_failure.split("; ")[0].strip().rstrip(".")
        reason = reason if len(reason) <= FAILURE_CHARS else reason[:FAILURE_CHARS - 1] + "…"
        of = f" of {maximum}" if maximum > 0 else ""
        when = "" if started or next_attempt is None else \
            f" in {max(0, int((next_attempt - now).total_seconds()))} s"
        parts.append(f"attempt {attempt}{of}{when}" + (f" after {reason}" if reason else " (a retry)"))
    if started and said:
        parts.append(said)
    return f"waiting for {what}, {seconds} s" + (f" ({'; '.join(parts)})" if parts else "")

CHAT_TIMEOUT = timedelta(minutes=15)
"""A chat turn may take several LLM turns of up to `llm_timeout` each."""

logger = logging.getLogger(__name__)


FROM_ENVIRONMENT: Any = object()
"""``codec`` of :func:`connect`: the payload codec ``SKILLS_PAYLOAD_KEYS(_FILE)`` configure, if any."""


async def connect(address: str | None = None, namespace: str | None = None, runtime: Runtime | None = None,
                  codec: PayloadCodec | None = FROM_ENVIRONMENT) -> Client:
    """A Temporal client configured the way Temporal's own tools are.

    Address, namespace, TLS and API key come from ``TEMPORAL_*`` environment
    variables, ``TEMPORAL_PROFILE`` and the ``temporal.toml`` config file
    (Temporal's environment configuration); explicit arguments win. Without
    ``runtime``, the client runs on the SDK's default (process-wide) runtime.

    Payloads are encrypted with ``codec`` (:mod:`client.codec`); by default with the keys of
    ``SKILLS_PAYLOAD_KEYS`` or ``SKILLS_PAYLOAD_KEYS_FILE``, read here like Temporal's own
    variables, so every program on this client (CLI, MCP server, Telegram adapter) encrypts
    as the worker does; None: plain payloads.
    """
    if codec is FROM_ENVIRONMENT:
        codec = codec_from_environ()
    config: dict[str, Any] = dict(ClientConfig.load_client_connect_config())
    config.setdefault("target_host", DEFAULT_ADDRESS)
    if address:
        config["target_host"] = address
    if namespace:
        config["namespace"] = namespace
    # The SDK's own warning (512 KiB by default) is printed by its core on stdout, where it breaks
    # `--json`; a skill may be bigger than that (skills/spec/limits.py), and an oversize one is refused here.
    config.setdefault("payload_limits", PayloadLimitsConfig(payloads_warn_size=TEMPORAL_PAYLOAD_WARNING_BYTES))
    try:
        return await Client.connect(**config, data_converter=data_converter(codec), runtime=runtime)
    except RuntimeError as e:
        raise TemporalUnavailableError(
            f"cannot reach Temporal at {config['target_host']}: is the server running (`make run`)? ({e})"
        ) from e


class SkillsClient(SkillCalls, RunCalls, ApprovalCalls, EventCalls, WorkerCalls):
    """The engine's client: its parts, one module an aggregate (:mod:`client.base`), on one Temporal connection
    this class opens and closes; and a chat turn, which it watches while it waits."""

    def __init__(self, client: Client, task_queue: str = "skills", *, runtime: Runtime | None = None,
                 by: str = BY_CLIENT) -> None:
        """``runtime``: the client's own runtime, which :meth:`close` releases with it. A client
        built on a runtime the caller keeps (the SDK's default one) is the caller's to keep. ``by``: who
        its changes are recorded as made by in the skills' revisions (``cli``, ``mcp``...): attribution only."""
        super().__init__(client, task_queue, by)
        self._runtime = runtime

    @classmethod
    async def connect(cls, task_queue: str = "skills", address: str | None = None,
                      namespace: str | None = None, codec: PayloadCodec | None = FROM_ENVIRONMENT,
                      by: str = BY_CLIENT) -> SkillsClient:
        """Connect on a runtime of the client's own, so that :meth:`close` (or leaving ``async
        with``) can stop its threads before the interpreter exits."""
        runtime = Runtime(telemetry=sdk_telemetry())
        try:
            return cls(await connect(address, namespace, runtime, codec), task_queue, runtime=runtime, by=by)
        except TemporalUnavailableError as e:
            # The failed attempt's frames hold the runtime: raise a fresh error and let them go.
            refused = TemporalUnavailableError(str(e))
        del runtime
        gc.collect()
        raise refused

    async def close(self) -> None:
        """Release the Temporal connection and stop its runtime's threads (a client from
        :meth:`connect` only; idempotent). The client cannot be used afterwards."""
        if self._runtime is None:
            return
        runtime, self._runtime = weakref.ref(self._runtime), None
        del self.client, self.calls
        # The SDK's client objects hold each other in cycles: collect them now, while Python is
        # whole. The last reference to the runtime stops its threads, with the GIL released.
        gc.collect()
        if runtime() is not None:
            logger.warning("the Temporal client is still referenced elsewhere (a workflow handle?): its "
                           "threads stop only at interpreter exit, which may then abort")

    async def __aenter__(self) -> SkillsClient:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.close()

    # --- the chat --------------------------------------------------------------------------

    async def chat(self, message: str, session_id: str | None = None, turn_id: str | None = None, *,
                   reply_to: str | None = None, reply_to_notice: NoticeRef | None = None,
                   agent_id: str | None = None, waiting: Callable[[str], None] | None = None) -> ChatReply:
        """One turn of a conversation with the assistant (a ChatTurn workflow); the session's
        history is kept in the store, so the next call with the same ``session_id`` goes on.

        ``turn_id`` makes the turn idempotent: a channel that is handed the same message again
        (Telegram redelivers what was not acknowledged) gets the first turn's reply, and the
        model is not asked twice. ``waiting`` is told, every ``WAIT_NOTICE`` while the turn goes on,
        what it waits for ("the model, LLM turn 1, 40 s: 120 characters received"): a slow local model
        is not a silent hang.

        ``reply_to`` (a run id, or its first 8+ characters) replies to that run's result: the turn opens with
        the result and the skill it came from, as data (docs/chat.md, "Replying to a result"); no run by that
        id raises :class:`RunNotFoundError`. ``reply_to_notice``: the delivered notice a channel's reply points
        at (Telegram's), its run the context when the store knows it. ``agent_id``: only that agent's runs."""
        if reply_to is not None and (problem := run_ref_problem(reply_to)) is not None:
            raise SkillValidationError([FieldError(field="reply_to", message=problem)])
        await self.calls.require_worker()  # or a turn with no worker would wait out CHAT_TIMEOUT
        # A person's message is answered, not refused: text no payload can carry (a lone surrogate, as a
        # channel's JSON escape can decode to) becomes U+FFFD, as a bad byte would.
        message = valid_text(message)
        session = session_id or uuid.uuid4().hex[:12]
        prefix = f"chat-{slug(session)}"
        workflow_id = f"{prefix}-{slug(turn_id)}" if turn_id is not None else None
        if waiting is not None:
            workflow_id = workflow_id or f"{prefix}-{uuid.uuid4().hex[:8]}"
        request = ChatInput(session_id=session, message=message, reply_to=reply_to, reply_to_notice=reply_to_notice,
                            agent_id=agent_id)
        turn = self.calls.workflow(CHAT_TURN, request, ChatReply, prefix, f"chat: {message[:80]}", timeout=CHAT_TIMEOUT,
                              workflow_id=workflow_id)
        if waiting is None or workflow_id is None:
            return await turn
        watch = asyncio.create_task(self._tell_waits(workflow_id, waiting))
        try:
            return await turn
        finally:
            watch.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watch

    async def _tell_waits(self, workflow_id: str, waiting: Callable[[str], None]) -> None:
        """Every ``WAIT_NOTICE``, what the turn's workflow waits on: its pending LLM turn (how long since the
        turn began, which attempt and why, what its heartbeats say has come), else a tool call; nothing when
        it waits on nothing."""
        handle = self.client.get_workflow_handle(workflow_id)
        while True:
            await asyncio.sleep(WAIT_NOTICE.total_seconds())
            try:
                described = await handle.describe()
            except RPCError:
                continue  # not started yet, or a busy server: the next round asks again
            now = datetime.now(UTC)
            for pending in described.raw_description.pending_activities:
                details: list[Any] = []
                started = pending.state == PendingActivityState.PENDING_ACTIVITY_STATE_STARTED
                if started and pending.heartbeat_details.payloads:  # a past attempt's say no longer holds
                    with contextlib.suppress(Exception):  # a detail it cannot read is left out
                        details = await self.client.data_converter.decode(pending.heartbeat_details.payloads)
                next_attempt = pending.next_attempt_schedule_time.ToDatetime(tzinfo=UTC) \
                    if pending.HasField("next_attempt_schedule_time") else None
                waiting(wait_line(
                    "the model" if pending.activity_type.name == LLM_TURN else pending.activity_type.name,
                    since=described.start_time or now, now=now, attempt=pending.attempt,
                    maximum=pending.maximum_attempts, last_failure=pending.last_failure.message,
                    started=started, next_attempt=next_attempt,
                    said=": ".join(str(d) for d in details[1:]) if len(details) > 1 else ""))
