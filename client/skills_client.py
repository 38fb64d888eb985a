"""The Python client: everything a program needs to manage skills, over Temporal only.

It never opens the database. Changes run as workflows (RegisterSkill,
ChangeSkill), reads as standalone activities on the worker's task queue, and a
manual run is a SkillRun workflow started now. So a client anywhere with a
Temporal connection can manage skills, and every call is visible in Temporal.

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
import secrets
import uuid
import weakref
from collections.abc import Callable
from contextvars import ContextVar
from datetime import UTC, datetime, timedelta
from typing import Any

from temporalio.api.enums.v1 import PendingActivityState
from temporalio.client import (
    ActivityFailureError,
    Client,
    WorkflowExecutionStatus,
    WorkflowFailureError,
    WorkflowHandle,
)
from temporalio.common import RetryPolicy, WorkflowIDConflictPolicy, WorkflowIDReusePolicy
from temporalio.converter import PayloadCodec
from temporalio.envconfig import ClientConfig
from temporalio.exceptions import ApplicationError, WorkflowAlreadyStartedError
from temporalio.runtime import Runtime
from temporalio.service import PayloadLimitsConfig, RPCError

from client import schedules
from client.calls import CHANGE_TIMEOUT, EngineCalls, root, root_message
from client.codec import codec_from_environ, data_converter
from config.logs import sdk_telemetry
from search_attributes import SKILL_APPROVAL, search_attributes
from skills.chat.proposals import ChangeDecided, DecideChangeInput
from skills.chat.reply import NoticeRef, run_ref_problem
from skills.errors import (
    FieldError,
    SkillNotFoundError,
    SkillRunFailed,
    SkillsError,
    SkillValidationError,
    TemporalUnavailableError,
    error_class,
)
from skills.messages.chat import ChatInput, ChatReply
from skills.messages.maintenance import OverdueQuery, OverdueSkills, RunHistory
from skills.messages.manage import (
    BulkRegistrationResult,
    ChangeInput,
    ChangeResult,
    HistoryQuery,
    IncidentsQuery,
    ItemRegistration,
    RegisterInput,
    RegisterManyInput,
    RegistrationResult,
    RunsQuery,
    SkillFilter,
    SkillRef,
)
from skills.messages.run import Rehearse, SandboxState, SkillRunInput
from skills.naming import (
    APPROVAL_SIGNAL,
    CALL_TOOL,
    CHANGE_GRANT,
    CHANGE_SKILL,
    CHAT_TURN,
    DECIDE_CHANGE,
    EMIT_EVENT,
    FIND_OVERDUE_SKILLS,
    GET_APPROVAL,
    GET_SKILL,
    GET_TOOL_CATALOG,
    LIST_APPROVALS,
    LIST_GRANTS,
    LIST_INCIDENTS,
    LIST_REVISIONS,
    LIST_RUNS,
    LIST_SKILLS,
    LLM_TURN,
    REFRESH_TOOL_CATALOG,
    REGISTER_SKILL,
    REGISTER_SKILLS,
    RUN_HISTORY,
    SANDBOX_STATE,
    SKILL_RUN,
    run_summary,
    schedule_id_for,
    slug,
)
from skills.owner.approvals import PENDING, Approval, ApprovalDecision, ApprovalsQuery, ApprovalStatus
from skills.owner.grants import Grant, GrantChange, GrantRequest, GrantResult, GrantsQuery
from skills.run.catalog import CatalogRequest, ToolCatalog
from skills.run.deadline import RunLimits, run_timeout
from skills.run.incidents import Incident
from skills.run.rehearsal import REHEARSAL_TIMEOUT
from skills.spec.limits import TEMPORAL_PAYLOAD_WARNING_BYTES, body_too_large, json_size, valid_text
from skills.spec.models import BY_USER, REHEARSAL, RunRecord, Skill
from skills.spec.revisions import BY_CLIENT, Revision, revert_data
from skills.when.calendar import MAX_UPCOMING, Forecast, forecast
from skills.when.events import EmitInput, EmitResult, EventInfo, check_event, event_workflow_id
from skills.when.hooks import TOKEN_BYTES, hook_event_name, hook_workflow_id, token_digest

DEFAULT_ADDRESS = "localhost:7233"
MAX_REASON = 1000
"""Characters of a denial's reason: it travels in the signal and is shown to the model and the owner."""
BULK_BATCH = 200
BULK_BATCH_BYTES = 1024 * 1024
"""A bulk registration is sent in batches of at most this many items and bytes (JSON): well within a
Temporal payload."""
BULK_WORKFLOWS = 2
"""Batches registered at once."""
BULK_TIMEOUT = timedelta(minutes=15)
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


