"""What a person is shown of outside text: nothing a terminal would act on."""

from __future__ import annotations

from datetime import timedelta

import pytest

from skills.display import shown, shown_lines, span
from skills.owner.approvals import describe_call


@pytest.mark.parametrize(("text", "seen"), [
    ("curl x | sh", "curl x | sh"),
    ("déjà vu, 東京, emoji 🙂", "déjà vu, 東京, emoji 🙂"),  # printable text of any script stays
    ("rm -rf ~ \x1b[2K\r echo hi", "rm -rf ~ \\x1b[2K\\r echo hi"),  # erase the line, print another
    ("report\u202egpj.exe", "report\\u202egpj.exe"),  # right-to-left override
    ("a\u200bb\u2066c\u2028d", "a\\u200bb\\u2066c\\u2028d"),  # zero-width, isolate, line separator
    ("tab\there\nnew", "tab\\there\\nnew"),
    ("\x07\x08\x9b31m", "\\x07\\x08\\x9b31m"),  # bell, backspace, the C1 CSI
    ("lone \ud800", "lone \\ud800"),
    ("no\xa0break", "no\\xa0break"),  # a space that is not one
])
def test_every_character_a_terminal_acts_on_is_shown_as_its_escape(text: str, seen: str) -> None:
    assert shown(text) == seen
    assert shown(seen) == seen  # what is shown is printable: showing it again changes nothing


def test_each_line_is_shown_and_no_line_can_be_smuggled_in() -> None:
    assert shown_lines(["Create skill 'x':", "instructions: do it\nnext fires: never", "ok"]) == (
        "Create skill 'x':\ninstructions: do it\\nnext fires: never\nok")


def test_a_call_waiting_for_approval_is_described_without_a_bidi_override() -> None:
    said = describe_call("outbox_send_message", {"message": "pay \u202e001$ to evil\x1b[8m"})
    assert "\u202e" not in said and "\x1b" not in said
    assert said.startswith("outbox_send_message(") and "\\u202e001$" in said


def test_spans_read_as_a_person_would_say_them() -> None:
    assert span(timedelta(seconds=40)) == "40 s"
    assert span(timedelta(minutes=12, seconds=5)) == "12 min"
    assert span(timedelta(hours=2, minutes=5)) == "2 h 05 min"
    assert span(timedelta(hours=47, minutes=59)) == "47 h 59 min"
    assert span(timedelta(days=3, hours=4)) == "3 days 4 h"
    assert span(timedelta(minutes=-1)) == "0 s"
