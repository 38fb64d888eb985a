"""Changes a chat proposes: recorded for the owner's yes instead of made, and answered once.

A chat's management tool call runs in the ``agent_tool`` activity. When it would widen what runs
(``skills.chat.proposals``), :class:`Proposals` normalizes and validates it as the registration would
(against the live catalog), records an approval of kind ``change`` with exactly what would be stored,
and tells the model it was proposed, not made. Nothing else is written.

:class:`ProposalActivities` serve the DecideChange workflow: ``decide_change`` takes one answer (a
compare-and-set: of two answers at once one wins, and only an approving winner is applied) and
``record_change_outcome`` keeps what the change came to.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from temporalio import activity

from activities.phrase_check import checked_summary, read_instead
from activities.ports import SkillPreparer
from adapters.store import Store
from config.settings import Settings
from skills.chat.proposals import (
    ChangeOutcome,
    ChangeVerdict,
    DecideChangeRequest,
    applied_fields,
    as_spec,
    describe_spec,
    describe_update,
    next_fires,
    spec_digest,
    widening,
)
from skills.display import shown, shown_lines
from skills.errors import SkillNotFoundError, SkillValidationError
from skills.management.arguments import (
    DATA_KEYS,
    EVENT_ID_KEYS,
    EVENT_KEYS,
    agent_of,
    first,
    json_object,
    required_ref,
    update_request,
)
from skills.messages.chat import zone_time
from skills.messages.manage import Prepared, RegisterInput, SkillFilter, SkillRef
from skills.naming import CHAT_CONVERSATION
from skills.owner.approvals import Approval, ApprovalRequest
from skills.spec.models import NO_LLM, Skill, SkillSpec
from skills.when.events import check_event
from skills.when.outlook import outlook

if TYPE_CHECKING:
    from mcp_types import CallToolResult


@dataclass(frozen=True)
class ChatCall:
    """Which conversation's tool call is running: a chat's management tool records its proposal under it."""

    conversation_id: str
    message_seq: int
    call_id: str

    @property
    def session_id(self) -> str | None:
        if not self.conversation_id.startswith(CHAT_CONVERSATION):
            return None
        return self.conversation_id[len(CHAT_CONVERSATION):]

    @property
    def request_key(self) -> str:
        # The same on every retry of the call: recording twice keeps one proposal.
        return f"chat-change:{self.conversation_id}:{self.message_seq}:{self.call_id}"


CURRENT_CALL: ContextVar[ChatCall | None] = ContextVar("current_call", default=None)
"""Set by ``agent_tool`` around a call: the tool router is shared by every loop, and only a chat's
management tools need to know which conversation asked."""


def proposed_change(approval_id: int | None, tool: str) -> dict[str, Any]:
    """A proposal as the loop's changes list it (the turn's reply shows it, pending)."""
    return {"action": "proposed", "approval_id": approval_id, "tool": tool}


def proposed_by(store: Store, call: ChatCall, tool: str) -> dict[str, Any] | None:
    """What ``call`` proposed, as recorded under its key (None: nothing), for a retry of a call already answered."""
    if call.session_id is None:
        return None
    approval = store.approvals.find_approval(call.request_key)
    return None if approval is None else proposed_change(approval.id, tool)


class Proposals:
    """Turn a chat's widening change into a recorded proposal, with what would be stored."""

    def __init__(self, store: Store, settings: Settings, preparer: SkillPreparer) -> None:
        """``preparer``: the registration's normalize + validate (``RegistrationActivities.prepare_skill``), which
        reads the store and the catalog and writes nothing."""
        self.store = store
        self.settings = settings
        self.preparer = preparer

    async def propose(self, tool: str, fields: dict[str, Any], call: ChatCall) -> CallToolResult | None:
        """The proposal's answer to the model, or None when the call needs no confirmation (make it)."""
        if call.session_id is None:
            return None
        return await asyncio.to_thread(self._propose, tool, fields, call)

    def _propose(self, tool: str, fields: dict[str, Any], call: ChatCall) -> CallToolResult | None:
        now = datetime.now(UTC)
        notes: list[str] = []
        match tool:
            case "memory_store_skill":
                change = self._create(fields, now)
                instead = read_instead(self.store, call.conversation_id, change[2]["data"], now=now,
                                       zone=self.settings.timezone)
                if instead is not None:  # the user's words, where the engine reads them for sure, say when
                    repaired, notes = instead
                    change = self._create(repaired, now)
            case "memory_update_skill":
                change = self._update(fields, now)
            case "memory_delete_skill":
                change = self._delete(fields)
            case "emit_event":
                change = self._emit(fields, call)
            case "memory_undo":
                tool, change = self._undo(call.session_id, now)
            case _:
                return None
        if change is None:
            return None
        skill_id, skill_name, arguments, summary = change
        summary = checked_summary(self.store, call.conversation_id, tool, arguments, summary, now=now,
                                  zone=self.settings.timezone) + "".join(f"\n{shown(note)}" for note in notes)
        approval = self.store.approvals.add_approval(ApprovalRequest(
            kind="change", request_key=call.request_key, skill_id=skill_id, skill_name=skill_name,
            session_id=call.session_id, tool=tool, arguments=arguments, summary=summary, requested_at=now,
            expires_at=now + self.settings.chat_proposal_ttl))
        replaced = self._replace_older(approval, now)
        return _proposed(approval, replaced)

    def _create(self, fields: dict[str, Any], now: datetime) -> tuple[int | None, str, dict[str, Any], str]:
        normalized = self._normalized(RegisterInput(data=fields)).normalized
        assert normalized is not None
        spec = normalized.spec
        data = applied_fields(spec)
        if normalized.disabled_reason == NO_LLM:
            data["enabled"] = True  # disabled for want of an LLM by the registration itself, as it would have been
        lines = [f"Create skill '{spec.name}':", *describe_spec(spec, next_fires(spec, now), zone_time),
                 *self._outlook(spec, now), *(f"note: {note}" for note in normalized.notes)]
        return None, spec.name, {"data": data}, shown_lines(lines)

    def _outlook(self, spec: SkillSpec, now: datetime) -> list[str]:
        """The next 30 days of the skill as it would be stored (skills.when.outlook): runs, messages, tokens
        estimated from recorded runs on its model (a new skill has none of its own)."""
        model = spec.model or self.settings.llm_model
        similar = [r.prompt_tokens + r.completion_tokens for r in self.store.runs.list_runs(None, limit=200)
                   if r.tier == "agent" and r.status == "success" and r.model == model]
        return outlook(spec, now, anchor=now, notifier_tool=self.settings.notifier_tool,
                       similar_tokens=similar, price=self.settings.llm_price).lines()

    def _update(self, fields: dict[str, Any], now: datetime) -> tuple[int, str, dict[str, Any], str] | None:
        ref, agent_id, patch = update_request(fields)
        prepared = self._normalized(RegisterInput(data=patch, target=SkillRef(ref=ref, agent_id=agent_id)))
        assert prepared.normalized is not None and prepared.existing_id is not None
        existing = self.store.skills.get_skill(prepared.existing_id)
        before, after = as_spec(existing), prepared.normalized.spec
        reasons = widening(before, after)
        if not reasons:
            return None
        lines = [f"Change skill {existing.id} '{existing.name}':", *describe_update(before, after, reasons)]
        lines += [line for line in describe_spec(after, next_fires(after, now), zone_time)
                  if line.startswith("next fires")]
        # What it would send and cost as changed (a new destination is a send each run): the owner's yes is to that.
        lines += [f"as changed: {line}" for line in self._outlook(after, now)]
        arguments = {"skill_id": existing.id, "patch": applied_fields(after), "base": spec_digest(before)}
        return existing.id, existing.name, arguments, shown_lines(lines)

    def _undo(self, session: str, now: datetime) -> tuple[str, tuple[int | None, str, dict[str, Any], str]]:
        """"Undo that": the session's last change (its revision), taken back as the change that does it, always
        proposed: a created skill deleted, an update or a revert reverted to the revision before it, a deleted
        skill created again. The tool the approval names is that change's, which DecideChange makes."""
        last = self.store.revisions.last_revision_by(f"chat:{session}")
        if last is None:
            raise SkillValidationError.single("memory_undo", "this chat has changed no skill: nothing to undo")
        undo = f"Undo of this chat's last change (revision {last.rev} of '{last.skill_name}', {last.action}): "
        if last.action == "created":
            skill_id, name, arguments, summary = self._delete({"skill_id": last.skill_id})
            return "memory_delete_skill", (skill_id, name, arguments, shown(undo) + "\n" + summary)
        if last.action == "deleted":
            skill_id, name, arguments, summary = self._create(dict(last.spec), now)
            return "memory_store_skill", (skill_id, name, arguments, shown(undo) + "\n" + summary)
        before = self.store.revisions.get_revision(last.skill_id, last.rev - 1)
        existing = self.store.skills.get_skill(last.skill_id)
        current, wanted = as_spec(existing), SkillSpec.model_validate(before.spec)
        lines = [undo, f"Change skill {existing.id} '{existing.name}' back to revision {before.rev}:",
                 *describe_update(current, wanted, ["an undo is always yours to confirm"])]
        arguments = {"skill_id": existing.id, "patch": applied_fields(wanted), "base": spec_digest(current)}
        return "memory_update_skill", (existing.id, existing.name, arguments, shown_lines(lines))

    def _delete(self, fields: dict[str, Any]) -> tuple[int, str, dict[str, Any], str]:
        skill = self.store.skills.find_skill(required_ref(fields, "memory_delete_skill"), agent_of(fields))
        when = skill.trigger_config.describe() if skill.trigger_config else skill.trigger_type
        schedule = " and its schedule" if skill.schedule_id else ""
        summary = (f"Delete skill {skill.id} '{skill.name}' (agent {skill.agent_id}, {skill.tier} tier, {when})"
                   f"{schedule}: it will not run again.")
        return skill.id, skill.name, {"skill_id": skill.id}, shown(summary)

    def _emit(self, fields: dict[str, Any], call: ChatCall) -> tuple[None, str, dict[str, Any], str]:
        name, data, event_id = first(fields, EVENT_KEYS), first(fields, DATA_KEYS), first(fields, EVENT_ID_KEYS)
        if isinstance(data, str) and json_object(data) is not None:
            data = json_object(data)
        problems = check_event(name, None if event_id is None else str(event_id), data)
        if problems:
            raise SkillValidationError(problems)
        name = str(name).strip()
        # An id of its own, the same on every retry: applied twice, the event would start its runs once.
        event_id = str(event_id) if event_id is not None else \
            "chat-" + hashlib.sha256(call.request_key.encode()).hexdigest()[:16]
        subscribers = [s for s in self.store.skills.list_skills(SkillFilter(trigger_type="event"))
                       if s.subscribed_event == name and s.enabled]
        runs = ", ".join(f"{s.id} '{s.name}'" for s in subscribers) or "none: no enabled skill is subscribed now"
        summary = (f"Emit event '{name}' (id {event_id}) with data {json.dumps(data, ensure_ascii=False)[:1000]}; "
                   f"each enabled subscriber starts a run: {runs}")
        return None, name, {"event": name, "data": data, "event_id": event_id}, shown(summary)

    def _normalized(self, request: RegisterInput) -> Prepared:
        prepared = self.preparer.prepare_skill(request)
        if any(e.field == "target" for e in prepared.errors):
            raise SkillNotFoundError("; ".join(e.message for e in prepared.errors))
        if prepared.errors or prepared.normalized is None:
            raise SkillValidationError(prepared.errors)
        return prepared

    def _replace_older(self, approval: Approval, now: datetime) -> list[int]:
        """A proposal replaces the pending ones of its session for the same skill (each was shown against
        the skill as it is, so only one of them could be made): a yes makes only the last."""
        replaced = []
        for older in self.store.approvals.list_approvals(session_id=approval.session_id):
            if older.kind == "change" and older.tool == approval.tool and older.id < approval.id \
                    and _same_target(older, approval):
                self.store.approvals.decide_approval(older.id, "denied", now=now, by="chat",
                                                     reason=f"replaced by proposal #{approval.id}")
                replaced.append(older.id)
        return replaced


