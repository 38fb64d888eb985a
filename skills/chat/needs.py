"""What a chat's task needs, checked against the catalog's tools: by what they say they do, not by a list of names.

The model names what a task needs in its own words (the structured answer's ``needs``: "send an email to my
boss", "read train delays"; in native tool mode the engine reads them off the proposed skill's instructions,
:func:`derived_needs`). Each need is matched against every tool the engine could use (its name, description and
server) with the skills' ranker (``skills.skillmd.matching``: words, and meaning when the catalog ranks by
meaning), and against what the engine itself knows, which similarity cannot tell:

- the bundled senders (``outbox``, ``telegram``) reach only the owner: a need to message, email, call or post
  to someone else is met only by a tool that says it reaches others;
- a need to tell, remind or notify the owner is met by any tool that reaches the owner;
- a need that is only timing ("run every morning at 7") is the engine's own, and so are the owner's skills
  ("list my skills");
- a configured server not connected yet (not started: the worker connects it when first needed; or on its
  connect) counts as there, by its name (and its description, when one is given).

A need no tool meets is *unmet*: the engine answers it itself (:func:`unmet_reply`), naming what is missing,
and proposes nothing, or only the part that can be done, saying which part. Pure code, no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from skills import linear
from skills.skillmd.manifest import SkillFile, SkillManifest, Triggers
from skills.skillmd.matching import SkillIndex, Vectors
from skills.skillmd.terms import term_of, terms

MAX_NEEDS = 6
"""Needs read from one answer (a task that needs more is refused on the first six)."""
NEED_CHARS = 200
"""Characters of one need read."""
OWNER_ONLY = ("outbox", "telegram")
"""The bundled senders: they reach the owner and no one else (``mcp_servers``)."""
ENGINE = "the engine"
"""Who meets a need that is the engine's own (timing, the owner's skills)."""
MODEL = "the run's model"
"""Who meets a need that is thinking ("summarize the messages", "pick the three most important"): the model of the
skill's run, with no tool."""
ASSUMED = "assumed"
"""What a need read off a skill's instructions (:func:`derived_needs`) is met by when nothing says it is not: the
engine is sure of it only when no sender reaches whom it names, or it reads something no tool carries."""
ENGINE_DESCRIPTION = ("The skills engine itself: list, show, create, change, move, pause, resume and delete the "
                      "owner's skills and reminders; schedule a skill to run at a time, every day, week or hour.")
SIMILAR = 0.45
"""The least cosine (with meaning on) at which a tool meets a need on meaning alone: above the ranker's own bar
for a candidate (``SEMANTIC_MATCH``), since an unmet need missed is a promise the engine cannot keep."""

_OTHERS = linear.compile(r"\b(?:any(?:one| recipient| address| number| chat| contact)|other people|recipients?|"
                         r"contacts?|someone else)\b", linear.IGNORECASE)
"""A description that says its tool reaches others, not only the owner."""
_OWNER = linear.compile(r"\b(?:me|myself|the user|the owner|user|owner)\b", linear.IGNORECASE)
_SEND_VERBS = r"remind|notify|alert|warn|ping|tell|send|message|show"
"""Verbs of a message to someone (spelt once: the patterns below are alternations of them)."""
_TO_OWNER = linear.compile(rf"\b(?:{_SEND_VERBS})\b", linear.IGNORECASE)
_CHANNEL = linear.compile(r"^\s*(?:e-?mail|mail|sms|text|call|phone|ring|post|tweet|publish|dm|invite|reply\s+to|"
                          r"forward|whatsapp|share)\b|\b(?:send|write|compose)\s+(?:an?\s+|the\s+)?(?:e-?mail|sms|"
                          r"text\s+message|tweet|whatsapp|post|dm|letter)\b", linear.IGNORECASE)
"""A way to reach someone that says someone else, or a channel of its own ("email X", "post on...", "send an SMS")."""
_RECIPIENT = linear.compile(r"\b(?:to|tell|message|ask|notify|remind|ping|inform)\s+(?:my|our|his|her|their)\s+\w+|"
                            r"\b(?:my|our|the)\s+(?:boss|team|wife|husband|partner|mum|mom|dad|mother|father|friend|"
                            r"friends|colleague|colleagues|landlord|manager|family|kids?|sister|brother|client|clients|"
                            r"customer|customers|doctor|neighbou?r|neighbou?rs|coworkers?|grandma|grandpa)\b",
                            linear.IGNORECASE)
