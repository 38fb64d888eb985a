"""Matching a user's message against every skill, ranked, with the reasons.

Two kinds of evidence add up to the words' score:

- what skills carry, ranked lexically (:mod:`skills.skillmd.lexical`, BM25F over the name, the
  description, the declared triggers and the body's headings, with stemming and stop words):
  the ecosystem's skills say when to use them in their description and declare nothing else;
- declared triggers, found exactly as written (keywords and verbs as whole words, phrases as whole
  word sequences, RE2 patterns) and the skill's name said in full: an author's word that a message
  is for the skill, so each one alone makes the skill sure.

With a semantic ranker, the skills nearest the message by meaning are a second ranking, and the two
are fused by reciprocal rank. A candidate is offered when something says it is relevant: a declared
trigger or the name, a cosine of :data:`SEMANTIC_MATCH`, or a score of :data:`THRESHOLD` on at least
:data:`MIN_TERMS` distinct terms of the message. One shared word is not enough: "fit a linear
regression" says ``linear``, and so does the description of the Linear issue tracker. Whether the
first candidate is sure, or the candidates go to a model to choose among, is :attr:`SkillMatch.sure`.

Built for many skills: triggers go into a dict keyed by their words, and a message is cut into its
word sequences (up to the longest trigger's length), each looked up once; the lexical index is
inverted (each term's skills and scores, computed when the index is built). So the cost grows with
the message and its words' postings, not with the number of skills. Patterns were compiled once
when the skill loaded (with RE2, in linear time: see :mod:`skills.skillmd.patterns`); they are the
only part tried one by one, since a regex has no words to index it by, and a pattern several skills
share is tried once.

A message is matched on its first :data:`~skills.skillmd.patterns.MAX_MATCH_CHARS` characters, so
its cost is bounded however long it is.
"""

from __future__ import annotations

import heapq
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict

from skills import linear
from skills.skillmd.lexical import Evidence, LexicalIndex
from skills.skillmd.manifest import SkillFile
from skills.skillmd.patterns import MAX_MATCH_CHARS, Pattern, match_text
from skills.skillmd.terms import Term, is_folded, terms, words


class Encoding(Protocol):
    def encode(self, texts: Sequence[str]) -> Any: ...


class Vectors(Protocol):
    """What ranking by meaning asks of a vector cache (``adapters.semantic.VectorCache``): the texts'
    unit vectors as rows (None: not ready yet, the index ranks on words alone), and the encoder that
    makes a message's."""

    @property
    def encoder(self) -> Encoding: ...
    def vectors(self, texts: Sequence[str]) -> Any: ...

DEFAULT_LIMIT = 3

TRIGGER_SCORE = 2.0
"""What one declared keyword, verb or pattern found in the message adds: as much as the threshold,
so a declared trigger alone matches, and about as much as two distinctive words of a description."""

PHRASE_WORD_SCORE = 3.5
"""What each word of a declared multi-word keyword or verb found as a phrase adds: a phrase is more
specific than its words found apart, so a two-word phrase outranks three single-word triggers."""

MENTION_SCORE = 12.0
"""What the skill's full name adds when the message says it (``code-review`` or ``code review``):
the user asked for that skill. Only names of two words or more: a one-word name (``linear``,
``pdf``) is an ordinary word, weighed like the description's words."""

THRESHOLD = 1.2
"""The least words' score of a relevant candidate: about two distinctive words of the message, or one trigger
(set on the tuning half of tests/skills/skillmd/data/match_messages.json, checked on the other)."""

MIN_TERMS = 2
"""Distinct terms of the message a skill must carry to match on lexical evidence alone."""

MIN_COVERAGE = 0.3
"""The least share of what the message says that a first candidate must carry to be sure on its
evidence: the message's terms weighed by their rarity in the catalog (a term no skill carries weighs
as the rarest). "Write a short birthday poem for my sister" shares ``write`` and ``short`` with a
video-content skill, but its birthday, poem and sister are in no skill: it is about something else."""


ROUTING_SHARE = 0.5
"""A routing skill (:func:`routes`) ranks below a sibling that scores at least this share of its
score: the sibling is where the routing skill would send the request."""

