"""The engine's own account of a chat turn: what it did, apart from what the model said.

A small model often tells the user "Stored: every weekday at 9 ..." without having called a tool. The
reply then reads as a fact and nothing was made. So every turn ends with the engine's account, built
from what the engine itself did in the turn (the management tool calls that succeeded, the proposals
it recorded), never from the model's words:

- ``effects``: one :class:`Effect` per proposal, skill created, updated or deleted (empty: nothing);
- ``claimed_act``: whether the model's reply claims an act (stored, created, scheduled, "I'll remind
  you"...), read by a small, bounded set of patterns;
- ``correction``: when the reply claims an act and there is no effect, the engine's correction in
  plain words.

The same claim test lets ``auto`` mode notice a model that answered without the call it needed
(``asks_for_change`` reads the user's side). Pure code, no I/O.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel

from skills import linear
from skills.naming import GET_TOOL_CATALOG, MANAGEMENT_TOOLS
from skills.owner.approvals import Approval
from skills.skillmd.tool import TOOL_NAME as SKILL_TOOL
from skills.spec.models import SkillSpec, TriggerConfig

CLAIM_CHARS = 4_000
"""Characters of a reply the claim test reads: a claim of an act comes early, and the test stays linear."""
MESSAGE_CHARS = 2_000
"""Characters of a user's message ``asks_for_change`` reads."""

EffectAction = Literal["proposed", "created", "updated", "deleted", "called"]
ENGINE_TOOLS = frozenset({*MANAGEMENT_TOOLS, GET_TOOL_CATALOG, SKILL_TOOL})
"""The chat's own tools: what they do is a proposal or a change (or a read). Any other tool a turn calls (a
matched skill's toolset, ``run_script``) acts outside the skills, and is accounted for as ``called``."""


class Effect(BaseModel):
    """One thing a chat turn did to the skills, as the engine recorded it."""

    action: EffectAction
    """``proposed``: recorded for the owner's yes, NOT made; ``called``: a tool outside the skills (a matched
    skill's own toolset, a script) answered a call; the others: made."""
    skill_id: int | None = None
    """The skill made, changed or deleted (a proposal: the skill it would change; None for a new one)."""
    name: str | None = None
    tier: str | None = None
    trigger: dict[str, Any] | None = None
    """When it fires, as stored (or, for a proposal, as proposed)."""
    next_fire: str | None = None
    approval_id: int | None = None
    """A proposal's id: ``skills approve ID``, or the user's plain yes in the same session."""
    tool: str | None = None
    """The management tool that made, or would make, the change."""
    enabled: bool | None = None
    """Whether the skill made or changed is enabled (fires) now; None: not said (a proposal, a delete)."""
    changed: list[str] | None = None
    """The fields of the skill an update changed, as its revision records them; None: not known."""
    summary: str = ""
    """One line for a person."""


def effects(changes: list[dict[str, Any]], proposals: list[Approval], called: list[str] | None = None
            ) -> list[Effect]:
    """The turn's effects: each change a management tool made (``ChatReply.changes``), then each proposal,
    then each tool outside the skills that answered a call (``acted``)."""
    found = []
    for change in changes:
        action = change.get("action")
        if action not in ("created", "updated", "deleted"):
            continue
        name = change.get("name")
        words = touched_words(change) if action == "updated" else ""
        changed = change.get("changed")
        found.append(Effect(action=action, skill_id=change.get("id"), name=name, tier=change.get("tier"),
                            trigger=_set(change.get("trigger")), next_fire=change.get("next_fire"),
                            enabled=change.get("enabled") if action != "deleted" else None,
                            changed=touched(changed) if isinstance(changed, list) else None,
                            summary=f"{action} skill {change.get('id')} '{name}'" + (f": {words}" if words else "")))
    for proposal in proposals:
        data = proposal.arguments.get("data") or proposal.arguments.get("patch")
        trigger = data.get("trigger_config") if isinstance(data, dict) else None
        first = proposal.summary.splitlines()[0].rstrip(":") if proposal.summary else proposal.tool
        found.append(Effect(action="proposed", skill_id=proposal.skill_id, name=proposal.skill_name or None,
                            trigger=_set(trigger), approval_id=proposal.id,
                            tool=proposal.tool, summary=f"proposed #{proposal.id}, NOT made: {first}"))
    found += [Effect(action="called", tool=tool, summary=f"called {tool}") for tool in called or []]
    return found


def touched(changed: list[Any]) -> list[str]:
    """The owner's fields among those a change altered (``{field, before, after}`` each, a revision's diff): the
    engine's own (its revision counter, timestamps) are not."""
    return [c["field"] for c in changed if isinstance(c, dict) and c.get("field") in SkillSpec.model_fields]


