"""The chat's word readers on 39 messages written blind for issue 52 (``bench/data/chat_words.json``, never
edited): negations, quoted results, odd phrasings and questions, each with the effect its writer expects.
``bench/chat_words.py`` measures them; this holds what the fix reached, so it does not slip back."""

from __future__ import annotations

import json

import pytest

from bench.chat_words import DATA, check

CASES = json.loads(DATA.read_text())


@pytest.mark.parametrize("case", CASES, ids=[f"{case['kind']}: {case['text'][:40]}" for case in CASES])
def test_no_field_the_owner_did_not_ask_for_is_set_wrong(case: dict[str, object]) -> None:
    found = check(case)
    assert found["field wrong"] == [], found


def test_the_figures_reached_hold() -> None:
    found = [check(case) for case in CASES]
    counts = {kind: sum(bool(f[kind]) for f in found) for kind in found[0]}
    # Before the first fixes: clean 13, unasked offered 18, left out 3, field wrong 3, field unasked 11, slip kept 16;
    # after them 27, 8, 5, 0, 1, 1; after the second (native calls, the line under a forward, a when beside a named
    # skill, questions of what the assistant can do, words reported bare) 35, 2, 3, 0, 0, 0.
    assert sum(not any(f.values()) for f in found) >= 35
    assert counts["field unasked"] == 0 and counts["slip kept"] == 0 and counts["unasked offered"] <= 2
    assert counts["left out"] <= 3
