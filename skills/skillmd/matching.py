"""Matching a user's message against every skill's triggers, ranked.

Built for many skills: keywords, verbs and names go into a dict keyed by their words,
and a message is cut into its word sequences (up to the longest trigger's length),
each looked up once, so the cost grows with the message, not with the number of
skills. Patterns were compiled once when the skill loaded (with RE2, in linear time: see
:mod:`skills.skillmd.patterns`); they are the only part tried one by one, since a regex has no
words to index it by, and a pattern several skills share is tried once.

A message is matched on its first :data:`~skills.skillmd.patterns.MAX_MATCH_CHARS` characters
(keywords and patterns alike), so its cost is bounded however long it is.
"""

from __future__ import annotations

import heapq
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict

from skills.skillmd.manifest import SkillFile
from skills.skillmd.patterns import MAX_MATCH_CHARS, Pattern, match_text

DEFAULT_LIMIT = 3

_WORD = re.compile(r"\w+")


def words(text: str) -> tuple[str, ...]:
    """The text's words, case-folded; punctuation and spacing between them do not matter."""
    return tuple(_WORD.findall(text.casefold()))


class SkillMatch(BaseModel):
    """One skill that matched a message, with the ranking evidence and the reasons in words."""

    model_config = ConfigDict(frozen=True, use_attribute_docstrings=True)

    name: str
    mentioned: bool
    """The message names the skill (``code-review`` or ``code review``)."""
    phrases: int
    """Multi-word keywords or verbs found as exact phrases."""
    matches: int
    """Distinct triggers found (keywords, verbs and patterns)."""
    priority: int
    last_used: datetime | None
    reasons: list[str]


@dataclass(frozen=True, slots=True)
class _Term:
    skill: str
    text: str
    words: tuple[str, ...]
    kind: Literal["name", "keyword", "verb"]


@dataclass(slots=True)
class _Tally:
    mentioned: bool = False
    phrases: int = 0
    matches: int = 0
    reasons: list[str] = field(default_factory=list)


class SkillIndex:
    """Every skill's triggers, indexed for ``match``."""

    def __init__(self, skills: Iterable[SkillFile]) -> None:
        self._priority: dict[str, int] = {}
        self._by_words: dict[tuple[str, ...], list[_Term]] = defaultdict(list)
        self._longest = 0
        # Skills by pattern text: a pattern many skills share is searched once a message.
        self._patterns: dict[str, tuple[Pattern, list[str]]] = {}
        for skill in skills:
            self._add(skill)

    def _add(self, skill: SkillFile) -> None:
        manifest = skill.manifest
        self._priority[skill.name] = manifest.metadata.priority
        terms = [_Term(skill.name, skill.name, words(skill.name), "name")]
        seen: set[tuple[str, ...]] = set()
        for kind, texts in (("keyword", manifest.keywords), ("verb", manifest.triggers.verbs)):
            for text in texts:
                found = words(text)
                # The same trigger listed twice (or as keyword and verb) counts once.
                if found and found not in seen:
                    seen.add(found)
                    terms.append(_Term(skill.name, text, found, kind))
        for term in terms:
            if term.words:
                self._by_words[term.words].append(term)
                self._longest = max(self._longest, len(term.words))
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
        """The ``limit`` best-matching skills: named in the message first, then by exact
        phrases, number of triggers found, ``metadata.priority``, and most recent use."""
        recent_use = recent_use or {}
        tallies: dict[str, _Tally] = defaultdict(_Tally)
        message = message[:MAX_MATCH_CHARS]
        message_words = words(message)
        found: set[tuple[str, ...]] = set()
        for start in range(len(message_words)):
            for end in range(start + 1, min(start + self._longest, len(message_words)) + 1):
                sequence = message_words[start:end]
                # A trigger found twice in the message still counts once.
                if sequence not in found and sequence in self._by_words:
                    found.add(sequence)
                    for term in self._by_words[sequence]:
                        _record(tallies[term.skill], term)
        text = match_text(message)
        for source, (pattern, skill_names) in self._patterns.items():
            if pattern.search(text):
                for name in skill_names:
                    tally = tallies[name]
                    tally.matches += 1
                    tally.reasons.append(f"pattern '{source}'")
        best = heapq.nsmallest(limit, tallies.items(), key=lambda item: self._rank(*item, recent_use))
        return [
            SkillMatch(
                name=name,
                mentioned=tally.mentioned,
                phrases=tally.phrases,
                matches=tally.matches,
                priority=self._priority[name],
                last_used=recent_use.get(name),
                reasons=tally.reasons,
            )
            for name, tally in best
        ]

    def _rank(
        self, name: str, tally: _Tally, recent_use: Mapping[str, datetime]
    ) -> tuple[bool, int, int, int, float, str]:
        used = recent_use.get(name)
        last_used = used.timestamp() if used else float("-inf")
        # Smallest first: mentioned, more phrases, more matches, higher priority, more recent, then by name.
        return (not tally.mentioned, -tally.phrases, -tally.matches, -self._priority[name], -last_used, name)


def _record(tally: _Tally, term: _Term) -> None:
    if term.kind == "name":
        tally.mentioned = True
        tally.reasons.insert(0, f"mentions the skill by name '{term.text}'")
        return
    tally.matches += 1
    if len(term.words) > 1:
        tally.phrases += 1
        tally.reasons.append(f"{term.kind} phrase '{term.text}'")
    else:
        tally.reasons.append(f"{term.kind} '{term.text}'")