def touched_words(change: dict[str, Any]) -> str:
    """What an update did, in the engine's words: ``paused`` or ``resumed`` (``enabled`` changed), when it now
    fires (its trigger changed), then every other field it changed by name; ``nothing changed`` when it changed
    none. A change that does not say what it changed (one made on the owner's yes) says only whether the skill
    is paused, which it always tells."""
    changed = change.get("changed")
    if not isinstance(changed, list):
        return "paused, it will not fire" if change.get("enabled") is False else ""
    fields = {c["field"]: c for c in changed if isinstance(c, dict) and c.get("field") in SkillSpec.model_fields}
    if not fields:
        return "nothing changed"
    words = []
    if "enabled" in fields:
        words.append("resumed" if fields["enabled"].get("after") else "paused")
    if "trigger_config" in fields:
        words.append(f"now fires {_trigger_words(fields['trigger_config'].get('after'), change)}")
    other = [name for name in fields if name not in ("enabled", "trigger_config", "trigger_type")]
    if "trigger_type" in fields and "trigger_config" not in fields:
        other.insert(0, "trigger_type")
    if other:
        words.append(f"changed {', '.join(other)}")
    return "; ".join(words)


def _trigger_words(after: Any, change: dict[str, Any]) -> str:
    """A trigger as the engine describes it (``cron '0 10 * * 1-5' (Europe/Paris)``); the stored skill's when
    the diff's value was cut (a long value is kept as its first characters)."""
    for trigger in (after, change.get("trigger")):
        if trigger is None:
            return "on no schedule (only when asked)"
        if isinstance(trigger, dict):
            try:
                return TriggerConfig.model_validate(trigger).describe()
            except ValueError:
                continue
    return "on a new trigger"


def acted(calls: list[tuple[str, bool]]) -> list[str]:
    """The tools outside the chat's own that answered a call without error, once each: ``calls`` is each
    call's tool and whether it succeeded."""
    return list(dict.fromkeys(tool for tool, ok in calls if ok and tool not in ENGINE_TOOLS))


def _set(trigger: Any) -> dict[str, Any] | None:
    """A trigger's fields that are set (a stored trigger lists every field, most of them null)."""
    return {key: value for key, value in trigger.items() if value is not None} or None \
        if isinstance(trigger, dict) else None


# --- what a reply claims -----------------------------------------------------------------------
# Each pattern is matched by RE2 (``skills.linear``): linear in the text it reads, whatever the model wrote.

_DONE = (r"(?:stored|saved|created|scheduled|registered|added|set\s+up|set|updated|changed|modified|"
         r"deleted|removed|paused|resumed|enabled|disabled|cancel+ed)")
_CLAIMS = [
    # "Stored: ...", "Done!", "Scheduled." opening the reply or a line
    linear.compile(rf"(?:^|\n)[^\w\n]{{0,3}}(?:done|all\s+set|{_DONE})\b", linear.IGNORECASE),
    # "I have created", "I've scheduled", "I stored", "I just set up"
    linear.compile(rf"\bI(?:'ve|\s+have)?\s+(?:just\s+|now\s+|successfully\s+|also\s+)?{_DONE}\b", linear.IGNORECASE),
    # "the reminder has been set", "your skill is now scheduled", "it was stored"
    linear.compile(rf"\b(?:reminder|skill|task|alarm|schedule|job|it|that|this)\s+(?:has\s+been|have\s+been|is\s+now|"
                   rf"was|are\s+now)\s+(?:successfully\s+)?{_DONE}\b", linear.IGNORECASE),
    # "reminder set", "skill created", "your reminder is set"
    linear.compile(rf"\b(?:reminder|skill|task|alarm)s?\s+(?:is\s+|are\s+)?{_DONE}\b", linear.IGNORECASE),
    # "I'll remind you", "you will be reminded", "you'll get a reminder"
    linear.compile(r"\bI(?:'ll|\s+will)\s+(?:now\s+)?(?:remind|notify|message|ping)\s+you\b", linear.IGNORECASE),
    linear.compile(r"\byou(?:'ll|\s+will)\s+(?:be\s+reminded|be\s+notified|get\s+a\s+reminder|receive\s+a\s+"
                   r"reminder)\b", linear.IGNORECASE),
]
_PROMISES = [
    # "I'll send you", "you will receive a daily digest", and a small model's "I will receive a summary"
    # (it speaks as the user): a thing the engine would send, promised as if scheduled
    linear.compile(r"\bI(?:'ll|\s+will)\s+(?:now\s+)?(?:send|text|email)\s+you\b", linear.IGNORECASE),
    linear.compile(r"\b(?:I|you)(?:'ll|\s+will)\s+(?:get|receive)\s+(?:a|an|your|the)\s+(?:[\w-]+\s+){0,2}?"
                   r"(?:reminder|summary|digest|message|notification|note|update|report)s?\b", linear.IGNORECASE),
]
_UNSAID = linear.compile(r"\b(?:not|never|no|nothing|cannot|unable|would|could|should|shall|can|may|might|if|once|"
                         r"when|after|unless|until|want|like|to)\b|n't\b", linear.IGNORECASE)
