"""Every pattern of the engine, on the worst text it could be given: no text of the chat's cap holds one.

The patterns are found as tests/test_architecture.py finds them, read from the source: each module that calls
``skills.linear`` or ``re`` is imported, and every compiled pattern it holds (module-level, in a list or a
dict) and every constant pattern its functions compile is run. Each is given texts built from its own
words and pieces (a word added to a pattern is in the attack too): its words run together, one letter
short, its literal pieces repeated with no end (``<tool_call>`` unclosed, ``{{`` never closed, ``tuesand``),
brackets nested, whitespace and digit runs, all at ``CAP`` characters with a near-miss at the end.

The proof that no text is slow is the engine (RE2, in linear time; tests/test_architecture.py keeps every
other pattern one class or proven linear). This test is its measurement: a pattern that backtracks takes
seconds to hours on these texts, and fails here within ``PER_PATTERN`` CPU seconds instead (``re`` checks
for the signal as it matches); as they are, the slowest takes some milliseconds.
"""

from __future__ import annotations

import ast
import importlib
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from skills import linear
from tests.cpu import cpu_budget
from tests.test_architecture import ENGINE_ROOMS, MODULES, _room, _tree

CAP = 2_000
"""The chat reads this much of a message (``skills.chat.intent.MESSAGE_CHARS``)."""
PER_PATTERN = 0.5
"""CPU seconds for one pattern on all its texts; about a hundredth of it is spent."""
MATCHING = frozenset({"compile", "search", "match", "fullmatch", "finditer", "findall", "sub", "split"})
FLAGS_AT = {"compile": 1, "search": 2, "match": 2, "fullmatch": 2, "finditer": 2, "findall": 2, "split": 3,
            "sub": 4}
"""Where each function takes its flags, after the pattern (and the text, the replacement)."""


@dataclass(frozen=True)
class Found:
    where: str
    pattern: Any
    """A compiled pattern: ``skills.linear``'s or ``re``'s."""


