"""The words of a chat message are anyone's (a Telegram user, a client): ``skills.chat.intent`` reads them with
RE2 (``skills.linear``), so each of its patterns stays linear on the worst text a user can send, and reads no
more than its first ``MESSAGE_CHARS`` (``structured_calls`` reads the same). A pattern put back on Python's
``re`` that backtracks catastrophically (``(\\w+\\s?)+$`` put into ``enabled_said`` ran past 5 minutes on these
messages) fails this test within its budget instead of hanging it."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from typing import Any

from skills import linear
from skills.chat import intent
from skills.chat.intent import (
    MESSAGE_CHARS,
    allowed_actions,
    enabled_said,
    moved_to,
)
from skills.llm.structured import ACTIONS, structured_calls
from skills.spec.models import Skill, TriggerConfig
from tests.cpu import cpu_budget

BUDGET = 0.5
"""CPU seconds for every call of a test together. The patterns as they are take about a fifth of it (0.11 s on a
loaded 2-core machine); a catastrophic one takes minutes, so the margin is for the machine, not for a pattern."""
LONG = 100_000
ALL = ["create", "update", "delete", "list", "reply"]
OFFERED = list(ACTIONS.values())

PATTERNS = [value for value in vars(intent).values() if isinstance(value, re.Pattern | linear.Pattern)]
WORDS = sorted({word for pattern in PATTERNS for word in re.findall(r"[a-z][a-z'-]+", pattern.pattern)})
"""The module's own vocabulary, read from its patterns: a word added to one is in the attack too."""


def filled(piece: str, size: int = MESSAGE_CHARS) -> str:
    return (piece * (size // len(piece) + 1))[:size]


HOSTILE = {
    "its words, run together": filled(" ".join(WORDS) + " "),
    "its words with no space": filled("".join(WORDS)),
    "its words one letter short": filled(" ".join(word[:-1] for word in WORDS) + " "),
    "its words between whitespace runs": filled("\t\n ".join(WORDS) + " \t\n \r\n\t"),
    "'turn' and five words that never say on": filled("turn it all the way back up "),
    "'turn' over and over": filled("turn "),
    "'remind me' over and over": filled("remind me "),
    "'get rid' with no 'of'": filled("get rid o don't ne do not wan "),
    "unclosed straight quotes": '"' + filled("a 'b ", MESSAGE_CHARS - 1),
    "unclosed curly quotes": filled("“a "),
    "a question never asked": "what " + filled("is it when at 9 in 5 ", MESSAGE_CHARS - 5),
    "digits": filled("9"),
    "digits and colons": filled("12:5"),
    "clock times one after another": filled("to 12:30 at 9 for 7 a.m. p.m"),
    "times with no am or pm": filled("at 1 in 1 to 1 "),
    "a digit before a whitespace run": filled("at 9" + " " * 200 + "a"),
    "whitespace": filled(" "),
    "mixed whitespace": filled(" \t\n\r\x0b\x0c\u00a0\u2003"),
}


def reading(message: str) -> tuple[Any, ...]:
    """What each public function of ``skills.chat.intent`` makes of ``message``."""
    return allowed_actions([message, message], ALL), enabled_said(message), moved_to(message, "0 9 * * 1-5")


STAND_UP = Skill(id=4, agent_id="main", name="stand up", instructions="x", trigger_type="cron",
                 trigger_config=TriggerConfig(schedule="0 9 * * 1-5", timezone="UTC"),
                 created_at=datetime(2026, 11, 28, tzinfo=UTC), updated_at=datetime(2026, 11, 28, tzinfo=UTC))
CHANGE = json.dumps({"action": "update", "skill_id": "stand-up", "skill": None, "change": {"instructions": "x"},
                     "reply": "Change it?"})


def changed(message: str) -> Any:
    """``structured_calls`` reading a change against the user's words: pause or resume, a time alone, and the
    skill the words name (the model named its near twin, so the words are searched for it)."""
    return structured_calls(CHANGE, OFFERED, ALL, [STAND_UP], said=message)


def test_the_attack_reads_the_modules_own_words() -> None:
    assert {"pause", "turn", "tomorrow", "o'clock"} <= set(WORDS)
    assert all(len(message) == MESSAGE_CHARS for message in HOSTILE.values())


def test_every_reading_of_a_hostile_message_is_linear() -> None:
    with cpu_budget(BUDGET) as spent:
        read = {name: (reading(message), changed(message)) for name, message in HOSTILE.items()}
        took = spent()
    print(f"{len(HOSTILE)} hostile messages of {MESSAGE_CHARS:,} characters read in {took:.3f} CPU s")
    assert took < BUDGET
    # The attack reaches the patterns: its words are found, not skipped.
    asks, *_ = read["its words between whitespace runs"][0]
    assert asks == ALL
    assert read["a digit before a whitespace run"][0][-1] == "0 9 * * 1-5"


def test_a_hostile_message_50_times_longer_is_read_to_the_cap_only() -> None:
    with cpu_budget(BUDGET):  # a guard only: the test above times these
        capped = {name: (reading(message), changed(message)) for name, message in HOSTILE.items()}
    with cpu_budget(BUDGET) as spent:
        read = {name: (reading(filled(message, LONG)), changed(filled(message, LONG)))
                for name, message in HOSTILE.items()}
        took = spent()
    print(f"{len(HOSTILE)} hostile messages of {LONG:,} characters read in {took:.3f} CPU s")
    assert took < BUDGET
    assert read == capped


def test_a_request_past_the_cap_is_not_read() -> None:
    padding = " " * MESSAGE_CHARS
    assert allowed_actions([padding + "delete the water reminder"], ALL) == ["list", "reply"]
    assert enabled_said(padding + "pause it") is None
    assert moved_to(padding + "move it to 9:30", "0 9 * * 1-5") is None
    # structured_calls reads the same words: the skill named past the cap is not what they name.
    [call], _ = changed(padding + "change the stand up reminder") or ([], "")
    assert json.loads(call.arguments)["skill_id"] == "stand-up"
    [call], _ = changed("change the stand up reminder") or ([], "")
    assert json.loads(call.arguments)["skill_id"] == "stand up"
