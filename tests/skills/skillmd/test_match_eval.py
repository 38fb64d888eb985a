"""Matching judged on skills nobody here wrote: the names and descriptions of public SKILL.md
collections (tests/skills/skillmd/data/skill_collections.json, read at the commits it names; no
bodies) beside the engine's bundled skills, against messages written here
(data/match_messages.json). Positives name the skills a message is for; negatives are ordinary
chat that no skill is for. The split is by collection: ``tuning`` messages are for the collections
the weights and the threshold were set on; ``held_out`` messages are for collections never looked
at while tuning, written before the ranker ran on them. ``unseen`` messages (data/unseen_messages.json) are
for twelve more collections, written by someone who never saw the ranker, its data or its scores. Every
message is matched against all the collections at once (about 1,800 skills), as a user with many
installed would be."""

from __future__ import annotations

import functools
import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from adapters.skill_folders import discover
from skills.skillmd import BUNDLED_DIR, SkillFile, SkillIndex, SkillManifest

DATA = Path(__file__).parent / "data"
COLLECTIONS = [*json.loads((DATA / "skill_collections.json").read_text())["collections"],
               *json.loads((DATA / "unseen_collections.json").read_text())["collections"]]
"""Every collection: ``tuning``, ``held_out`` and ``unseen`` (data/unseen_collections.json, written blind:
bench.skillmd reads that part, once per change; no test holds a threshold on it)."""


def catalog() -> list[SkillFile]:
    found: list[SkillFile] = list(discover(bundled=BUNDLED_DIR).skills.values())
    names = {skill.name for skill in found}
    for collection in COLLECTIONS:
        for entry in collection["skills"]:
            if entry["name"] in names:  # a skill two collections copy is installed once, as on disk
                continue
            names.add(entry["name"])
            manifest = SkillManifest.model_validate({"name": entry["name"], "description": entry["description"]})
            found.append(SkillFile(manifest=manifest, path=Path(f"/{collection['repository']}/{entry['name']}/SKILL.md"),
                                   source="user", mtime=datetime(2026, 1, 1, tzinfo=UTC)))
    return found


@functools.cache
def index() -> SkillIndex:
    """The index of every collection's skills: built by the tests that match, not as each xdist worker collects."""
    return SkillIndex(catalog())
MESSAGES = {**json.loads((DATA / "match_messages.json").read_text()),
            **json.loads((DATA / "unseen_messages.json").read_text())}


def evaluate(part: str) -> tuple[float, list[tuple[str, list[str], list[str]]], dict[str, list[str]]]:
    """Top-1 accuracy over the part's positives, the positives it got wrong (message, first match,
    expected), and the negatives that matched anything (bench.skillmd prints these too)."""
    positives = MESSAGES[part]["positives"]
    firsts = {message: [m.name for m in index().match(message, limit=1)] for message, _ in positives}
    wrong = [(message, firsts[message], expected) for message, expected in positives
             if not firsts[message] or firsts[message][0] not in expected]
    # An everyday message "matches" when a skill is brought in with no one asked: a sure first candidate.
    matched = {message: [m.name for m in index().match(message) if m.sure] for message in MESSAGES[part]["negatives"]}
    return 1 - len(wrong) / len(positives), wrong, {m: found for m, found in matched.items() if found}


TOP_1 = 0.8
"""What both parts hold, as measured (about 83 % each against 1,570 skills; 90 % was the issue's
target, and docs/skill-files.md says what stands in the way): a floor that catches a regression."""

EVERYDAY_MATCHED = 1
"""Everyday messages each part may match, as measured: a word's other sense that the stemmer makes
one term ("proof" of bread dough and of a theorem) still gets through, as docs/skill-files.md says."""


@pytest.mark.parametrize("part", ["tuning", "held_out"])
def test_the_right_skill_comes_first_for_most_messages(part: str) -> None:
    accuracy, wrong, _ = evaluate(part)
    assert accuracy >= TOP_1, f"top-1 accuracy {accuracy:.0%}; wrong: {wrong}"


@pytest.mark.parametrize("part", ["tuning", "held_out"])
def test_almost_no_skill_is_matched_for_a_message_no_skill_is_for(part: str) -> None:
    matched = evaluate(part)[2]
    assert len(matched) <= EVERYDAY_MATCHED, matched


def test_a_shared_word_is_not_a_match() -> None:
    """The issue's two cases: Linear's tracker says "linear", the scheduler says "monthly"."""
    assert "linear" not in [m.name for m in index().match("fit a linear regression on this data") if m.sure]
    spreadsheet = [m.name for m in index().match("build an Excel spreadsheet with a pivot table of monthly revenue")]
    assert spreadsheet[:1] == ["xlsx"]  # the scheduler's keyword "monthly" no longer outranks the subject


def test_each_match_says_why() -> None:
    [best, *_] = index().match("build an Excel spreadsheet with a pivot table of monthly revenue")
    assert best.name == "xlsx"
    assert any(term.word == "excel" and term.term == "xlsx" and "name" in term.fields for term in best.terms)
    assert any("'excel' as 'xlsx' in name" in reason for reason in best.reasons), best.reasons