_ROUTES = linear.compile(
    r"\b(?:router|entry point|overview|index)\b[^.]{0,40}?\b(?:skills|every|all)\b"
    r"|\bload this skill first\b"
    r"|\bbefore (?:choosing|picking|loading|using) (?:another|a more specific|the other)\b",
    linear.IGNORECASE,
)


def routes(description: str) -> bool:
    """Whether a skill's description says it routes to its siblings ("Router for all Remotion skills",
    "Entry point and router for every Expo task... before choosing another expo-* skill")."""
    return _ROUTES.search(description) is not None


def family(name: str) -> str:
    """What sibling skills share: their name's first word (``expo-router``, ``expo-overview``)."""
    return name.split("-", 1)[0]


SEMANTIC_MATCH = 0.35
"""With a semantic ranker, the cosine at which a skill is a relevant candidate whatever its words."""

RRF_K = 60
"""Reciprocal rank fusion's constant (Cormack, Clarke and Buettcher, 2009): a candidate's fused score is
the sum of 1/(RRF_K + its rank) in each ranking. The paper's value, not one tuned here."""

MEANING_DEPTH = 50
"""With a semantic ranker, how many of the skills nearest by meaning join the candidates."""

CLOSE_SHARE = 0.8
"""When the runner-up scores at least this share of the best on words, the first is not sure (the
model chooses): set on the tuning collections, where the right skill was among the close ones for
most of the messages whose first match was wrong."""


class TermMatch(BaseModel):
    """A word of the message found in what the skill carries."""

    model_config = ConfigDict(frozen=True)

    word: str
    """The message's word."""
    term: str
    """The term it counts as (stemmed; ``excel`` counts as ``xlsx``)."""
    fields: list[str]
    """Where the skill carries it: ``name``, ``description``, ``triggers``, ``headings``."""
    score: float
    """What it added to the skill's score."""


class SkillMatch(BaseModel):
    """One skill that matched a message, with the ranking evidence and the reasons in words."""

    model_config = ConfigDict(frozen=True)

    name: str
    score: float
    """Everything found, added up; the ranking's first key."""
    mentioned: bool
    """The message names the skill (``code-review`` or ``code review``)."""
    phrases: int
    """Multi-word keywords or verbs found as exact phrases."""
    matches: int
    """Distinct triggers found (keywords, verbs and patterns)."""
    terms: list[TermMatch]
    """Words of the message found in the skill's name, description, triggers or headings."""
    priority: int
    last_used: datetime | None
    similarity: float | None = None
    """With a semantic ranker, the cosine of the message's and the skill's vectors."""
    sure: bool = False
    """Certain enough to be used with no one asked: the message names it or has its declared trigger (the
    author's word), or, for the first candidate, words and meaning both rank it first and it carries most of
    what the message says (:data:`MIN_COVERAGE`). When the first is not sure, the candidates are for
    someone able to judge to choose among."""
    reasons: list[str]
    """Why, in words: the mention, each trigger, then each word found that no trigger explains."""


@dataclass(frozen=True, slots=True)
class _Trigger:
    skill: str
    text: str
    words: tuple[str, ...]
    kind: Literal["name", "keyword", "verb"]


@dataclass(slots=True)
class _Tally:
    mentioned: bool = False
    phrases: int = 0
    matches: int = 0
    score: float = 0.0
    reasons: list[str] = field(default_factory=list)
    explained: set[str] = field(default_factory=set)
    """The message's words a reason already names."""