ATTRIBUTION: ContextVar[str | None] = ContextVar("attribution", default=None)
"""Who the changes made in this context are recorded as made by, over the client's own ``by``: one client
serves every chat of a worker, and each chat's management tool says which session asked."""


class SkillsClient:
    def __init__(self, client: Client, task_queue: str = "skills", *, runtime: Runtime | None = None,
                 by: str = BY_CLIENT) -> None:
        """``runtime``: the client's own runtime, which :meth:`close` releases with it. A client
        built on a runtime the caller keeps (the SDK's default one) is the caller's to keep. ``by``: who
        its changes are recorded as made by in the skills' revisions (``cli``, ``mcp``...): attribution only."""
        self.client = client
        self.task_queue = task_queue
        self.calls = EngineCalls(client, task_queue)
        """The engine's workflows and reads, for the other client modules too (:mod:`client.trust`)."""
        self._runtime = runtime
        self.by = by

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

    @property
    def attribution(self) -> str:
        """Who this client's changes are recorded as made by, now (``ATTRIBUTION``, else ``by``)."""
        return ATTRIBUTION.get() or self.by

    async def __aenter__(self) -> SkillsClient:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.close()

    # --- changes ----------------------------------------------------------------------------

    async def register(self, data: dict[str, Any]) -> RegistrationResult:
        """Register a new skill; raise SkillValidationError naming every problem."""
        _refuse_oversize(data)
        name = str(data.get("name") or "unnamed") if isinstance(data, dict) else "unnamed"
        return _ok(await self.calls.workflow(REGISTER_SKILL, RegisterInput(data=data, by=self.attribution), RegistrationResult,
                                        f"register-{slug(name)}", f"register '{name}'"))

    async def register_many(self, items: list[Any]) -> BulkRegistrationResult:
        """Register many new skills (a folder of files, a list): each is normalized, stored and scheduled on
        its own, and refused on its own, by its index in ``items``; a refused one leaves nothing stored.

        Sent in batches (at most ``BULK_BATCH`` items and ``BULK_BATCH_BYTES`` each), a RegisterSkills
        workflow a batch, a few at a time; nothing is raised for a refused item."""
        refused: list[ItemRegistration] = []
        batches: list[tuple[int, list[Any]]] = []
        batch: list[Any] = []
        first = size = 0
        for index, data in enumerate(items):
            oversize = body_too_large(data)
            if oversize is not None:
                name = str(data.get("name") or "") if isinstance(data, dict) else ""
                refused.append(ItemRegistration(index=index, name=name, ok=False, errors=[oversize]))
                if batch:  # a batch holds consecutive items: its positions are first_index + offset
                    batches.append((first, batch))
                    batch, size = [], 0
                continue
            item_size = json_size(data)
            if batch and (len(batch) >= BULK_BATCH or size + item_size > BULK_BATCH_BYTES):
                batches.append((first, batch))
                batch, size = [], 0
            if not batch:
                first = index
            batch.append(data)
            size += item_size
        if batch:
            batches.append((first, batch))
        gate = asyncio.Semaphore(BULK_WORKFLOWS)

        async def send(first_index: int, chunk: list[Any]) -> list[ItemRegistration]:
            async with gate:
                result = await self.calls.workflow(REGISTER_SKILLS, _indexed(first_index, chunk, self.attribution),
                                              BulkRegistrationResult,
                                              "register-many", f"register {len(chunk)} skills",
                                              timeout=BULK_TIMEOUT)
            return result.items

        done = await asyncio.gather(*(send(first_index, chunk) for first_index, chunk in batches))
        return BulkRegistrationResult(items=sorted([*refused, *(i for part in done for i in part)],
                                                   key=lambda item: item.index))

    async def update(self, ref: str | int, patch: dict[str, Any], agent_id: str | None = None) -> RegistrationResult:
        """Change some fields of a skill; the merged skill is validated again."""
        _refuse_oversize(patch)
        target = SkillRef(ref=str(ref), agent_id=agent_id)
        return _ok(await self.calls.workflow(REGISTER_SKILL, RegisterInput(data=patch, target=target, by=self.attribution),
                                        RegistrationResult, f"update-{slug(str(ref))}", f"update '{ref}'"))

    async def history(self, ref: str | int, agent_id: str | None = None, limit: int = 50) -> list[Revision]:
        """A skill's revisions, newest first (a deleted skill's too, by its name or id)."""
        query = HistoryQuery(skill=SkillRef(ref=str(ref), agent_id=agent_id), limit=limit)
        return await self.calls.read(LIST_REVISIONS, query, list[Revision])

    async def revert(self, ref: str | int, rev: int, agent_id: str | None = None) -> RegistrationResult:
        """Restore revision ``rev`` of a skill (its definition, and so its schedule) through the road of every
        update, validated again; recorded as a revision of its own. A deleted skill is registered again."""
        [revision] = await self.calls.read(LIST_REVISIONS, HistoryQuery(skill=SkillRef(ref=str(ref), agent_id=agent_id),
                                                                   rev=rev), list[Revision])
        data = revert_data(revision)
        gone = revision.action == "deleted" or not await self._exists(revision.skill_id)
        target = None if gone else SkillRef(ref=str(revision.skill_id))
        return _ok(await self.calls.workflow(REGISTER_SKILL, RegisterInput(data=data, target=target, by=self.attribution,
                                                                      reverts=rev),
                                        RegistrationResult, f"revert-{slug(str(ref))}", f"revert '{ref}' to {rev}"))

    async def _exists(self, skill_id: int) -> bool:
        try:
            await self.get(skill_id)
        except SkillNotFoundError:
            return False
        return True

    async def delete(self, ref: str | int, agent_id: str | None = None) -> Skill:
        return await self._change(ref, agent_id, "delete")

    async def pause(self, ref: str | int, agent_id: str | None = None, reason: str = BY_USER) -> Skill:
        return await self._change(ref, agent_id, "pause", reason)

    async def resume(self, ref: str | int, agent_id: str | None = None) -> Skill:
        return await self._change(ref, agent_id, "resume")

    async def run(self, ref: str | int, agent_id: str | None = None, wait: bool = True) -> RunRecord | str:
        """Run a skill now, whatever its trigger; return the run, or its workflow id if not waiting."""
        skill = await self.get(ref, agent_id)  # answered by a worker, or WorkerUnavailableError
        stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        handle = await self.client.start_workflow(
            SKILL_RUN,
            SkillRunInput(skill_id=skill.id, trigger="manual"),
            id=f"{skill.schedule_id or schedule_id_for(self.task_queue, skill.id, skill.name)}-manual-{stamp}",
            task_queue=self.task_queue,
            result_type=RunRecord,
            search_attributes=search_attributes(skill),
            static_summary=f"manual run · {run_summary(skill)}",
            # A run always ends: the worker gives the deadline its limits make (skills.run.deadline);
            # from an older worker, the one the default limits make.
            execution_timeout=timedelta(seconds=skill.run_timeout_seconds) if skill.run_timeout_seconds
            else run_timeout(skill, RunLimits()),
        )
        if not wait:
            return handle.id
        return await run_result(handle)

    async def rehearse(self, ref: str | int | None = None, agent_id: str | None = None, *,
                       data: dict[str, Any] | None = None, wait: bool = True) -> RunRecord | str:
        """Rehearse a skill (``skills.run.rehearsal``): the stored one ``ref`` names, a definition ``data`` as its
        registration would make it, or, with both, ``ref`` changed by ``data``. A real run of the
        ``rehearsal`` kind: only read-only tools are called, every other call is recorded with its
        arguments, nothing is delivered or counted. Returns the run (its calls, the messages it would have
        sent as ``deliveries``, its tokens), or its workflow id if not waiting. A definition the worker
        refuses raises :class:`SkillValidationError`, by field, as a registration would."""
        if ref is None and data is None:
            raise SkillValidationError.single("ref", "name a skill to rehearse, or give a definition")
        skill = await self.get(ref, agent_id) if ref is not None else None
        if data is not None:
            _refuse_oversize(data)
        rehearse = Rehearse(data=data, target=SkillRef(ref=str(skill.id), agent_id=skill.agent_id) if skill else None) \
            if data is not None else None
        name = skill.name if skill is not None else str(data.get("name") or "a definition") if data else ""
        handle = await self.client.start_workflow(
            SKILL_RUN,
            SkillRunInput(skill_id=skill.id if skill is not None else 0, trigger=REHEARSAL, rehearse=rehearse),
            id=f"{self.task_queue}-rehearsal-{uuid.uuid4().hex[:16]}",
            task_queue=self.task_queue,
            result_type=RunRecord,
            **({"search_attributes": search_attributes(skill)} if skill is not None else {}),
            static_summary=f"rehearsal of {name}"[:200],
            execution_timeout=REHEARSAL_TIMEOUT,
        )
        if not wait:
            return handle.id
        try:
            return await handle.result()
        except WorkflowFailureError as e:
            first = root(e)
            if isinstance(first, ApplicationError) and error_class(first.type) is SkillValidationError and first.details:
                _raise([FieldError.model_validate(item) for item in first.details[0]])
            raise SkillsError(f"the rehearsal failed: {root_message(e)}") from e

    async def emit(self, name: str, data: Any = None, event_id: str | None = None) -> EmitResult:
        """Emit the event ``name``: every enabled skill subscribed to it (``trigger_type: event``,
        ``trigger_config: {event: name}``) starts a run with the event in its input; the result
        lists the runs started (names and workflow ids) and the subscribers skipped, and why.

        ``data`` is any JSON value (a plan reads it as ``{{event.data.…}}``). With ``event_id``,
        the same id emitted again within the worker's ``event_dedupe_window`` starts nothing and
        answers with what the first emit started (``duplicate``); without one, an id is made up."""
        problems = check_event(name, event_id, data)
        if problems:
            raise SkillValidationError(problems)
        event = EventInfo(name=name.strip(), id=event_id or uuid.uuid4().hex, data=data, time=datetime.now(UTC))
        request = EmitInput(event=event, dedupe=event_id is not None)
        return await self._emit(request, event_workflow_id(self.task_queue, event.name, event.id))

    async def fire_hook(self, skill_id: int, data: Any = None, key: str | None = None) -> EmitResult:
        """Run one hooked skill once with ``data`` as its event (``POST /hooks/<skill>``, in the worker,
        after the token was checked): an emit aimed at the skill, deduped by ``key`` like an event id.
        The worker runs it only while the skill has a hook token."""
        problems = check_event("hook", key, data)
        if problems:
            raise SkillValidationError(problems)
        event = EventInfo(name=hook_event_name(skill_id), id=key or uuid.uuid4().hex, data=data,
                          time=datetime.now(UTC))
        request = EmitInput(event=event, dedupe=key is not None, skill_id=skill_id)
        return await self._emit(request, hook_workflow_id(self.task_queue, skill_id, event.id))

    async def hook(self, ref: str | int, agent_id: str | None = None, revoke: bool = False) -> tuple[Skill, str | None]:
        """Give the skill a new hook token (replacing any; returned, once: only its digest is stored), or
        with ``revoke`` remove it. The token is made here and never enters a workflow's payload."""
        token = None if revoke else secrets.token_urlsafe(TOKEN_BYTES)
        request = ChangeInput(target=SkillRef(ref=str(ref), agent_id=agent_id), action="hook",
                              hook_digest=token_digest(token) if token else None)
        result = await self.calls.workflow(CHANGE_SKILL, request, ChangeResult, f"hook-{slug(str(ref))}",
                                      f"{'revoke the hook of' if revoke else 'hook'} '{ref}'")
        if not result.ok:
            _raise(result.errors)
        assert result.skill is not None
        return result.skill, token

    async def _emit(self, request: EmitInput, workflow_id: str) -> EmitResult:
        try:
            try:
                # One workflow per event id: a second emit while the first runs attaches to it, and
                # one after it closed is answered by it (below) while the dedupe window lasts.
                handle = await self._start_emit(request, workflow_id, WorkflowIDReusePolicy.REJECT_DUPLICATE)
            except WorkflowAlreadyStartedError:
                previous = await self._emitted(workflow_id)
                if previous is not None and previous.dedupe_until and previous.dedupe_until > datetime.now(UTC):
                    return previous.model_copy(update={
                        "duplicate": True, "skipped": [],
                        "first_seen_at": previous.first_seen_at or previous.emitted_at})
                # Past the window (or the first emit failed): the store's claim decides again.
                handle = await self._start_emit(request, workflow_id, WorkflowIDReusePolicy.ALLOW_DUPLICATE)
            return await handle.result()
        except WorkflowFailureError as e:
            raise self.calls.failed(EMIT_EVENT, CHANGE_TIMEOUT, e) from e

    async def _start_emit(self, request: EmitInput, workflow_id: str,
                          reuse: WorkflowIDReusePolicy) -> WorkflowHandle[Any, EmitResult]:
        return await self.client.start_workflow(
            EMIT_EVENT, request, id=workflow_id, task_queue=self.task_queue, result_type=EmitResult,
            static_summary=f"{'hook' if request.skill_id is not None else 'event'} {request.event.name} "
                           f"({request.event.id})",
            id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING, id_reuse_policy=reuse,
            execution_timeout=CHANGE_TIMEOUT,
        )

    async def _emitted(self, workflow_id: str) -> EmitResult | None:
        """What the closed EmitEvent under ``workflow_id`` answered; None if it did not complete."""
        try:
            return await self.client.get_workflow_handle(workflow_id, result_type=EmitResult).result()
        except WorkflowFailureError:
            return None

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

    # --- reads ------------------------------------------------------------------------------

    async def get(self, ref: str | int, agent_id: str | None = None) -> Skill:
        return await self.calls.read(GET_SKILL, SkillRef(ref=str(ref), agent_id=agent_id), Skill)

    async def list(self, agent_id: str | None = None, enabled: bool | None = None,
                   trigger_type: str | None = None) -> list[Skill]:
        flt = SkillFilter(agent_id=agent_id, enabled=enabled, trigger_type=trigger_type)
        return await self.calls.read(LIST_SKILLS, flt, list[Skill])

    async def runs(self, ref: str | int | None = None, agent_id: str | None = None, limit: int = 20) -> list[RunRecord]:
        skill = SkillRef(ref=str(ref), agent_id=agent_id) if ref is not None else None
        return await self.calls.read(LIST_RUNS, RunsQuery(skill=skill, limit=limit), list[RunRecord])

    async def incidents(self, ref: str | int | None = None, agent_id: str | None = None, *, closed: bool = False,
                        limit: int = 50) -> list[Incident]:
        """The open incidents (``closed``: the closed ones too), of one skill or of all, newest first."""
        skill = SkillRef(ref=str(ref), agent_id=agent_id) if ref is not None else None
        return await self.calls.read(LIST_INCIDENTS, IncidentsQuery(skill=skill, closed=closed, limit=limit),
                                list[Incident])

    async def run_history(self, ref: str | int | None = None, agent_id: str | None = None) -> RunHistory:
        """How far back :meth:`runs` can go: the worker's retention, and the oldest run it keeps (of a skill)."""
        skill = SkillRef(ref=str(ref), agent_id=agent_id) if ref is not None else None
        return await self.calls.read(RUN_HISTORY, RunsQuery(skill=skill), RunHistory)

    async def overdue(self, limit: int = 100) -> OverdueSkills:
        """The skills with a scheduled fire that has no run or recorded skip past the worker's ``overdue_after``."""
        return await self.calls.read(FIND_OVERDUE_SKILLS, OverdueQuery(limit=limit), OverdueSkills)

    async def sandbox(self) -> SandboxState:
        """Whether a worker of the task queue can run skills' scripts in its sandbox, and if not why and what to do.
        A worker older than this read says nothing (one attempt: it is not retried until the read times out)."""
        try:
            return await self.calls.read(SANDBOX_STATE, None, SandboxState, retry_policy=RetryPolicy(maximum_attempts=1))
        except SkillsError as e:
            cause = e.__cause__.cause if isinstance(e.__cause__, ActivityFailureError) else None
            if isinstance(cause, ApplicationError) and cause.type == "NotFoundError":
                return SandboxState(summary="not reported: the worker that answered is older than this client")
            raise

    # --- approvals ----------------------------------------------------------------------------

    async def approvals(self, status: ApprovalStatus | None = PENDING, skill: str | int | None = None,
                        limit: int = 50, *, skill_id: int | None = None) -> list[Approval]:
        """What waits for the owner's answer (``status=None``: answered ones too), newest first; of one
        skill: ``skill`` (a reference, looked up first) or ``skill_id`` (the id of a skill already read)."""
        if skill is not None:
            skill_id = (await self.get(skill)).id
        return await self.calls.read(LIST_APPROVALS, ApprovalsQuery(status=status, skill_id=skill_id, limit=limit),
                                list[Approval])

    # --- standing grants ---------------------------------------------------------------------

    async def grant(self, tool: str, *, skill: str | int | None = None, agent_id: str | None = None,
                    where: dict[str, str] | None = None, minutes: int | None = None, by: str = "client") -> Grant:
        """A standing grant: calls of ``tool`` (of ``skill``, or any) whose arguments equal ``where`` are approved
        without asking, for ``minutes`` (None: until revoked). Refused, naming the field: an unknown tool, a
        management tool, no such skill, a duration out of bounds."""
        request = GrantRequest(tool=tool, skill=str(skill) if skill is not None else None, agent_id=agent_id,
                               where=where or {}, minutes=minutes, by=by)
        return await self._grant_change(GrantChange(action="grant", grant=request), f"grant-{slug(tool)}",
                                        f"grant {tool}")

    async def grants(self, *, everything: bool = False, limit: int = 100) -> list[Grant]:
        """The live standing grants, newest first (``everything``: revoked and expired ones too)."""
        return await self.calls.read(LIST_GRANTS, GrantsQuery(all=everything, limit=limit), list[Grant])

    async def revoke_grant(self, grant_id: int) -> Grant:
        """Revoke a standing grant: from now on its calls wait for the owner again."""
        return await self._grant_change(GrantChange(action="revoke", grant_id=grant_id), f"revoke-grant-{grant_id}",
                                        f"revoke grant {grant_id}")

    async def _grant_change(self, change: GrantChange, id_prefix: str, summary: str) -> Grant:
        result = await self.calls.workflow(CHANGE_GRANT, change, GrantResult, id_prefix, summary)
        if not result.ok or result.grant is None:
            if any(e.message.startswith(("no grant", "no skill")) for e in result.errors):
                raise SkillNotFoundError("; ".join(e.message for e in result.errors))
            raise SkillValidationError(result.errors or [FieldError(field="grant", message=f"{summary} failed")])
        return result.grant

    async def approval(self, approval_id: int) -> Approval:
        return await self.calls.read(GET_APPROVAL, approval_id, Approval)

    async def approve(self, approval_id: int, by: str = "client") -> Any:
        """Approve: the waiting run makes its call, once (or the proposed change is made)."""
        return await self._answer(ApprovalDecision(approval_id=approval_id, approve=True, by=by))

    async def deny(self, approval_id: int, reason: str = "", by: str = "client") -> Any:
        """Deny: the call is not made (an Agent run is told and goes on; a Direct run ends ``denied``)."""
        return await self._answer(ApprovalDecision(approval_id=approval_id, approve=False, by=by,
                                                   reason=reason[:MAX_REASON]))

    async def _answer(self, decision: ApprovalDecision) -> Any:
        """A run's call: the answer is a signal to the run's workflow, found through Temporal's visibility
        (``SkillApproval`` on this engine's task queue), so it is kept, durably, even while no worker runs; the
        run records it. A proposed change: :meth:`decide_change` makes it. Returns a sentence saying what was
        done (for a change, what ``decide_change`` returns)."""
        said = await self.answer(decision.approval_id, decision.approve, reason=decision.reason, by=decision.by)
        return said.approval if isinstance(said, ChangeDecided) else said

    async def answer(self, approval_id: int, approve: bool, *, reason: str = "",
                     by: str = "client") -> str | ChangeDecided:
        """Approve or deny, as :meth:`approve` and :meth:`deny` do, and say what came of it: a run's call
        answered is a sentence; a change a chat proposed comes back whole, the approval as it stands and the
        skill made, changed or deleted with its next fire (``skills.chat.proposals.decided_sentence`` says it
        in words: ``skills approve`` prints it)."""
        decision = ApprovalDecision(approval_id=approval_id, approve=approve, by=by, reason=reason[:MAX_REASON])
        sent = await self._signal_waiting_run(decision)
        if sent is not None:
            return sent
        approval = await self.approval(approval_id)
        self._require_pending(approval)
        if approval.kind == "change":
            return await self._decided(approval, decision)
        return await self._signal_run(approval, decision)

    async def _signal_waiting_run(self, decision: ApprovalDecision) -> str | None:
        """The answer signalled to the run that waits for it, found through Temporal's visibility; None: none
        waits (a change a chat proposed, or a run gone)."""
        verb = "approved" if decision.approve else "denied"
        # Approval ids are per store: engines sharing a namespace each have an approval 1. The task queue is
        # this engine's, so the search names only its own runs.
        query = f"{SKILL_APPROVAL.name}={decision.approval_id} AND TaskQueue='{self.task_queue}'"
        async for found in self.client.list_workflows(query, limit=1):
            handle = self.client.get_workflow_handle(found.id)
            # The list lags behind the run; the run's own description does not.
            described = await handle.describe()
            if (described.status == WorkflowExecutionStatus.RUNNING
                    and described.typed_search_attributes.get(SKILL_APPROVAL) == decision.approval_id):
                await handle.signal(APPROVAL_SIGNAL, decision)
                return (f"approval {decision.approval_id} {verb}: sent to its run ({found.id}), which acts on the "
                        "first answer it gets")
        return None

    @staticmethod
    def _require_pending(approval: Approval) -> None:
        if not approval.pending:
            raise SkillsError(f"approval {approval.id} was already answered: {approval.status}"
                              f"{f' by {approval.decided_by}' if approval.decided_by else ''}")

    async def _signal_run(self, approval: Approval, decision: ApprovalDecision) -> str:
        verb = "approved" if decision.approve else "denied"
        if not approval.workflow_id:
            raise SkillsError(f"approval {approval.id} names no run to answer")
        try:
            await self.client.get_workflow_handle(approval.workflow_id).signal(APPROVAL_SIGNAL, decision)
        except RPCError as e:
            raise SkillsError(f"approval {approval.id}: its run ({approval.workflow_id}) no longer waits: "
                              f"{e.message}") from e
        return (f"approval {approval.id} {verb}: sent to its run ({approval.workflow_id}), which acts on the first "
                "answer it gets")

    async def decide_change(self, approval: Approval, decision: ApprovalDecision) -> Approval:
        """Answer ``approval``, a change a chat proposed, as a DecideChange workflow: the approval as it
        stands after the answer, with the change's outcome when this answer made it. An approval
        already answered is returned as it was answered (a change is made at most once); an expired one
        comes back ``expired``."""
        result = await self._decided(approval, decision)
        assert result.approval is not None
        return result.approval

    async def _decided(self, approval: Approval, decision: ApprovalDecision) -> ChangeDecided:
        if approval.kind != "change":
            raise SkillsError(f"approval #{approval.id} is not a proposed change")
        decision = decision.model_copy(update={"approval_id": approval.id})
        verb = "approve" if decision.approve else "deny"
        result = await self.calls.workflow(DECIDE_CHANGE, DecideChangeInput(decision=decision), ChangeDecided,
                                      f"decide-change-{approval.id}", f"{verb} change #{approval.id}")
        if result.approval is None:
            raise SkillNotFoundError(result.problem or f"no approval with id {approval.id}")
        if result.problem:
            raise SkillsError(result.problem)
        return result

    async def catalog(self, refresh: bool = False) -> ToolCatalog:
        """The worker's live tool catalog (with ``refresh``: re-read the config, list tools again)."""
        activity = REFRESH_TOOL_CATALOG if refresh else GET_TOOL_CATALOG
        return await self.calls.read(activity, CatalogRequest(), ToolCatalog)

    async def outbox(self, limit: int = 20, chat_id: str | None = None) -> list[dict[str, Any]]:
        """The newest messages of the outbox, through its own MCP tool on the worker (newest first)."""
        arguments: dict[str, Any] = {"limit": limit, **({"chat_id": chat_id} if chat_id else {})}
        result = await self.calls.read(CALL_TOOL, {"tool": "outbox_list_messages", "arguments": arguments,
                                                "step_id": "cli"}, dict)
        if not result.get("ok"):
            raise SkillsError(f"the outbox could not be read: {result.get('text')}")
        return list((result.get("structured") or {}).get("messages", []))

    async def next(self, ref: str | int, agent_id: str | None = None, count: int = 10) -> Forecast:
        """The skill's next ``count`` fires in its time zone, the ones its skipped days (business days,
        holidays) remove marked with why: computed here from the skill the worker reads, by the rules its
        schedule was built with (``skills.when.calendar``), so no schedule is described."""
        if not 1 <= count <= MAX_UPCOMING:
            raise SkillValidationError.single("count", f"must be 1 to {MAX_UPCOMING} (got {count})")
        return forecast(await self.get(ref, agent_id), now=datetime.now(UTC), count=count)

    async def next_fire(self, skill: Skill) -> datetime | None:
        """When the skill's schedule fires next, as Temporal computes it (None if paused or unscheduled)."""
        if not skill.schedule_id or not skill.enabled:
            return None
        return await schedules.next_fire(self.client, skill.schedule_id)

    # --- plumbing ---------------------------------------------------------------------------

    async def _change(self, ref: str | int, agent_id: str | None, action: str, reason: str = BY_USER) -> Skill:
        request = ChangeInput(target=SkillRef(ref=str(ref), agent_id=agent_id), action=action, reason=reason,
                              by=self.attribution)
        result = await self.calls.workflow(CHANGE_SKILL, request, ChangeResult, f"{action}-{slug(str(ref))}",
                                      f"{action} '{ref}'")
        if not result.ok:
            _raise(result.errors)
        assert result.skill is not None
        return result.skill