"""A recipient other than the owner ("to my boss", "tell the team"); the owner said as "me" or "the user" is the
owner (:func:`for_others`)."""
_TOOL = linear.compile(r"\b(?:tool|function|api)\b", linear.IGNORECASE)
_NAMED = linear.compile(r"\b(?:to|for|with|tell|text|message|call|email|e-mail|ping|ask|invite|remind)\s+[A-Z][a-z]+")
"""A recipient by name ("text Jonas", "a message to Anna"): case counts."""
_SENDS = linear.compile(rf"^\s*(?:{_SEND_VERBS}|give)\b", linear.IGNORECASE)
"""A need that is a message, with no one named: to the owner."""
_TIMING = frozenset(("schedul", "run", "repeat", "everi", "daili", "week", "weekli", "month", "monthli", "hour",
                     "hourli", "minut", "morn", "even", "evening", "afternoon", "night", "day", "time", "wait", "timer", "remind",
                     "reminder", "weekday", "weekend", "tomorrow", "today", "tonight", "am", "pm", "noon",
                     "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday", "task", "skill"))
"""Stems of words that say only when (the engine's own), by ``skills.skillmd.terms``."""


@dataclass(frozen=True)
class CatalogTool:
    """A tool the engine could give a skill, or a configured server not connected yet (``pending``: not started, or
    connecting), whose tools are not known."""

    name: str
    server: str
    description: str = ""
    pending: bool = False

    @property
    def reaches_others(self) -> bool:
        """Whether it can reach someone besides the owner: any tool but the bundled senders, and those only
        when their description says so."""
        return self.server not in OWNER_ONLY or _OTHERS.search(self.description) is not None

    @property
    def reaches_owner(self) -> bool:
        return self.server in OWNER_ONLY and not self.pending


@dataclass(frozen=True)
class Need:
    """One need, and what meets it: a tool's name, :data:`ENGINE`, or None (unmet)."""

    text: str
    met_by: str | None
    why: str = ""
    """Why an unmet need is unmet, when there is more to say than "no tool does it"."""

    @property
    def met(self) -> bool:
        return self.met_by is not None


def needs_of(value: Any) -> list[str]:
    """The needs a model's answer gives (a list of strings), cleaned: at most :data:`MAX_NEEDS`, each cut to
    :data:`NEED_CHARS`, blanks and repeats dropped; anything else is no needs."""
    if not isinstance(value, list):
        return []
    found = [" ".join(item.split())[:NEED_CHARS] for item in value if isinstance(item, str)]
    return list(dict.fromkeys(need for need in found if need))[:MAX_NEEDS]


_CLAUSE = linear.compile(r"[.;!?\n]+|,?\s+(?:and then|then|and)\s+|,\s+", linear.IGNORECASE)
_THINK_VERBS = (r"summari[sz]e|write|draft|compose|translate|decide|pick|choose|rank|sort|filter|format|count|"
                r"calculate|analy[sz]e|explain|compare|highlight")
"""Verbs of what a model does with its own thinking (spelt once, for the two patterns below)."""
_THINKING = linear.compile(rf"^\s*(?:{_THINK_VERBS}|include|keep|use|be|only|do not|don't|never|if|when|otherwise|"
                           r"skip|ignore|mention|group|list only|at most|say|start|end)\b", linear.IGNORECASE)
"""A clause the run's model does with its own thinking, or a condition: no tool needed."""


_THINKS = linear.compile(rf"^\s*(?:{_THINK_VERBS}|make\s+a\s+(?:summary|digest|list))\b", linear.IGNORECASE)
"""A need that is thinking, which a run's model does with no tool (what it thinks about is another need)."""


def reminded(said: str, need: Need) -> bool:
    """Whether ``need`` is what the owner asks to be reminded of ("remind me to email my boss"): its words come
    after "remind me" in their message, so a fixed message to them is what they asked (a model listed the
    reminder's own words as a need)."""
    found = _REMINDER.search(said[:2_000])
    if found is None:
        return False
    after = {t.term for t in terms(said[found.end():2_000])}
    return bool(_objects(need.text)) and _objects(need.text) <= after


_REMINDER = linear.compile(r"\bremind\s+me\b", linear.IGNORECASE)