class SkillIndex:
    """Every skill's triggers and text, indexed for ``match``."""

    def __init__(self, skills: Iterable[SkillFile], *, semantic: Vectors | None = None) -> None:
        """``semantic``: rank by meaning too (:mod:`adapters.semantic`, the ``semantic`` extra);
        the skills' vectors are made now, those of unchanged skills taken from its cache."""
        self._names: list[str] = []
        self._numbers: dict[str, int] = {}
        self._priority: dict[str, int] = {}
        self._routing: set[str] = set()
        self._by_words: dict[tuple[str, ...], list[_Trigger]] = defaultdict(list)
        self._longest = 0
        # Skills by pattern text: a pattern many skills share is searched once a message.
        self._patterns: dict[str, tuple[Pattern, list[str]]] = {}
        documents = []
        for skill in skills:
            self._add(skill)
            documents.append(_document(skill))
        self._lexical = LexicalIndex(documents)
        self._semantic = semantic
        self._vectors: Any = None
        if semantic is not None:
            vectors = semantic.vectors([_meaning(document) for document in documents])
            # Single precision here (the cache keeps half): a message is compared with every row, and a
            # conversion per message costs more than the product (10,000 skills: 16 ms against 4).
            self._vectors = None if vectors is None else vectors.astype("float32")
            if self._vectors is None:
                self._semantic = None

    def __len__(self) -> int:
        return len(self._names)

    def _add(self, skill: SkillFile) -> None:
        manifest = skill.manifest
        self._numbers[skill.name] = len(self._names)
        self._names.append(skill.name)
        self._priority[skill.name] = manifest.metadata.priority
        if "-" in skill.name and routes(manifest.description):
            self._routing.add(skill.name)
        triggers = []
        name = words(skill.name)
        if len(name) > 1:
            triggers.append(_Trigger(skill.name, skill.name, name, "name"))
        seen: set[tuple[str, ...]] = set()
        for kind, texts in (("keyword", manifest.keywords), ("verb", manifest.triggers.verbs)):
            for text in texts:
                found = words(text)
                # The same trigger listed twice (or as keyword and verb) counts once.
                if found and found not in seen:
                    seen.add(found)
                    triggers.append(_Trigger(skill.name, text, found, kind))
        for trigger in triggers:
            self._by_words[trigger.words].append(trigger)
            self._longest = max(self._longest, len(trigger.words))
        for pattern in manifest.triggers.patterns:
            named = self._patterns.setdefault(pattern.pattern, (pattern, []))[1]
            if skill.name not in named:  # the same pattern listed twice counts once
                named.append(skill.name)

    def match(
        self,
        message: str,
        *,
        limit: int = DEFAULT_LIMIT,
        recent_use: Mapping[str, datetime] | None = None,
    ) -> list[SkillMatch]:
        """The ``limit`` best candidates for ``message`` (see the module's doc), each marked ``sure`` or not.

        Candidates come from words and meaning together: the skills with lexical evidence (BM25F and the
        declared triggers) and, with a semantic ranker, the :data:`MEANING_DEPTH` nearest by meaning, fused
        by reciprocal rank (:data:`RRF_K`), which needs no threshold set on one data set. A skill the
        message names comes first. A candidate is offered only with some evidence that it is relevant
        (``relevant`` below); ties go to ``metadata.priority``, then most recent use, then name."""
        recent_use = recent_use or {}
        message = message[:MAX_MATCH_CHARS]
        tallies = self._triggers(message)
        query = self._lexical.query_terms(message)
        lexical = self._lexical.scores(query)
        scores = {self._names[number]: score for number, score in lexical.items()}
        for name, tally in tallies.items():
            scores[name] = scores.get(name, 0.0) + tally.score
        similarity = self._similarity(message, scores)
        evidence: dict[str, list[Evidence]] = {}
        said = self._weights(message)

        def relevant(name: str) -> bool:
            if name in tallies or similarity.get(name, 0.0) >= SEMANTIC_MATCH:
                return True
            if scores.get(name, 0.0) < THRESHOLD:
                return False
            evidence[name] = self._lexical.evidence(self._numbers[name], query)
            return len(evidence[name]) >= MIN_TERMS

        by_words = sorted(scores, key=lambda name: (-scores[name], name))
        by_meaning = sorted(similarity, key=lambda name: (-similarity[name], name))[:MEANING_DEPTH]
        fused: dict[str, float] = defaultdict(float)
        for ranking, value in ((by_words, scores), (by_meaning, similarity)):
            for name, place in _places(ranking, value).items():
                fused[name] += 1 / (RRF_K + place)
        candidates = [name for name in fused if relevant(name)]
        below = self._routed(candidates, scores, tallies)

        def rank(name: str) -> tuple[bool, float, bool, int, float, str]:
            used = recent_use.get(name)
            named = name in tallies and tallies[name].mentioned
            # Smallest first: the message names it, then the fused rank (a routing skill's no higher than its
            # sibling's, after it), higher priority, more recent, then by name.
            score = min(fused[name], fused[below[name]]) if name in below else fused[name]
            return (not named, -score, name in below, -self._priority[name],
                    -(used.timestamp() if used else float("-inf")), name)

        best = heapq.nsmallest(limit, candidates, key=rank)
        found = [self._explain(name, scores.get(name, 0.0), tallies.get(name, _Tally()),
                               evidence.get(name) or self._lexical.evidence(self._numbers[name], query),
                               recent_use.get(name), below.get(name), similarity.get(name))
                 for name in best]
        # A skill the message names, or whose declared trigger it has, is sure (the author's word); the first
        # may also be on its evidence.
        found = [m.model_copy(update={"sure": True}) if m.mentioned or m.matches > 0 else m for m in found]
        if found and not found[0].sure:
            first = found[0]
            runner_up = scores[by_words[1]] if len(by_words) > 1 else 0.0
            # Clear: first on words, no other within CLOSE_SHARE of it there, and first by meaning too.
            clear = by_words[:1] == [first.name] and runner_up < CLOSE_SHARE * scores[first.name] \
                and (not similarity or by_meaning[:1] == [first.name])
            covered = sum(said.get(t.term, 0.0) for t in first.terms) >= MIN_COVERAGE * sum(said.values())
            sure = clear and covered and first.score >= THRESHOLD and len(first.terms) >= MIN_TERMS
            found[0] = first.model_copy(update={"sure": sure})
        return found

    def _similarity(self, message: str, scores: Mapping[str, float]) -> dict[str, float]:
        """With a semantic ranker, the cosine of the message's vector with the :data:`MEANING_DEPTH` skills
        nearest it, searched over every skill, and with each skill that has lexical evidence (``scores``)."""
        if self._semantic is None or not self._names:
            return {}
        [vector] = self._semantic.encoder.encode([message])
        cosines = self._vectors @ vector.astype("float32")
        depth = min(MEANING_DEPTH, len(self._names))
        nearest = (-cosines).argpartition(depth - 1)[:depth].tolist()
        numbers = {*nearest, *(self._numbers[name] for name in scores)}
        return {self._names[number]: float(cosines[number]) for number in numbers}

    def _routed(self, candidates: list[str], scores: Mapping[str, float],
                tallies: Mapping[str, _Tally]) -> dict[str, str]:
        """Each routing skill among the candidates that ranks below a sibling, with that sibling.
        Not when the message names the routing skill: then it is the user's choice."""
        below: dict[str, str] = {}
        for name in candidates:
            if name not in self._routing or (name in tallies and tallies[name].mentioned):
                continue
            siblings = [other for other in candidates if other != name and family(other) == family(name)
                        and other not in self._routing
                        and scores.get(other, 0.0) >= ROUTING_SHARE * scores.get(name, 0.0)]
            if siblings:
                below[name] = max(siblings, key=lambda other: (scores.get(other, 0.0), other))
        return below

    def _weights(self, message: str) -> dict[str, float]:
        """Each distinct term of the message with its rarity in the catalog (1 when no skill has it)."""
        weights: dict[str, float] = {}
        for found in terms(message):
            if found.term not in weights:
                idf = self._lexical.idf(found.term)
                weights[found.term] = 1.0 if idf is None else idf
        return weights

    def scores(self, message: str) -> dict[str, float]:
        """The score of every skill with any evidence for ``message``, matched or not: what ranks
        the skills listed when a prompt has room for only some."""
        message = message[:MAX_MATCH_CHARS]
        lexical = self._lexical.scores(self._lexical.query_terms(message))
        scores = {self._names[number]: score for number, score in lexical.items()}
        for name, tally in self._triggers(message).items():
            scores[name] = scores.get(name, 0.0) + tally.score
        return scores

    def _triggers(self, message: str) -> dict[str, _Tally]:
        tallies: dict[str, _Tally] = defaultdict(_Tally)
        message_words = words(message)
        found: set[tuple[str, ...]] = set()
        for start in range(len(message_words)):
            for end in range(start + 1, min(start + self._longest, len(message_words)) + 1):
                sequence = message_words[start:end]
                # A trigger found twice in the message still counts once.
                if sequence not in found and sequence in self._by_words:
                    found.add(sequence)
                    for trigger in self._by_words[sequence]:
                        _record(tallies[trigger.skill], trigger)
        if self._patterns:
            text = match_text(message)
            for source, (pattern, skill_names) in self._patterns.items():
                if pattern.search(text):
                    for name in skill_names:
                        tally = tallies[name]
                        tally.matches += 1
                        tally.score += TRIGGER_SCORE
                        tally.reasons.append(f"pattern '{source}'")
        return tallies

    def _explain(self, name: str, score: float, tally: _Tally, evidence: list[Evidence],
                 last_used: datetime | None, sibling: str | None = None,
                 similarity: float | None = None) -> SkillMatch:
        reasons = list(tally.reasons)
        for found in evidence:
            if found.word not in tally.explained:
                shown = f"{found.word}' as '{found.term}" if is_folded(found.word) else found.word
                named = ", a product name" if found.named else ""
                reasons.append(f"'{shown}' in {', '.join(found.fields)} (+{found.score:.2f}{named})")
        if similarity is not None:
            reasons.append(f"meaning: cosine {similarity:.2f} with its name and description")
        if sibling is not None:
            reasons.append(f"routes to its sibling skills: ranked below '{sibling}', which fits too")
        return SkillMatch(
            name=name,
            score=round(score, 4),
            mentioned=tally.mentioned,
            phrases=tally.phrases,
            matches=tally.matches,
            terms=[TermMatch(word=e.word, term=e.term, fields=list(e.fields), score=round(e.score, 4))
                   for e in evidence],
            priority=self._priority[name],
            last_used=last_used,
            similarity=None if similarity is None else round(similarity, 4),
            reasons=reasons,
        )


