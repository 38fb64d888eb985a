"""Words to terms, the same way for skills and for messages: what lexical matching compares.

A text is cut into words (runs of letters and digits, case-folded, so ``scikit-learn`` is two
words and ``.pptx`` is ``pptx``); the usual English stop words and the filler of chat requests
("please", "could you") are dropped; the rest are stemmed with the Snowball English stemmer, so
``presentations`` and ``presenting`` are one term. A few stems are then folded together where
stemming leaves apart what users and skill authors mean as one: agent nouns (``builder`` and
``build``, since skill names are often ``something-builder``) and the names of office formats
and the applications that write them (a user asks for "a powerpoint", a skill says ``.pptx``).

Only the first :data:`~skills.skillmd.patterns.MAX_MATCH_CHARS` characters of a message are read
(the caller cuts it); the word pattern has no nested repetition, so it runs in linear time.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any, NamedTuple

_WORD = re.compile(r"\w+")

# Lucene's and Snowball's English stop lists, joined, with the contractions' halves; then what chat
# requests and skill descriptions say around their subject without naming one ("please", "use when
# the user wants", "e.g.").
STOP_WORDS = frozenset(
    """
    a about above after again against all am an and any are as at be because been before being below
    between both but by can cannot could did do does doing down during each few for from further had has
    have having he her here hers herself him himself his how i if in into is it its itself just me more
    most my myself no nor not now of off on once only or other ought our ours ourselves out over own same
    she should so some such than that the their theirs them themselves then there these they this those
    through to too under until up very was we were what when where which while who whom why will with
    would you your yours yourself yourselves s t d ll m re ve don doesn didn isn aren wasn weren won
    wouldn shouldn couldn can't let lets also etc e g eg ie i.e via per into onto
    please pls thanks thank hi hey hello ok okay yes yeah sure maybe might may must shall get got
    want wants wanted need needs needed like would help helps use uses used using user users
    whenever anything something everything someone one ones thing things way
    two three four five six seven eight nine ten
    """.split()
)
"""Words that say nothing of what a skill is for; ``words`` keeps them, ``terms`` drops them."""

CANONICAL: dict[str, str] = {
    # Agent nouns the stemmer keeps apart from their verbs, keyed by their stems.
    "builder": "build",
    "creator": "creat",
    "writer": "write",
    "reader": "read",
    "parser": "pars",
    "planner": "plan",
    "tester": "test",
    "editor": "edit",
    "viewer": "view",
    "formatt": "format",
    "debugg": "debug",
    # Spellings of one stem the stemmer leaves apart.
    "analysi": "analys",
    "analyz": "analys",
    # Office formats and the applications that write them.
    "powerpoint": "pptx",
    "ppt": "pptx",
    "excel": "xlsx",
    "xls": "xlsx",
    "xlsm": "xlsx",
}
"""Stems folded into another stem after stemming (a stem not listed is itself)."""


class Term(NamedTuple):
    """One word of a text and the term it counts as."""

    word: str
    """As written, case-folded."""
    term: str
    """Stemmed, and folded by :data:`CANONICAL`."""


def words(text: str) -> tuple[str, ...]:
    """The text's words, case-folded; punctuation and spacing between them do not matter."""
    return tuple(_WORD.findall(text.casefold()))


@lru_cache(maxsize=1)
def _stemmer() -> Any:
    """English's Snowball stemmer, made at the first word stemmed: a worker that matches no skill's words
    does not load PyStemmer (docs/performance.md, "Worker RSS")."""
    import Stemmer

    return Stemmer.Stemmer("english")


@lru_cache(maxsize=1 << 16)
def term_of(word: str) -> str | None:
    """The term a case-folded word counts as, or None for a stop word (cached: skills and messages
    share most of their words, and stemming is the costly step)."""
    if word in STOP_WORDS or (len(word) == 1 and not word.isdigit()):
        return None
    stem = _stemmer().stemWord(word)
    return CANONICAL.get(stem, stem)


_WRITTEN = re.compile(r"\.?\w+")
_SENTENCE_START = frozenset(".!?:;()[]\"'*#-\u2014\u2013\u2022\n")


def written_as_names(text: str) -> list[tuple[str, bool]]:
    """Each term of ``text`` with whether it is written there as a name: capitalised inside a
    sentence (``in PowerPoint``, ``on IBM hardware``), with a capital inside it (``QuickBooks``), or
    a file extension (``.pptx``). A word that opens a sentence or a list item says nothing either way
    and is left out; so are stop words."""
    found = []
    for match in _WRITTEN.finditer(text):
        token = match.group()
        word = token.lstrip(".")
        term = term_of(word.casefold())
        if term is None or word.isdigit():
            continue
        inner_capital = any(c.isupper() for c in word[1:])
        before = text[:match.start()].rstrip()[-1:]
        opens = not before or before in _SENTENCE_START
        if token.startswith(".") or inner_capital or (word[0].isupper() and not opens):
            found.append((term, True))
        elif not opens:
            found.append((term, False))
    return found


def is_folded(word: str) -> bool:
    """Whether :data:`CANONICAL` made the word's term another word's (``excel`` counts as ``xlsx``):
    worth saying when a match is explained; plain stemming (``every`` to ``everi``) is not."""
    return _stemmer().stemWord(word) in CANONICAL


def terms(text: str) -> list[Term]:
    """The text's words that are not stop words, each with its term, in order (repeats kept)."""
    found = []
    for word in words(text):
        term = term_of(word)
        if term is not None:
            found.append(Term(word, term))
    return found


__all__ = ["CANONICAL", "STOP_WORDS", "Term", "is_folded", "term_of", "terms", "words", "written_as_names"]