def derived_needs(instructions: str) -> list[str]:
    """Needs read off a proposed skill's instructions, when the model named none (native tool mode): each
    clause that acts ("read today's messages with outbox_list_messages", "send the boss the figures"), not the
    ones the run's model does by thinking ("summarize them", "if nothing is urgent...")."""
    clauses = [_from_the_verb(part) for part in _CLAUSE.split(instructions[:2_000]) if not _THINKING.search(part)]
    return needs_of([clause for clause in clauses if len(clause.split()) >= 2])


def _from_the_verb(clause: str) -> str:
    """The clause from its first word that is neither a when ("every morning at 7") nor a stop word ("can you"),
    which is where what it does begins."""
    said = clause.split()
    for start, word in enumerate(said):
        term = term_of(word.strip(".,:;!?\"'()").casefold())
        if term is not None and term not in _TIMING and not any(c.isdigit() for c in word):
            return " ".join(said[start:])
    return ""


class NeedsCatalog:
    """The catalog's tools, indexed by the skills' ranker, to check needs against."""

    def __init__(self, tools: Iterable[CatalogTool], *, semantic: Vectors | None = None) -> None:
        """``semantic``: rank by meaning too (the catalog's ``adapters.semantic`` ranker; None: words alone)."""
        self.tools = {tool.name: tool for tool in tools}
        files: list[SkillFile] = []
        for tool in [*self.tools.values(), CatalogTool(ENGINE, "skills", ENGINE_DESCRIPTION)]:
            files.append(_file(tool.name, tool.server, tool.description, {file.name for file in files}))
        self._names = {file.name: name for file, name in zip(files, [*self.tools, ENGINE], strict=True)}
        self._index = SkillIndex(files, semantic=semantic)
        self._terms = {name: {t.term for t in terms(f"{name.replace('_', ' ')} {tool.server} {tool.description}")}
                       for name, tool in self.tools.items()}

    def check(self, needs: Sequence[str], *, derived: bool = False) -> list[Need]:
        """Each need with what meets it (see the module's doc). ``derived``: the needs were read off a skill's
        instructions, not stated: one is unmet only when the engine is sure (whom it reaches, or a read of
        something no tool carries), else :data:`ASSUMED` met."""
        checked = [self._one(need) for need in needs]
        if not derived:
            return checked
        return [need if need.met or need.why or _READS.search(need.text) and _objects(need.text)
                else Need(need.text, ASSUMED) for need in checked]

    def _one(self, need: str) -> Need:
        text = need.replace("_", " ")
        others = for_others(text)
        owner = not others and ((_OWNER.search(text) is not None and _TO_OWNER.search(text) is not None)
                                or _SENDS.search(text) is not None)
        if owner and (sender := next((t.name for t in self.tools.values() if t.reaches_owner), None)):
            return Need(need, sender)
        for found in self._index.match(text, limit=5):
            name = self._names[found.name]
            tool = self.tools.get(name)
            if not _meets(found, text):
                continue
            if tool is not None and others and not tool.reaches_others:
                continue
            return Need(need, name)
        if (name := self._by_object(text, others)) is not None:
            return Need(need, name)
        if not others and _timing_only(text):
            return Need(need, ENGINE)
        if not others and _THINKS.search(text):
            return Need(need, MODEL)
        if others and any(t.server in OWNER_ONLY for t in self.tools.values()):
            return Need(need, None, "the tools here that send reach only you")
        return Need(need, None)


    def _by_object(self, need: str, others: bool) -> str | None:
        """The best tool by words that carries a word of the need past its verb (its first word), when the ranker
        offered none: one word a tool shares ("check my messages") is the ranker's doubt, and says what."""
        objects = _objects(need)
        scores = self._index.scores(need)
        for name in sorted(scores, key=lambda n: (-scores[n], n)):
            tool = self.tools.get(self._names[name])
            if tool is None or (others and not tool.reaches_others):
                continue
            if objects & self._terms[tool.name]:
                return tool.name
        return None


def _file(name: str, server: str, description: str, taken: set[str]) -> SkillFile:
    """A tool as the ranker's document: its name in words, its description, and its server's name as a declared
    keyword (a need that names the server is for its tools). A name ``taken`` already (two tools whose names
    read the same in words: "a_b", "a-b") gets a number, so the two stay two."""
    slug = "-".join(w for w in linear.split(r"[^a-z0-9]+", name.lower()) if w)[:64].strip("-") or "tool"
    number = 2
    while slug in taken:
        slug, number = f"{slug[:60].rstrip('-')}-{number}", number + 1
    manifest = SkillManifest(name=slug, description=(description or f"The {server} server's tool {name}.")[:1024],
                             triggers=Triggers(keywords=[server] if server and server != "skills" else []))
    return SkillFile(manifest=manifest, path=Path(f"/{slug}"), source="user", mtime=datetime(1970, 1, 1, tzinfo=UTC))


