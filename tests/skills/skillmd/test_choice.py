"""A model's choice among the ranker's candidates: only a name offered, or none, is ever chosen."""

from __future__ import annotations

import json

from skills.skillmd.choice import MAX_CANDIDATES, NONE, Candidate, choice_request, read_choice

CANDIDATES = [Candidate(f"skill-{i}", f"Does task number {i}. " * 30) for i in range(8)]


def test_the_schema_allows_the_first_candidates_names_and_none_only() -> None:
    _, response_format = choice_request("fix my flaky tests", CANDIDATES)
    enum = response_format["json_schema"]["schema"]["properties"]["skill"]["enum"]
    assert enum == [c.name for c in CANDIDATES[:MAX_CANDIDATES]] + [NONE]


def test_the_system_prompt_is_the_same_for_every_message_and_the_candidates_are_in_the_users_turn() -> None:
    first, _ = choice_request("fix my flaky tests", CANDIDATES[:2])
    second, _ = choice_request("plan a trip to Lisbon", CANDIDATES[3:6])
    assert first[0] == second[0]
    assert "skill-3" in second[1]["content"] and "plan a trip to Lisbon" in second[1]["content"]
    assert "skill-3" not in first[1]["content"]


def test_a_description_is_shown_short() -> None:
    messages, _ = choice_request("x", CANDIDATES[:1])
    line = next(line for line in messages[1]["content"].splitlines() if line.startswith("- skill-0"))
    assert len(line) < 300 and line.endswith("…")


def test_the_answer_names_a_candidate_or_nothing_is_chosen() -> None:
    shown = CANDIDATES[:3]
    assert read_choice(json.dumps({"skill": "skill-1"}), shown) == "skill-1"
    assert read_choice('"skill-2"', shown) == "skill-2"
    assert read_choice(json.dumps({"skill": NONE}), shown) is None
    # An endpoint that ignored the schema: a name not shown, a name past the fifth, or prose.
    assert read_choice(json.dumps({"skill": "delete-everything"}), shown) is None
    assert read_choice(json.dumps({"skill": "skill-6"}), CANDIDATES) is None
    assert read_choice("I think skill-1 fits best", shown) is None
    assert read_choice(json.dumps({"skill": ["skill-1"]}), shown) is None