def _compiled(value: Any) -> Iterator[Any]:
    if isinstance(value, linear.Pattern | re.Pattern):
        yield value
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _compiled(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _compiled(item)


def _calls(tree: ast.AST) -> Iterator[tuple[ast.Call, str, str]]:
    """Calls ``linear.f(...)`` and ``re.f(...)`` of a matching function: (call, engine, function)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and isinstance(node.func.value, ast.Name) and node.func.value.id in ("linear", "re") \
                and node.func.attr in MATCHING and node.args:
            yield node, node.func.value.id, node.func.attr


MAY_CALL = re.compile(rf"\b(?:linear|re)\s*\.\s*(?:{'|'.join(sorted(MATCHING))})\b")
"""Text that every call :func:`_calls` finds contains: a module without it is not parsed (this runs as each xdist
worker collects, and most modules call neither)."""


def _engine_patterns() -> list[Found]:
    found: dict[tuple[str, int, str], Found] = {}
    for module, path in sorted(MODULES.items()):
        if _room(module) not in ENGINE_ROOMS or not MAY_CALL.search(path.read_text()):
            continue
        tree = _tree(path)
        calls = list(_calls(tree))
        if not calls:
            continue
        namespace = vars(importlib.import_module(module))
        for name, value in namespace.items():
            for pattern in _compiled(value):
                found.setdefault((pattern.pattern, int(pattern.flags), type(pattern).__name__),
                                 Found(f"{module}.{name}", pattern))
        for call, engine, function in calls:
            # A pattern compiled in a function: a constant, or an f-string of the module's own constants.
            try:
                text = eval(compile(ast.Expression(call.args[0]), module, "eval"), namespace)
                at = FLAGS_AT[function]
                flags = call.args[at] if len(call.args) > at else \
                    next((k.value for k in call.keywords if k.arg == "flags"), None)
                flags = eval(compile(ast.Expression(flags), module, "eval"), namespace) if flags else 0
            except (NameError, AttributeError):
                continue  # built of what the function is given (a name to find, escaped): compiled as it runs
            if not isinstance(text, str):
                continue
            pattern = linear.compile(text, flags) if engine == "linear" else re.compile(text, flags)
            found.setdefault((pattern.pattern, int(pattern.flags), type(pattern).__name__),
                             Found(f"{module}:{call.lineno}", pattern))
    return list(found.values())


PATTERNS = _engine_patterns()


def filled(piece: str, size: int = CAP, tail: str = "\x00") -> str:
    """``piece`` repeated to ``size`` characters, the last ones ``tail``: a near-miss at the end of the text."""
    piece = piece or " "
    return (piece * (size // len(piece) + 1))[:size - len(tail)] + tail


def _words(source: str) -> list[str]:
    plain = re.sub(r"\\.", " ", source)  # \b, \s, \d: not letters of a word
    return sorted(set(re.findall(r"[A-Za-z][A-Za-z'-]+", plain)))


def _pieces(source: str) -> list[str]:
    """The pattern's literal runs (``<tool_call>``, ``{{``, ``recall:``), its metacharacters left out."""
    plain = re.sub(r"\\([^A-Za-z0-9])", r"\1", re.sub(r"\\[A-Za-z]", " ", source))
    return sorted({piece for piece in re.split(r"[()|\[\]*+?^$]|\{\d*,?\d*\}", plain) if piece.strip()},
                  key=len, reverse=True)[:8]


SHARED = {
    "the finding": filled("remind me every " + "tuesand" * 300, tail="x"),
    "whitespace of every kind": filled(" \t\n\r\x0b\x0c\u00a0\u2003\u3000"),
    "newlines": filled("\n"),
    "digits": filled("9"),
    "digits and separators": filled("12:5.3,0-"),
    "hex runs": filled("deadbeef-dead-"),
    "brackets nested": "(" * (CAP // 2) + ")" * (CAP // 2 - 1) + "x",
    "braces nested": filled("{{", CAP // 2) + filled("}}", CAP // 2, tail="}"),
    "tags unclosed": filled("<a name=\"x\">"),
    "quotes unclosed": '"' + filled("a 'b \u201cc ", CAP - 1),
    "a word in every script": filled("caf\u00e9 \u0663\u0660 \u5929 \u0431\u044b\u043b "),
}


def hostile(pattern: Any) -> dict[str, str]:
    """The texts ``pattern`` is given: the shared ones, and its own words and pieces."""
    words, pieces = _words(pattern.pattern), _pieces(pattern.pattern)
    own = {
        "its words": filled(" ".join(words) + " "),
        "its words run together": filled("".join(words)),
        "its words one letter short": filled(" ".join(word[:-1] for word in words) + " "),
        "its words between whitespace runs": filled("\t\n \u00a0".join(words) + " \t\n "),
        "its pieces run together": filled("".join(pieces)),
        "its words with digits": filled(" 9 ".join(words) + " 12:30 "),
    }
    own |= {f"its piece {piece!r} repeated": filled(piece) for piece in pieces}
    return SHARED | own


def run(pattern: Any, text: str) -> object:
    """The pattern, every way the engine uses one, over ``text``."""
    found = [m.span() for m in pattern.finditer(text)]
    anchored = pattern.match(text) is not None
    whole = pattern.fullmatch(text) is not None if not getattr(pattern, "_ends_at", None) else None
    return found, anchored, whole


def test_the_patterns_are_found() -> None:
    # The readers of outside text are all here: the phrase reader, the chat, a model's reply, SKILL.md, payloads.
    names = {found.where for found in PATTERNS}
    assert {"skills.when.phrasing._DAYS", "skills.when.phrasing._TIME", "skills.chat.intent._WHEN",
            "skills.chat.account._CLAIMS", "skills.llm.textcalls._FENCE", "skills.llm.context._BLOCK",
            "skills.llm.tokens._PIECE", "skills.skillmd.disclosure._ASKS_FOR_REGISTRY", "skills.run.plans._PATH",
            "adapters.mcp.catalog._SENTENCE_END"} <= names
    assert any(name.startswith("skills.when.phrasing:") for name in names)  # compiled in a function
    assert len(PATTERNS) >= 80


@pytest.mark.parametrize("found", PATTERNS, ids=[found.where for found in PATTERNS])
def test_no_text_of_the_chats_cap_holds_a_pattern(found: Found) -> None:
    texts = hostile(found.pattern)
    assert all(len(text) == CAP for text in texts.values())
    with cpu_budget(PER_PATTERN) as spent:
        for text in texts.values():
            run(found.pattern, text)
        took = spent()
    assert took < PER_PATTERN, f"{found.where}: {len(texts)} texts of {CAP:,} characters took {took:.3f} CPU s"


def test_the_attack_measures_what_backtracking_costs() -> None:
    # The same texts, given to the phrase reader's weekday pattern as it was on re: stopped, not finished.
    was = re.compile(r"\b(?P<every>every|each|on|all)?\s*(?P<which>(?:(?:mon|tues?|wed|weds|thu|thur|thurs|fri|sat|sun)"
                     r"(?:day)?s?|wednesdays?|saturdays?)(?:\s*(?:,|and|&|to|through|thru|-)\s*(?:(?:mon|tues?|wed|"
                     r"weds|thu|thur|thurs|fri|sat|sun)(?:day)?s?|wednesdays?|saturdays?))*)\b")
    with pytest.raises(TimeoutError), cpu_budget(PER_PATTERN):
        run(was, SHARED["the finding"])