def _meets(found: Any, need: str) -> bool:
    """Whether a candidate of the ranker meets ``need``: the need names it or its server, meaning puts it at
    :data:`SIMILAR` or nearer, or it carries two of the need's words (the ranker's bar), or one that is not the
    need's verb (the first word: "read" is in many tools, "messages" says what)."""
    if found.mentioned or found.matches or (found.similarity is not None and found.similarity >= SIMILAR):
        return True
    first = terms(need)[:1]
    objects = {t.term for t in found.terms} - {t.term for t in first}
    return len(found.terms) >= 2 or bool(objects)


def for_others(need: str) -> bool:
    """Whether ``need`` reaches someone other than the owner: a channel of its own (email, a call, a post), or a
    recipient named ("to my boss"), unless it names the owner ("email me") or a tool ("call the tool")."""
    if _OWNER.search(need) is not None or _TOOL.search(need) is not None:
        return False
    return any(pattern.search(need) is not None for pattern in (_RECIPIENT, _NAMED, _CHANNEL))


_READS = linear.compile(r"^\s*(?:read|check|get|fetch|look\s+up|find|search|monitor|track|watch|download|scrape|"
                        r"query|see)\b", linear.IGNORECASE)
"""A clause of instructions that reads something: what it reads is a tool's to give."""


def _objects(need: str) -> set[str]:
    """The need's terms past its verb, less the timing words."""
    return {t.term for t in terms(need)[1:]} - _TIMING


def to_someone(need: str) -> bool:
    """Whether ``need`` names someone other than the owner to reach ("email my landlord", "text Jonas"): the
    sure part of :func:`for_others`, for words that are not a need written as one (the owner's message: "the
    email says..." names a channel, and no one to reach)."""
    if _OWNER.search(need) is not None or _TOOL.search(need) is not None:
        return False
    return _RECIPIENT.search(need) is not None or _NAMED.search(need) is not None


def _timing_only(need: str) -> bool:
    said = [t.term for t in terms(need) if not t.term.isdigit()]
    return bool(said) and all(term in _TIMING for term in said)


def unmet(checked: Sequence[Need]) -> list[Need]:
    return [need for need in checked if not need.met]


def missing_words(checked: Sequence[Need]) -> str:
    """The unmet needs in one phrase: "send an email to my boss (the tools here that send reach only you), or
    read train delays"."""
    parts = [f"{need.text}" + (f" ({need.why})" if need.why else "") for need in unmet(checked)]
    return ", or ".join(parts)


def unmet_reply(checked: Sequence[Need], tools: Sequence[str], kept: str | None = None) -> str:
    """The engine's answer to a task with unmet needs: what is missing, what is proposed (``kept``: the part
    that can be done, proposed; None: nothing), what else could be done, and the tools there are."""
    missing = missing_words(checked)
    done = [need.text for need in checked if need.met and need.met_by != ENGINE]
    if kept is not None:
        head = (f"Only part of this can be done, so only that part is proposed: {kept}. Left out: no tool here can "
                f"{missing}.")
    else:
        head = f"No tool here can {missing}, so nothing was proposed."
        if done:
            head += f" The rest ({'; '.join(done)}) can be done alone: ask for it if you want it."
    return f"{head} {_connect(tools)}"


def imagined_reply(names: Sequence[str], tools: Sequence[str]) -> str:
    """The engine's answer to a reply that was only a call of tools no server has (``skills.llm.textcalls``)."""
    called = ", ".join(f"`{name}`" for name in names)
    return f"Nothing was done: the answer was a call to {called}, and no tool here has that name. {_connect(tools)}"


def _connect(tools: Sequence[str]) -> str:
    have = ", ".join(tools[:12]) + (f" and {len(tools) - 12} more" if len(tools) > 12 else "") if tools else "none"
    return (f"A skill can use only the tools of the MCP servers this engine connects (now: {have}); connect a server "
            "that can do it (docs/tools.md), then ask again.")


__all__ = ["ASSUMED", "ENGINE", "MAX_NEEDS", "MODEL", "OWNER_ONLY", "CatalogTool", "Need", "NeedsCatalog",
           "derived_needs", "for_others", "imagined_reply", "to_someone", "missing_words", "needs_of", "reminded", "unmet", "unmet_reply"]
