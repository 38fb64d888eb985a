"""A chat turn's payloads: the message, the session it prepares, the proposals it records, its reply."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import BaseModel, Field, computed_field

from skills.chat.account import NOTHING, Effect, correction, effects, touched_words
from skills.chat.reply import NoticeRef
from skills.display import shown
from skills.owner.approvals import Approval
from skills.run.catalog import ToolsetGrant
from skills.run.rehearsal import rehearsal_lines
from skills.spec.models import RunRecord

REPLY_YES = "reply yes to make it or no to cancel"
"""How a proposal is answered in a chat that takes replies (Telegram, the Python client's next message)."""


class ChatInput(BaseModel):
    session_id: str
    """Messages of one session share a conversation (kept in the store)."""
    message: str
    reply_to: str | None = None
    """The run whose result the message replies to (its id, or its first 8+ characters): the turn opens
    with that result and its skill, read from the store by the prepare activity (``skills.chat.reply``)."""
    reply_to_notice: NoticeRef | None = None
    """The delivered notice the message replies to (a Telegram reply): its run, if the store knows it,
    is the context, as with ``reply_to``; a message that was no notice adds nothing."""
    agent_id: str | None = None
    """With a reply: only a run of this agent's skills may be its context."""


class ChatReply(BaseModel):
    session_id: str
    ok: bool
    reply: str
    """The model's answer (or why the turn stopped)."""
    changes: list[dict[str, Any]] = Field(default_factory=list)
    """Skills the turn created, updated or deleted: action, id, name, tier, trigger, next_fire."""
    matched: list[str] = Field(default_factory=list)
    """SKILL.md skills the message triggered."""
    unavailable: list[str] = Field(default_factory=list)
    """Matched skills' own toolset servers that could not start, with the reason: the turn went on without them."""
    proposals: list[Approval] = Field(default_factory=list)
    """Changes the turn proposed and did not make: each waits for the owner's yes (``skills.owner.approvals``)."""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    left_out: list[str] = Field(default_factory=list)
    """What was left out of the model's requests to fit its context (earlier messages, lower-ranked skills)."""
    rehearsals: dict[int, RunRecord] = Field(default_factory=dict)
    """The rehearsal of each proposed skill that ended in time, by proposal: what it would do (``skills.run.rehearsal``)."""
    rehearsing: dict[int, str] = Field(default_factory=dict)
    """Rehearsals still running (their workflow ids, by proposal), or why one could not run."""
    called: list[str] = Field(default_factory=list)
    """Tools outside the chat's own (a matched skill's toolset, a script) that answered a call this turn."""
    asked_again: str | None = None
    """Why the model was asked a second time in this turn, structured (``SKILLS_LLM_TOOLS=auto``): its first
    answer made no call where one was needed."""
    said_by: Literal["model", "engine"] = "model"
    """Who wrote ``reply``: the model, or the engine (an answer to proposals, why the turn stopped, or an answer
    it wrote in the model's place: a plain reminder read, a service no tool reaches, the list of skills). Only a
    model's reply is corrected (``correction``)."""

    @computed_field  # type: ignore[prop-decorator]
    @property
    def effects(self) -> list[Effect]:
        """What the turn did, as the engine recorded it (``skills.chat.account``): each skill created, updated or
        deleted, then each proposal; empty when it did nothing, whatever the reply says."""
        return effects(self.changes, self.proposals, self.called)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def correction(self) -> str | None:
        """The engine's correction of a model's reply that claims an act the turn did not do."""
        return correction(self.reply, self.effects) if self.said_by == "model" and self.ok else None

    def account_lines(self, how: str = REPLY_YES) -> list[str]:
        """The engine's account, under the model's words: the correction of a false claim, then what the turn
        did (``change_lines``), or that it did nothing. ``how``: how the owner answers a proposal where they read
        it (``change_lines``)."""
        again = [f"asked again: {self.asked_again}"] if self.asked_again else []
        if self.correction is not None:
            return [self.correction, *again]
        done = [*self.change_lines(how), *(f"called: {tool}" for tool in self.called)]
        return [*(done or [NOTHING]), *again]

    def change_lines(self, how: str = REPLY_YES) -> list[str]:
        """One line per skill the turn changed, with its next fire, then each change it proposed, with
        what would be stored and how to confirm it: the facts under the model's words. ``how``: the answer that
        works where the owner reads this (a chat's plain reply; in a terminal, the command that sends it)."""
        lines = []
        for change in self.changes:
            when = f", next fire {_local(change['next_fire'], change.get('trigger'))}" if change.get("next_fire") else ""
            if any("skipped" in line for line in change.get("coming") or []):
                # Days skipped (business days, holidays) are what the user most needs to see are right.
                when = f", next fires {'; '.join(change['coming'])}"
            tier = f" ({change['tier']} tier{when})" if change.get("tier") else when
            # What an update did to the skill: paused or resumed, when it now fires, every other field it changed.
            words = touched_words(change) if change["action"] == "updated" else ""
            lines.append(f"{change['action']}: skill {change.get('id')} '{change.get('name')}'{tier}"
                         + (f": {words}" if words else ""))
        for proposal in self.proposals:
            lines.append(f"proposed #{proposal.id}, NOT made: {how} "
                         f"(or `skills approve {proposal.id}`), before {_local(proposal.expires_at.isoformat(), None)}")
            lines += [f"  {line}" for line in proposal.summary.splitlines()]
            if proposal.id in self.rehearsals:
                lines += [f"  {line}" for line in rehearsal_lines(self.rehearsals[proposal.id])]
            elif proposal.id in self.rehearsing:
                lines.append(f"  rehearsal: {shown(self.rehearsing[proposal.id])}")
        return lines


def zone_time(moment: datetime, zone: str | None) -> str:
    """A time as a clock in ``zone`` (an IANA name) shows it: ``2026-11-22 09:05 Europe/Paris``.

    With no zone, as this machine's clock shows it, named by its abbreviation
    (``2026-11-22 09:05 CET``). A zone this machine does not know raises
    ZoneInfoNotFoundError (ValueError for a malformed name): each caller has its own way out."""
    local = moment.astimezone(ZoneInfo(zone)) if zone else moment.astimezone()
    return f"{local:%Y-%m-%d %H:%M} {zone or local.tzname() or local.strftime('UTC%z')}"


def _local(iso: str, trigger: dict[str, Any] | None) -> str:
    """An ISO time as the skill's zone (UTC if it has none) shows it; the ISO text if it cannot."""
    try:
        return zone_time(datetime.fromisoformat(iso), (trigger or {}).get("timezone") or "UTC")
    except (ValueError, TypeError, ZoneInfoNotFoundError, OSError):
        return iso


class ChatPrepare(BaseModel):
    conversation_id: str
    message: str
    now: datetime
    reply_to: str | None = None
    """The run the message replies to (``ChatInput.reply_to``): its id only, read here from the store."""
    reply_to_notice: NoticeRef | None = None
    agent_id: str | None = None


class ChatSession(BaseModel):
    model: str
    tools: list[str]
    matched: list[str] = Field(default_factory=list)
    """The SKILL.md skills the message triggered (their instructions are in the prompt)."""
    max_steps: int
    token_cap: int
    malformed_limit: int
    llm_timeout_seconds: float
    tool_timeout_seconds: float
    script_skills: list[str] = Field(default_factory=list)
    """The matched SKILL.md skills whose declared scripts ``run_script`` may run (scripts enabled)."""
    script_timeout_seconds: float = 60.0
    toolsets: list[ToolsetGrant] = Field(default_factory=list)
    """The own toolsets of the skills whose instructions are in the prompt: the turn connects them and
    their tools join its sandbox (``open_toolsets``)."""
    untrusted: list[str] = Field(default_factory=list)
    """Why skills in the prompt came without their toolsets and scripts (their owner has not trusted them,
    or they changed since): the turn goes on without them, and says so."""
    answer: bool | None = None
    """The message is the user's plain yes (True) or no (False) to ``answering``: no LLM is asked."""
    answering: list[int] = Field(default_factory=list)
    """The session's pending proposed changes the message answers."""
    rehearsal_wait_seconds: float = 0.0
    """How long the turn waits for the rehearsal of each skill it proposes (0: none is rehearsed)."""
    tool_mode: Literal["auto", "native", "structured"] = "native"
    """``SKILLS_LLM_TOOLS``: how the model makes its calls (``skills.llm.structured``)."""


class ChatProposals(BaseModel):
    """The proposals a turn recorded (approval ids), to read back for its reply."""

    ids: list[int]


class ChatAnswer(BaseModel):
    """The turn's reply, written by the engine (an answer to proposals), appended to the conversation."""

    conversation_id: str
    text: str
    now: datetime
    role: Literal["assistant", "user"] = "assistant"
    """``user``: the engine's note to the model before it asks again (``SKILLS_LLM_TOOLS=auto``), in the
    user's turn so every chat template takes it."""


class ReminderRequest(BaseModel):
    """A chat message that may be a plain reminder, the conversation it belongs to, and the turn's now."""

    conversation_id: str
    message: str
    now: datetime


class ReminderProposed(BaseModel):
    """The reminder recorded as a proposal, and the reply that says so (None: the message is the model's)."""

    proposal: Approval | None = None
    reply: str = ""