def _refuse_oversize(body: Any) -> None:
    """Refuse a body too big for a workflow payload here, naming the limit: Temporal would refuse it
    with a raw RPC error (or a warning on stdout), saying neither what is too big nor by how much."""
    oversize = body_too_large(body)
    if oversize is not None:
        raise SkillValidationError([oversize])


async def run_result(handle: WorkflowHandle[Any, RunRecord]) -> RunRecord:
    """The run a SkillRun recorded, whether it completed or failed: a run in error fails its
    workflow (SkillRunFailed) with the recorded run as the failure's details."""
    try:
        return await handle.result()
    except WorkflowFailureError as e:
        cause = e.cause
        if isinstance(cause, ApplicationError) and error_class(cause.type) is SkillRunFailed and cause.details:
            return RunRecord.model_validate(cause.details[0])
        raise SkillsError(f"SkillRun failed: {root_message(e)}") from e


def _indexed(first_index: int, items: list[Any], by: str = "") -> RegisterManyInput:
    """A batch of consecutive items of the caller's list, from position ``first_index``."""
    return RegisterManyInput(items=items, first_index=first_index, by=by)


def _ok(result: RegistrationResult) -> RegistrationResult:
    if not result.ok:
        _raise(result.errors)
    return result


def _raise(errors: list[FieldError]) -> None:
    if any(e.field == "target" for e in errors):
        raise SkillNotFoundError("; ".join(e.message for e in errors))
    raise SkillValidationError(errors)
