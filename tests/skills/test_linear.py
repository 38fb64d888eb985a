"""``skills.linear``: patterns written for ``re``, matched by RE2 with the meaning they had, in linear time."""

from __future__ import annotations

import functools
import re
import time
import unicodedata

import pytest

from skills import linear


@functools.cache
def every_character() -> str:
    """Every code point but the surrogates: built by the tests that read it, not as each xdist worker collects."""
    return "".join(chr(c) for c in range(0x110000) if not 0xD800 <= c < 0xE000)


@functools.cache
def known() -> str:
    """The characters this Python's Unicode (``unicodedata.unidata_version``) assigns; RE2's tables are newer,
    and a character assigned since is a letter or digit there and nothing for Python."""
    return "".join(c for c in every_character() if unicodedata.category(c) != "Cn")


@pytest.mark.parametrize("pattern", [r"\w+", r"\W+", r"\d+", r"\D+", r"\s+", r"\S+", r"[\w]+", r"[^\w]+",
                                     r"[\s\d]+", r"[^\s\d]+", r"[^\w\n]+", r"[\w-]+"])
def test_python_classes_mean_what_they_mean_in_re_over_every_character(pattern: str) -> None:
    # In code point order a class's members come in runs: the runs found are the class, character by character.
    assert linear.findall(pattern, known()) == re.findall(pattern, known())


def test_a_newer_character_is_the_only_difference_and_rare() -> None:
    everything = every_character()
    newer = set("".join(linear.findall(r"\w+", everything))) - set("".join(re.findall(r"\w+", everything)))
    assert newer and all(unicodedata.category(c) == "Cn" for c in newer)


def test_unicode_spaces_and_digits_count_as_re_counts_them() -> None:
    text = "in\u00a010\u2009minutes, at \u0663pm\u3000ok"
    assert linear.sub(r"\s+", " ", text) == re.sub(r"\s+", " ", text) == "in 10 minutes, at \u0663pm ok"
    assert linear.findall(r"\d+", text) == re.findall(r"\d+", text) == ["10", "\u0663"]


def test_flags_are_res() -> None:
    assert linear.search(r"remind", "REMIND me", linear.IGNORECASE).span() == (0, 6)
    assert linear.search(r"remind", "REMIND me", re.IGNORECASE).span() == (0, 6)
    assert linear.search(r"remind", "REMIND me") is None
    assert linear.search(r"a.b", "a\nb") is None and linear.search(r"a.b", "a\nb", linear.DOTALL) is not None
    assert linear.findall(r"^\w+$", "one\ntwo", linear.MULTILINE) == ["one", "two"]


def test_groups_spans_and_iteration_read_as_res() -> None:
    pattern, text = r"(?P<h>\d{1,2})(?::(?P<mi>\d\d))?\s*(?P<ampm>[ap]m)?", "at 9, 10:30pm and 7 am"
    ours, theirs = list(linear.finditer(pattern, text)), list(re.finditer(pattern, text))
    assert [m.span() for m in ours] == [m.span() for m in theirs]
    assert [m.groupdict() for m in ours] == [m.groupdict() for m in theirs]
    assert [m.group("h", "ampm") for m in ours] == [m.group("h", "ampm") for m in theirs]
    assert linear.findall(r"(\d)(\d)?", "1 23") == re.findall(r"(\d)(\d)?", "1 23")
    assert linear.split(r"[,\s]+", "a, b  c") == ["a", "b", "c"]
    assert linear.sub(r"(//[^/:@]*:)[^@]*@", r"\1***@", "https://u:secret@host") == "https://u:***@host"
    assert linear.sub(r"\s+", "\u2014", "a \u00a0b") == "a\u2014b"  # a plain replacement is put in as written


def test_dollar_is_the_end_of_the_text() -> None:
    # re's $ took a last newline: "name\n" was a name. Here it is not.
    assert re.match(r"^[a-z]+$", "name\n") is not None
    assert linear.match(r"^[a-z]+$", "name\n") is None and linear.match(r"^[a-z]+$", "name") is not None
    assert linear.fullmatch(r"\A```(.*?)```\Z", "```x```") is not None


def test_a_word_boundary_is_asciis() -> None:
    assert linear.search(r"\bat\b", "meet at 9") is not None and linear.search(r"\bat\b", "what") is None
    # Next to a letter outside ASCII RE2 sees a boundary that re does not: the difference the module names.
    assert re.search(r"\bat\b", "caféat") is None and linear.search(r"\bat\b", "caféat") is not None


def test_what_re2_cannot_run_in_linear_time_is_refused_when_compiled() -> None:
    for pattern in (r"(a)\1", r"a(?=b)", r"(?<!\w)a", r"[^\W\d_]+"):
        with pytest.raises(linear.error):
            linear.compile(pattern)


def test_a_lookahead_at_a_branchs_end_reads_as_res() -> None:
    theirs = re.compile(r"\b(?:at|@)\s*(?P<h>\d{1,2})(?::(?P<mi>\d{2}))?\s*(?P<ampm>[ap]m)?(?![\w:])|\bnoon\b")
    ours = linear.compile(r"\b(?:at|@)\s*(?P<h>\d{1,2})(?::(?P<mi>\d{2}))?\s*(?P<ampm>[ap]m)?(?P<ahead>)(?:[^\w:]|$)"
                          r"|\bnoon\b", ends_at="ahead")
    texts = ["at 9", "at 9am, then", "at 930", "at 9:305", "at 9 amx", "at 9@10pm", "at 9@noon", "at 9:30.", "noon",
             "at 12pm@ 3 at 7am", "at 99x at 9", "@9:", "at 9pm:"]
    for text in texts:
        assert [(m.span(), m.group(), m.groupdict()) for m in ours.finditer(text)] == \
               [(m.span(), m.group(), {**m.groupdict(), "ahead": None}) if m.group() == "noon" else
                (m.span(), m.group(), {**m.groupdict(), "ahead": ""}) for m in theirs.finditer(text)], text
        found = ours.search(text)
        assert (found and (found.start(), found.end(), found[0])) == \
               ((m := theirs.search(text)) and (m.start(), m.end(), m[0])), text


def test_a_lone_surrogate_is_matched_as_a_replacement_character() -> None:
    # JSON carries "\ud800"; UTF-8, which RE2 reads, cannot: the text is matched with U+FFFD in its place.
    assert linear.findall(r"\w+", "remind\ud800me") == ["remind", "me"]
    assert linear.sub(r"\s+", " ", "a \ud800  b") == "a \ufffd b"


def test_escape_matches_the_text_itself() -> None:
    text = "stand-up (daily) $5 * 2 + é? [x]{1}\\"
    assert linear.fullmatch(linear.escape(text), text) is not None


def test_the_weekday_attack_is_linear() -> None:
    # re, with this pattern, took 3.4 s on 22 repetitions and doubled with each more; RE2 reads 2,000 characters
    # of them in a few milliseconds.
    weekday = r"(?:mon|tues?|wed|weds|thu|thur|thurs|fri|sat|sun)(?:day)?s?"
    pattern = linear.compile(rf"\b(?:{weekday})(?:\s*(?:,|and|&|to)\s*(?:{weekday}))*\b")
    started = time.process_time()
    pattern.search("remind me every " + "tuesand" * 284 + "x")
    assert time.process_time() - started < 0.5
