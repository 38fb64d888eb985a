"""Trigger patterns: regular expressions compiled with RE2, so no pattern can hang matching.

Python's ``re`` backtracks: ``(\\w+\\s?)+$`` against one ordinary sentence ending in ``!`` runs
for minutes, holding the GIL, and every chat message is matched against every pattern. RE2
(``google-re2``) runs in time linear in the text, and refuses what it cannot run that way
(backreferences, lookaround); the refusal is a validation error naming the pattern.

Three caps keep the cost of one message bounded whatever the skills say: a pattern's length,
its compiled program's size (``\\p{L}{50}`` is short but large), and the length of the text
matched (a longer message is matched on its first :data:`MAX_MATCH_CHARS` characters).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import re2

from skills.spec.limits import describe

MAX_PATTERN_CHARS = 1000
"""Characters in one trigger pattern."""

MAX_PATTERN_PROGRAM = 2000
"""Instructions in one pattern's compiled RE2 program (``\\p{L}+`` is about 1,200, ``\\w{200}`` 1,600)."""

PATTERN_MEMORY = 1 << 20
"""Bytes one compiled pattern may use, its lazily built DFA included (RE2's default is 8 MiB)."""

MAX_MATCH_CHARS = 2000
"""Characters of a message that triggers are matched against; the rest is not looked at."""

SYNTAX_HINT = "RE2 syntax: no backreferences, lookaround, possessive repeats, \\Z (write \\z) or (?x)"
_UNSUPPORTED = ("invalid perl operator", "invalid escape sequence", "bad repetition operator")
"""RE2's reasons for syntax that Python's ``re`` has and RE2 does not: they get the hint."""

class Pattern:
    """A compiled trigger pattern. Equal to another of the same text and copied as itself, as
    ``re.Pattern`` is, so manifests that hold one compare and copy as they did."""

    __slots__ = ("_regex", "pattern")

    def __init__(self, pattern: str, regex: Any) -> None:
        self.pattern = pattern
        self._regex = regex

    def search(self, text: str | bytes) -> Any:
        """The first match in ``text`` (UTF-8 bytes, as :func:`match_text` gives, or a str), or None."""
        return self._regex.search(text)

    @property
    def programsize(self) -> int:
        return int(self._regex.programsize)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Pattern) and other.pattern == self.pattern

    def __hash__(self) -> int:
        return hash(self.pattern)

    def __repr__(self) -> str:
        return f"Pattern({self.pattern!r})"

    def __copy__(self) -> Pattern:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> Pattern:
        return self


class PatternError(ValueError):
    """A pattern that is refused, with the reason in words."""


def _options() -> re2.Options:
    options = re2.Options()
    options.case_sensitive = False  # as the ``re.IGNORECASE`` the patterns were written for
    options.never_capture = True  # only whether it matches counts: groups cost and are never read
    options.max_mem = PATTERN_MEMORY
    options.log_errors = False  # the refusal is reported, not logged to stderr by the C++ library
    return options


_OPTIONS = _options()


@lru_cache(maxsize=1 << 16)
def compile_pattern(text: str) -> Pattern:
    """``text`` compiled, once per distinct text (many skills share patterns, and discovery reloads
    changed files); :class:`PatternError` when it is too long, not RE2 syntax, or too large."""
    if len(text) > MAX_PATTERN_CHARS:
        raise PatternError(f"a pattern is {len(text):,} characters; the limit is {MAX_PATTERN_CHARS:,}")
    try:
        compiled = Pattern(text, re2.compile(text, _OPTIONS))
    except re2.error as exc:
        reason = exc.args[0] if exc.args else "not a valid pattern"
        if isinstance(reason, bytes):
            reason = reason.decode("utf-8", "replace")
        if "too large" in reason:
            raise PatternError(f"pattern '{text}' is too large to compile within {describe(PATTERN_MEMORY)}") from None
        hint = f" ({SYNTAX_HINT})" if reason.startswith(_UNSUPPORTED) else ""
        raise PatternError(f"invalid regular expression '{text}': {reason}{hint}") from None
    if compiled.programsize > MAX_PATTERN_PROGRAM:
        raise PatternError(f"pattern '{text}' compiles to {compiled.programsize:,} instructions; the limit is "
                           f"{MAX_PATTERN_PROGRAM:,} (repeat a smaller piece, or use a shorter class)")
    return compiled


def match_text(message: str) -> bytes:
    """What the patterns see of a message: its first :data:`MAX_MATCH_CHARS` characters, in UTF-8
    (encoded once for every pattern, rather than once a pattern)."""
    return message[:MAX_MATCH_CHARS].encode("utf-8", "surrogatepass")


__all__ = [
    "MAX_MATCH_CHARS",
    "MAX_PATTERN_CHARS",
    "MAX_PATTERN_PROGRAM",
    "PATTERN_MEMORY",
    "Pattern",
    "PatternError",
    "compile_pattern",
    "match_text",
]