def _same_target(a: Approval, b: Approval) -> bool:
    if a.skill_id is not None or b.skill_id is not None:
        return a.skill_id == b.skill_id
    return a.skill_name.strip().lower() == b.skill_name.strip().lower()


def _proposed(approval: Approval, replaced: list[int]) -> CallToolResult:
    from mcp_types import CallToolResult, TextContent  # a chat's answer: not needed before the worker polls

    replaces = f" It replaces proposal {', '.join(f'#{i}' for i in replaced)}: propose all of a skill's " \
        "changes in one call." if replaced else ""
    text = (f"Proposed, NOT made: nothing is changed until the user confirms (proposal #{approval.id}).{replaces} "
            "Tell the user exactly what would be stored, below, and ask them to reply yes to make it or no to "
            "cancel; do not say it is done.\n" + approval.summary)
    structured = {"ok": True, "proposed": True, "approval_id": approval.id, "summary": approval.summary,
                  "expires_at": approval.expires_at.isoformat(), "errors": []}
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=structured)


class ProposalActivities:
    """The store steps of DecideChange."""

    def __init__(self, store: Store) -> None:
        self.store = store

    @activity.defn
    def decide_change(self, request: DecideChangeRequest) -> ChangeVerdict:
        """Take one answer to a proposed change: refused if it is not a pending change of this session,
        expired past its time, denied if its skill changed since; else recorded, once (compare-and-set)."""
        decision, now = request.decision, request.now
        try:
            approval = self.store.approvals.get_approval(decision.approval_id)
        except SkillNotFoundError as e:
            return ChangeVerdict(problem=str(e))
        if approval.kind != "change":
            return ChangeVerdict(approval=approval, problem=f"approval #{approval.id} is not a proposed change")
        if request.session_id is not None and approval.session_id != request.session_id:
            return ChangeVerdict(problem=f"proposal #{approval.id} was not made in this conversation")
        if not approval.pending:
            return ChangeVerdict(approval=approval)
        if approval.expires_at <= now:
            expired, _ = self.store.approvals.decide_approval(approval.id, "expired", now=now, by="timeout",
                                                              reason="not confirmed in time")
            return ChangeVerdict(approval=expired)
        status, reason = ("approved", decision.reason) if decision.approve else ("denied", decision.reason)
        if decision.approve:
            stale = self._stale(approval)
            if stale:
                status, reason = "denied", stale
        decided, won = self.store.approvals.decide_approval(approval.id, status, now=now, by=decision.by, reason=reason)
        return ChangeVerdict(approval=decided, apply=won and status == "approved")

    def _stale(self, approval: Approval) -> str | None:
        """Why an approved change can no longer be made as shown (its skill is gone, or changed since)."""
        if approval.tool not in ("memory_update_skill", "memory_delete_skill"):
            return None
        try:
            skill: Skill = self.store.skills.get_skill(int(approval.arguments["skill_id"]))
        except SkillNotFoundError:
            return "the skill no longer exists"
        base = approval.arguments.get("base")
        if base is not None and spec_digest(as_spec(skill)) != base:
            return "the skill changed since this was proposed; ask again"
        return None

    @activity.defn
    def record_change_outcome(self, request: ChangeOutcome) -> Approval:
        self.store.approvals.record_approval_outcome(request.approval_id, request.outcome)
        return self.store.approvals.get_approval(request.approval_id)
