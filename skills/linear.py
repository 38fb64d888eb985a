"""Regular expressions for text from outside: RE2, which matches in time linear in the text.

Python's ``re`` backtracks. A pattern with two ways to read the same characters tries them all before it
fails: the phrase reader's weekday pattern took 3.4 CPU seconds on "remind me every " and ``tuesand`` 22
times (171 characters), twice as long for each 7 more, on the worker's event loop. Text from a person, a
model, a tool's result, a SKILL.md or a payload is matched here instead: RE2 (``google-re2``) has no
backtracking, so no text makes a pattern slow, and it refuses what it cannot run that way (backreferences,
lookaround) when the pattern is compiled.

The patterns are written as for ``re`` and mean what they meant there, with these exceptions:

- ``\\d``, ``\\s`` and ``\\w`` (and ``\\D``, ``\\S``, ``\\W``) are Python's, Unicode-wide: they are written out
  as the Unicode classes Python's are (RE2's own are ASCII). Inside a class, ``\\S`` and ``\\W`` have no
  such spelling: a pattern that needs one writes the class out.
- ``\\b`` and ``\\B`` are RE2's, ASCII: next to a letter or digit outside ASCII they differ from ``re``'s
  ("caféat" has a boundary before "at" here, "\u0663pm" none before the digit). The engine's patterns put
  ``\\b`` next to English words; on text with no such letter or digit they read as ``re`` read.
- ``$`` is the end of the text (``re``'s ``$`` also matched before a last newline: ``^[a-z]+$`` took
  "name\\n"); ``\\Z`` is the end of the text, as in ``re`` (RE2 spells it ``\\z``).
- A lookahead at the end of a pattern's branch, ``X(?![\\w:])``, is written with the character it looks at
  consumed and an empty group where the match ends: ``X(?P<ahead>)(?:[^\\w:]|$)``, compiled with
  ``ends_at="ahead"``. RE2 picks the same reading of ``X`` that ``re`` did (it prefers as ``re`` prefers),
  and the match ends at the group; a search for the next starts there, as ``re``'s would.
- A text with a lone surrogate (``"\\ud800"``, which JSON can carry) is matched with U+FFFD in its place,
  which no pattern here names: UTF-8, which RE2 reads, has no such character.

RE2's Python binding costs some microseconds a match more than ``re``; a pattern that counts the pieces of
every model request (``skills.llm.tokens``) and the one-class tokenizers (``\\w+``, ``\\s+``) stay on ``re``,
where they are linear as written: tests/test_architecture.py holds the list, and refuses any other ``re``
pattern in the engine.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterator
from functools import lru_cache
from typing import Any

import re2


class Flag(enum.IntFlag):
    """``re``'s flags that the engine's patterns use, by the same names."""

    NOFLAG = 0
    IGNORECASE = 2
    MULTILINE = 8
    DOTALL = 16


IGNORECASE = Flag.IGNORECASE
MULTILINE = Flag.MULTILINE
DOTALL = Flag.DOTALL

error = re2.error

Match = type(re2.compile("").match(""))
"""A match, as ``re.Match`` reads: ``group``, ``groups``, ``groupdict``, ``start``, ``end``, ``span``."""

# Python's classes for str patterns, as RE2 spells them. Python's \s is str.isspace(): the ASCII spaces,
# the information separators 0x1c-0x1f, NEL and Unicode's separators (Z); \d is a decimal digit (Nd); \w
# is str.isalnum() (letters and numbers) or the underscore. tests/skills/test_linear.py compares them
# with re's over every character.
_SPACE = r"\t\n\v\f\r\x{1c}-\x{1f}\x{85}\p{Z}"
_DIGIT = r"\p{Nd}"
_WORD = r"\p{L}\p{N}_"
_OUTSIDE = {"d": _DIGIT, "D": r"\P{Nd}", "s": f"[{_SPACE}]", "S": f"[^{_SPACE}]", "w": f"[{_WORD}]",
            "W": f"[^{_WORD}]", "Z": r"\z"}
_INSIDE = {"d": _DIGIT, "D": r"\P{Nd}", "s": _SPACE, "w": _WORD}

_SURROGATES = dict.fromkeys(range(0xD800, 0xE000), 0xFFFD)


def translate(pattern: str) -> str:
    """``pattern``, written for ``re``, as RE2 reads it with the same meaning (see the module's note)."""
    out: list[str] = []
    inside = False  # in a character class
    i = 0
    while i < len(pattern):
        char = pattern[i]
        if char == "\\" and i + 1 < len(pattern):
            escaped = pattern[i + 1]
            if inside and escaped in "SW":
                raise error(f"\\{escaped} inside a character class has no RE2 spelling: write the class out "
                            f"({pattern!r})")
            if escaped in "uU":
                width = 4 if escaped == "u" else 8
                out.append(f"\\x{{{pattern[i + 2:i + 2 + width]}}}")
                i += 2 + width
                continue
            out.append((_INSIDE if inside else _OUTSIDE).get(escaped, char + escaped))
            i += 2
            continue
        if not inside and char == "[":
            inside = True
            out.append(char)
            i += 1
            for lead in ("^", "]"):  # "[^]...]" and "[]...]": a first "]" is a member, as in re
                if i < len(pattern) and pattern[i] == lead:
                    out.append(lead)
                    i += 1
            continue
        if inside and char == "]":
            inside = False
        out.append(char)
        i += 1
    return "".join(out)


def _options(flags: int) -> re2.Options:
    options = re2.Options()
    options.case_sensitive = not flags & Flag.IGNORECASE
    options.dot_nl = bool(flags & Flag.DOTALL)
    options.log_errors = False  # a refused pattern raises; the C++ library need not print it too
    return options


def _matchable(text: str) -> str:
    """``text`` as RE2 can take it: UTF-8 has no lone surrogate, so one is U+FFFD here (same length)."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.translate(_SURROGATES)
    return text


class Pattern:
    """A compiled pattern: ``re.Pattern``'s methods, matched by RE2."""

    __slots__ = ("_ends_at", "_regex", "flags", "pattern")

    def __init__(self, pattern: str, flags: int, ends_at: str | None) -> None:
        self.pattern = pattern
        """As written, for ``re``."""
        self.flags = Flag(flags)
        translated = translate(pattern)
        if flags & Flag.MULTILINE:
            translated = "(?m)" + translated
        self._regex = re2.compile(translated, _options(flags))
        if ends_at is not None and ends_at not in self._regex.groupindex:
            raise error(f"ends_at names no group of {pattern!r}: {ends_at}")
        self._ends_at = ends_at

    @property
    def groups(self) -> int:
        return int(self._regex.groups)

    @property
    def groupindex(self) -> dict[str, int]:
        return dict(self._regex.groupindex)

    def search(self, text: str, pos: int = 0) -> Any:
        found = self._regex.search(_matchable(text), pos)
        return found if found is None or self._ends_at is None else _Ahead.of(found, self._ends_at)

    def match(self, text: str, pos: int = 0) -> Any:
        found = self._regex.match(_matchable(text), pos)
        return found if found is None or self._ends_at is None else _Ahead.of(found, self._ends_at)

    def fullmatch(self, text: str) -> Any:
        if self._ends_at is not None:
            raise error("a pattern that ends at a group looks past its match: fullmatch means nothing for it")
        return self._regex.fullmatch(_matchable(text))

    def finditer(self, text: str) -> Iterator[Any]:
        text = _matchable(text)
        if self._ends_at is None:
            return self._regex.finditer(text)
        return self._ahead(text)

    def _ahead(self, text: str) -> Iterator[Any]:
        # Each search starts where the last match ended, before the character it looked at (which may open
        # the next). A search reads the text from its start again: these patterns read short texts.
        pos = 0
        while pos <= len(text):
            found = self.search(text, pos)
            if found is None:
                return
            yield found
            pos = found.end() if found.end() > found.start() else found.end() + 1

    def findall(self, text: str) -> list[Any]:
        if self._ends_at is not None:
            raise error("findall of a pattern that ends at a group: use finditer")
        return self._regex.findall(_matchable(text))

    def sub(self, repl: str | Callable[[Any], str], text: str, count: int = 0) -> str:
        if self._ends_at is not None:
            raise error("sub of a pattern that ends at a group: use finditer")
        if isinstance(repl, str) and "\\" not in repl:
            # A plain replacement is put in as it is: the binding reads a template's escapes as Latin-1,
            # which would turn a letter outside ASCII into two.
            plain = repl
            return str(self._regex.sub(lambda _: plain, _matchable(text), count))
        return str(self._regex.sub(repl, _matchable(text), count))

    def split(self, text: str, maxsplit: int = 0) -> list[Any]:
        if self._ends_at is not None:
            raise error("split of a pattern that ends at a group: use finditer")
        return list(self._regex.split(_matchable(text), maxsplit))

    def __repr__(self) -> str:
        return f"linear.compile({self.pattern!r}{', ' + str(self.flags) if self.flags else ''})"


class _Ahead:
    """A match of a pattern that looked past its end: it ends where the ``ends_at`` group stands."""

    __slots__ = ("_found", "_end")

    def __init__(self, found: Any, end: int) -> None:
        self._found = found
        self._end = end

    @classmethod
    def of(cls, found: Any, group: str) -> Any:
        end = found.start(found.re.groupindex[group])
        return found if end < 0 else cls(found, end)

    def group(self, *groups: int | str) -> Any:
        if not groups or groups == (0,):
            return self._found.string[self._found.start():self._end]
        if len(groups) == 1:
            return self[groups[0]]
        return tuple(self[group] for group in groups)

    def __getitem__(self, group: int | str) -> Any:
        return self.group() if group == 0 else self._found[group]

    def start(self, group: int | str = 0) -> int:
        return int(self._found.start(self._number(group)))

    def end(self, group: int | str = 0) -> int:
        return self._end if group == 0 else int(self._found.end(self._number(group)))

    def span(self, group: int | str = 0) -> tuple[int, int]:
        return (self.start(), self._end) if group == 0 else self._found.span(self._number(group))

    def _number(self, group: int | str) -> int:
        return self._found.re.groupindex[group] if isinstance(group, str) else group

    def __getattr__(self, name: str) -> Any:  # groups, groupdict, string, re...
        return getattr(self._found, name)


@lru_cache(maxsize=1024)
def compile(pattern: str, flags: int = 0, *, ends_at: str | None = None) -> Pattern:  # noqa: A001 (re's name)
    """``pattern`` (written for ``re``) compiled by RE2, once per pattern and flags; :data:`error` when RE2
    cannot run it in linear time (a backreference, a lookaround) or it is not a pattern."""
    return Pattern(pattern, flags, ends_at)


def search(pattern: str, text: str, flags: int = 0) -> Any:
    return compile(pattern, flags).search(text)


def match(pattern: str, text: str, flags: int = 0) -> Any:
    return compile(pattern, flags).match(text)


def fullmatch(pattern: str, text: str, flags: int = 0) -> Any:
    return compile(pattern, flags).fullmatch(text)


def finditer(pattern: str, text: str, flags: int = 0) -> Iterator[Any]:
    return compile(pattern, flags).finditer(text)


def findall(pattern: str, text: str, flags: int = 0) -> list[Any]:
    return compile(pattern, flags).findall(text)


def sub(pattern: str, repl: str | Callable[[Any], str], text: str, count: int = 0, flags: int = 0) -> str:
    return compile(pattern, flags).sub(repl, text, count)


def split(pattern: str, text: str, maxsplit: int = 0, flags: int = 0) -> list[Any]:
    return compile(pattern, flags).split(text, maxsplit)


def escape(text: str) -> str:
    """``text`` as a pattern that matches it literally (every character but a letter, digit or ``_`` escaped)."""
    return str(re2.escape(text))


__all__ = ["DOTALL", "IGNORECASE", "MULTILINE", "Flag", "Match", "Pattern", "compile", "error", "escape",
           "findall", "finditer", "fullmatch", "match", "search", "split", "sub", "translate"]