"""Words before a claim, in its sentence, that make it none: "I have NOT stored", "shall I set up",
"once you confirm, I'll remind you", "would you like me to"."""
LOOK_BACK = 48
"""Characters before a claim, within its sentence, read for those words."""


def claimed_act(reply: str, *, promises: bool = True) -> str | None:
    """The words of ``reply`` that claim an act was done (stored, created, scheduled, set up, "I'll remind
    you"...), or None. A negated, conditional or asked one ("nothing was stored", "shall I schedule it?",
    "once you say yes, I'll remind you") is no claim. ``promises``: a promise of something sent ("you'll
    receive a summary") counts too; the chat workflow reads it behind a patch (its histories from before
    decided without it)."""
    text = reply[:CLAIM_CHARS]
    for pattern in (*_CLAIMS, *_PROMISES) if promises else _CLAIMS:
        for found in pattern.finditer(text):
            start = found.start() + (1 if text[found.start()] == "\n" else 0)
            sentence = max(text.rfind(mark, 0, start) for mark in (". ", "! ", "? ", "\n")) + 1
            if _UNSAID.search(text[max(sentence, start - LOOK_BACK):start]) or _asked(text, found.end()):
                continue
            return found.group(0).strip(" \n:.!-*#")
    return None


def _asked(text: str, end: int) -> bool:
    """The claim sits in a question ("Is the reminder set?")."""
    stops = [i for i in (text.find(mark, end) for mark in ".!?\n") if i != -1]
    return bool(stops) and text[min(stops)] == "?"


_PROPOSAL_CLAIMS = linear.compile(
    r"\bproposed\W{0,3}\s*not\s+made\b|\bproposal\s*#\s*\d|\breply\s+(?:`[^`\n]{0,40}`\s+)?yes\s+to\s+make\s+it\b|"
    r"\b(?:I(?:'ve|\s+have)?|(?:has|have)\s+been|is|was|are)\s+(?:now\s+|just\s+)?proposed\b", linear.IGNORECASE)
"""A reply that says a change was proposed and waits for a yes ("Proposed, NOT made", "I've proposed",
"reply yes to make it"): the words of the engine's own account, which a small model repeats."""


def proposal_claimed(reply: str) -> str | None:
    """The words of ``reply`` that claim a proposal was made (and waits for the owner's yes), or None; a negated
    or conditional one ("nothing was proposed", "I could propose one") is none. The engine lets it stand only
    when the turn did propose."""
    text = reply[:CLAIM_CHARS]
    for found in _PROPOSAL_CLAIMS.finditer(text):
        start = found.start()
        sentence = max(text.rfind(mark, 0, start) for mark in (". ", "! ", "? ", "\n")) + 1
        if _UNSAID.search(text[max(sentence, start - LOOK_BACK):start]) or _asked(text, found.end()):
            continue
        return found.group(0).strip()
    return None


def unfounded_proposal() -> str:
    """The engine's sentence in place of a reply that claims a proposal the turn did not make."""
    return ("Nothing was proposed: the model's answer said a change waits for your yes, but no skill was proposed, "
            "created, changed or deleted, and nothing waits for an answer. Ask again, more plainly.")


_WHEN = linear.compile(
    r"\b(?:remind|reminder|reminders|schedule|scheduled|every|daily|weekly|monthly|hourly|weekdays?|tomorrow|"
    r"tonight|in\s+\d+\s+(?:minutes?|mins?|hours?|days?)|at\s+\d{1,2}(?::\d\d)?\s*(?:am|pm)?)\b", linear.IGNORECASE)
_VERB = linear.compile(r"\b(?:create|make|add|set\s+up|change|update|move|rename|pause|resume|enable|disable|delete|"
                       r"remove|stop|cancel)\b", linear.IGNORECASE)
_SKILL = linear.compile(r"\b(?:skills?|reminders?|alarms?|tasks?|jobs?|notifications?|summary|summaries)\b",
                        linear.IGNORECASE)


def asks_for_change(message: str) -> bool:
    """Whether the user's message reads as a request to create, change or delete a skill: it says when
    ("remind me", "every monday", "in 10 minutes", "at 9"), or a verb of change names a skill ("delete the
    oven reminder"). A turn that answers it with no call, in ``auto`` mode, is asked again structured:
    generous on purpose, the retry costs one request, a miss a turn with nothing done."""
    text = message[:MESSAGE_CHARS]
    return _WHEN.search(text) is not None or (_VERB.search(text) is not None and _SKILL.search(text) is not None)


def correction(reply: str, found: list[Effect]) -> str | None:
    """The engine's correction of a reply that claims an act when the turn did nothing; None otherwise."""
    if found:
        return None
    claim = claimed_act(reply)
    if claim is None:
        return None
    return (f"Nothing was stored: the model did not make a proposal. Its reply says \"{claim[:60]}\", but no "
            "skill was proposed, created, changed or deleted. Ask again, more plainly.")


NOTHING = "nothing was proposed, created, changed or deleted"