def unsure(matches: list[SkillMatch]) -> list[SkillMatch]:
    """The candidates someone able to judge should choose among (a model, "none" allowed), or ``[]`` when
    the first is sure (:attr:`SkillMatch.sure`) or there is none."""
    return [] if not matches or matches[0].sure else matches


def _places(ranking: list[str], value: Mapping[str, float]) -> dict[str, int]:
    """Each name's place in ``ranking`` (best first), the names of equal value sharing the better place,
    so a tie in one ranking stays a tie after the fusion."""
    places: dict[str, int] = {}
    for index, name in enumerate(ranking, start=1):
        previous = ranking[index - 2] if index > 1 else None
        places[name] = places[previous] if previous is not None and value[previous] == value[name] else index
    return places


def _document(skill: SkillFile) -> dict[str, str]:
    manifest = skill.manifest
    return {
        "name": skill.name,
        "description": manifest.description,
        "triggers": "\n".join([*manifest.keywords, *manifest.triggers.verbs]),
        "headings": "\n".join(skill.headings),
    }


def _meaning(document: dict[str, str]) -> str:
    """What a skill's vector is made from: its name in words and its description."""
    return f"{document['name'].replace('-', ' ')}: {document['description']}"


def _record(tally: _Tally, trigger: _Trigger) -> None:
    tally.explained.update(trigger.words)
    if trigger.kind == "name":
        tally.mentioned = True
        tally.score += MENTION_SCORE
        tally.reasons.insert(0, f"mentions the skill by name '{trigger.text}'")
        return
    tally.matches += 1
    if len(trigger.words) > 1:
        tally.phrases += 1
        tally.score += PHRASE_WORD_SCORE * len(trigger.words)
        tally.reasons.append(f"{trigger.kind} phrase '{trigger.text}'")
    else:
        tally.score += TRIGGER_SCORE
        tally.reasons.append(f"{trigger.kind} '{trigger.text}'")


__all__ = [
    "CLOSE_SHARE",
    "DEFAULT_LIMIT",
    "MENTION_SCORE",
    "MIN_TERMS",
    "PHRASE_WORD_SCORE",
    "THRESHOLD",
    "TRIGGER_SCORE",
    "SkillIndex",
    "SkillMatch",
    "TermMatch",
    "Term",
    "unsure",
    "words",
]
