"""Lexical ranking of skills for a message: BM25F over what skills carry (name, description,
declared triggers, the body's headings).

BM25F (Robertson, Zaragoza and Taylor, 2004) is BM25 with a document made of weighted fields: a
term's frequency in each field is normalised by that field's length and weighted, the sum is
saturated once, and scaled by the term's rarity across the catalog. A word in a skill's name
counts more than one in its description, a word said five times counts little more than one said
twice, and a word most skills use (``data``, ``file``) counts less than one few do (``pivot``).

Scores are scaled so that a term found in one skill only weighs at most 1 per occurrence
weight: the inverse document frequency is divided by the largest one the catalog can have. A
score is then about "how many distinctive words of the message the skill carries", which is what
a threshold can be set on whatever the size of the catalog.

The index is inverted: each term keeps the skills that carry it and their precomputed scores, so
matching a message costs the postings of its terms, not a pass over every skill. Messages are
read up to :data:`~skills.skillmd.patterns.MAX_MATCH_CHARS`; and only their :data:`MAX_QUERY_TERMS`
rarest terms are looked up, so no message can make the cost grow with the catalog's common words.
"""

from __future__ import annotations

import math
from array import array
from bisect import bisect_left
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from skills.skillmd.terms import Term, terms, written_as_names

Field = Literal["name", "description", "triggers", "headings"]

FIELDS: tuple[Field, ...] = ("name", "description", "triggers", "headings")

WEIGHTS: dict[Field, float] = {"name": 3.0, "description": 1.0, "triggers": 2.0, "headings": 0.5}
"""How much one occurrence counts in each field, against one in the description."""

LENGTH_NORMALISATION: dict[Field, float] = {"name": 0.3, "description": 0.75, "triggers": 0.5, "headings": 0.75}
"""BM25's ``b`` per field: how much a longer field dilutes each of its words (0: not at all)."""

K1 = 1.2
"""BM25's saturation: how fast more occurrences stop adding."""

NAME_WEIGHT = 1.5
"""What a product or brand name counts, against an ordinary word of the same rarity: a user who
says "PowerPoint", "Toggl" or "IBM" chose the skill whose description names it, where a skill
that shares more ordinary words would otherwise win."""

NAME_SHARE = 0.6
"""The share of a term's telling occurrences in the catalog's descriptions that must be written as
a name (:func:`~skills.skillmd.terms.written_as_names`) for it to count as one: ``Linear`` the
tracker is outnumbered by linear models, so ``linear`` stays an ordinary word."""

MAX_QUERY_TERMS = 48
"""Distinct terms of a message looked up, the rarest first: a long message full of common words
would otherwise cost a pass over most of the catalog."""


@dataclass(frozen=True, slots=True)
class Evidence:
    """One term of a message found in a skill: which word, which fields, and what it added."""

    word: str
    """The message's word (the first one, when several words share the term)."""
    term: str
    fields: tuple[Field, ...]
    score: float
    named: bool = False
    """The term is a product or brand name in the catalog (weighed by :data:`NAME_WEIGHT`)."""


@dataclass(slots=True)
class _Postings:
    docs: array  # skill numbers, ascending
    scores: array  # the term's score in each of those skills
    fields: bytearray  # a bit per field the term is in


class LexicalIndex:
    """BM25F postings over a sequence of documents, each a mapping of field to text."""

    def __init__(self, documents: Iterable[dict[Field, str]]) -> None:
        analysed: list[dict[Field, Counter[str]]] = []
        lengths: dict[Field, list[int]] = {field: [] for field in FIELDS}
        frequency: Counter[str] = Counter()
        telling: Counter[str] = Counter()
        as_name: Counter[str] = Counter()
        for document in documents:
            for term, named in written_as_names(document.get("description", "")):
                telling[term] += 1
                as_name[term] += named
            fields: dict[Field, Counter[str]] = {}
            for field in FIELDS:
                counted = Counter(term.term for term in terms(document.get(field, "")))
                fields[field] = counted
                lengths[field].append(sum(counted.values()))
            analysed.append(fields)
            frequency.update({t for counted in fields.values() for t in counted})
        self.size = len(analysed)
        average = {field: (sum(n) / len(n) if n and sum(n) else 1.0) for field, n in lengths.items()}
        # The largest idf the catalog can have (a term in one skill): scores are in units of it.
        top_idf = _idf(1, self.size) if self.size else 1.0
        self._idf = {term: _idf(count, self.size) / top_idf for term, count in frequency.items()}
        self.names = frozenset(term for term, count in as_name.items() if count >= NAME_SHARE * telling[term])
        """Terms the catalog writes as product or brand names."""
        building: dict[str, tuple[array, array, bytearray]] = defaultdict(
            lambda: (array("I"), array("d"), bytearray()))
        for number, fields in enumerate(analysed):
            weighted: dict[str, float] = defaultdict(float)
            present: dict[str, int] = defaultdict(int)
            for bit, field in enumerate(FIELDS):
                counted = fields[field]
                if not counted:
                    continue
                b = LENGTH_NORMALISATION[field]
                norm = 1 - b + b * lengths[field][number] / average[field]
                for term, count in counted.items():
                    weighted[term] += WEIGHTS[field] * count / norm
                    present[term] |= 1 << bit
            for term, tf in weighted.items():
                docs, scores, where = building[term]
                docs.append(number)
                weight = NAME_WEIGHT if term in self.names else 1.0
                scores.append(weight * self._idf[term] * tf * (K1 + 1) / (tf + K1))
                where.append(present[term])
        self._postings = {term: _Postings(*parts) for term, parts in building.items()}

    def query_terms(self, message: str) -> list[Term]:
        """The message's terms that some skill carries, once each, at most :data:`MAX_QUERY_TERMS`
        of them (the rarest in the catalog, so the most telling)."""
        seen: dict[str, Term] = {}
        for found in terms(message):
            if found.term in self._postings and found.term not in seen:
                seen[found.term] = found
        if len(seen) > MAX_QUERY_TERMS:
            rarest = sorted(seen, key=lambda t: -self._idf[t])[:MAX_QUERY_TERMS]
            return [seen[t] for t in rarest]
        return list(seen.values())

    def scores(self, query: Sequence[Term]) -> dict[int, float]:
        """Each document that carries a term of the query, with its score (the sum over terms)."""
        total: dict[int, float] = defaultdict(float)
        for found in query:
            postings = self._postings[found.term]
            for number, score in zip(postings.docs, postings.scores, strict=True):
                total[number] += score
        return total

    def idf(self, term: str) -> float | None:
        """The term's rarity in the catalog, 1 for the rarest; None for a term no skill carries."""
        return self._idf.get(term)

    def evidence(self, number: int, query: Sequence[Term]) -> list[Evidence]:
        """What each term of the query found in document ``number``, largest first."""
        found: list[Evidence] = []
        for term in query:
            postings = self._postings[term.term]
            at = bisect_left(postings.docs, number)
            if at < len(postings.docs) and postings.docs[at] == number:
                bits = postings.fields[at]
                fields = tuple(field for bit, field in enumerate(FIELDS) if bits & (1 << bit))
                found.append(Evidence(term.word, term.term, fields, postings.scores[at], term.term in self.names))
        found.sort(key=lambda e: -e.score)
        return found


def _idf(count: int, size: int) -> float:
    """BM25's inverse document frequency, in the form that never goes negative (Lucene's)."""
    return math.log(1 + (size - count + 0.5) / (count + 0.5))
