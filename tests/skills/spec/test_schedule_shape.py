"""The schedule's shape in the normalizer (pure): aliases, defaults, an update that keeps an end already
passed, notes where a field has no effect, and the SKILL.md metadata that carries the fields."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from skills.errors import SkillValidationError
from skills.spec.models import SHAPE_FIELDS
from skills.spec.normalize import NormalizeContext, normalize, spec_as_input
from skills.when.spread import Crowd

NOW = datetime(2026, 2, 14, 15, 0, tzinfo=UTC)
CTX = NormalizeContext(now=NOW, default_timezone="Europe/Paris", default_agent_id="thinker")
CROWDED = dataclasses.replace(CTX, minute_crowd=lambda trigger: Crowd(skills=3_000, at=NOW + timedelta(hours=18)))
"""Every minute shared by 3,000 skills: more than one worker starts in 5 min (8 a second)."""
WORK = {"name": "x", "instructions": "y", "required_tools": ["gmail_get_new_emails"]}
"""Agent-tier work that reads something (not a reminder): spread where its minute is crowded."""


def shape(**fields: Any) -> dict[str, Any]:
    spec = normalize({"name": "x", "instructions": "y", **fields}, CTX).spec
    return spec.model_dump(include=set(SHAPE_FIELDS))


def test_the_defaults_are_what_a_skill_did_before() -> None:
    assert shape(schedule="0 9 * * *") == {"timeout_minutes": None, "end_at": None, "max_runs": None,
                                           "jitter_seconds": 0, "spread": False, "overlap": "skip",
                                           "catch_up": "once"}


def test_aliases_text_numbers_and_a_local_end_are_read() -> None:
    got = shape(schedule="0 9 * * *", timeout="1.5", endAt="2026-03-01T10:00", maxRuns="3", jitter=30,
                overlapPolicy="Buffer-One", catchUp="NONE")
    # A naive end_at is read in the skill's zone (Paris, UTC+1 in March before the change).
    assert got == {"timeout_minutes": 1.5, "end_at": datetime(2026, 3, 1, 9, 0, tzinfo=UTC), "max_runs": 3,
                   "jitter_seconds": 30, "spread": False, "overlap": "buffer_one", "catch_up": "none"}


def test_an_update_keeps_an_end_that_has_passed_since_but_refuses_a_new_one_in_the_past() -> None:
    existing = normalize({"name": "x", "instructions": "y", "schedule": "0 9 * * *",
                          "end_at": "2026-02-15T00:00:00Z"}, CTX).spec
    later = NormalizeContext(now=NOW + timedelta(days=10), default_timezone="UTC", default_agent_id="thinker")
    assert normalize({"instructions": "z"}, later, existing=existing).spec.end_at == existing.end_at
    with pytest.raises(SkillValidationError, match="end_at: .* is in the past"):
        normalize({"end_at": "2026-02-16T00:00:00Z"}, later, existing=existing)
    assert normalize({"end_at": None}, later, existing=existing).spec.end_at is None


def test_fields_without_effect_are_noted_not_refused() -> None:
    notes = normalize({"name": "x", "instructions": "y", "max_runs": 3, "jitter_seconds": 5}, CTX).notes
    assert "max_runs, jitter_seconds: no effect, this skill has no schedule" in notes
    notes = normalize({"name": "x", "instructions": "y", "in_minutes": 5, "jitter_seconds": 5}, CTX).notes
    assert "max_runs and jitter_seconds: no effect on a one-shot, which fires once at its time" in notes


def test_a_new_skill_is_spread_where_its_minute_is_crowded_unless_it_asks_for_its_exact_time() -> None:
    crowded = normalize({**WORK, "schedule": "0 9 * * *"}, CROWDED)
    assert crowded.spec.spread is True
    assert "each fire spread up to 5 min: its minute (2026-02-15 10:00 Sun) is crowded, 3,001 skills this one " \
           "included, more than the workers start in 5 min (8 a second); `spread: false` for the exact time" \
           in crowded.notes
    for asked in ({"spread": False}, {"spread": "no"}, {"jitter_seconds": 0}, {"jitter": 45}):
        assert normalize({**WORK, "schedule": "0 9 * * *", **asked}, CROWDED).spec.spread is False, asked
    # Not crowded (or no count given): its exact time.
    assert normalize({**WORK, "schedule": "0 9 * * *"}, CTX).spec.spread is False
    alone = dataclasses.replace(CTX, minute_crowd=lambda trigger: Crowd())
    assert normalize({**WORK, "schedule": "0 9 * * *"}, alone).spec.spread is False
    # A reminder, a Direct plan, an interval: never by default, crowded or not.
    reminder = {"name": "x", "instructions": "Tell me to leave", "schedule": "30 8 * * *"}
    plan = {**reminder, "execution_plan": [{"toolName": "ledger_append", "parameters": {}}]}
    for fields in (reminder, plan, {**WORK, "interval_minutes": 60}):
        found = normalize(fields, CROWDED)
        assert found.spec.spread is False and not any("spread up to" in note for note in found.notes), fields
    assert normalize({**reminder, "spread": True}, CROWDED).spec.spread is True  # asked for


def test_a_skill_read_back_is_the_skill_it_was() -> None:
    """``skills get --json`` registered again, and a revision restored, give every field as stored."""
    for fields in ({"jitter": 45}, {"jitter_seconds": 0}, {}, {"spread": False}):
        spec = normalize({"name": "x", "instructions": "y", "schedule": "0 9 * * *", **fields}, CTX).spec
        assert normalize(spec_as_input(spec), CTX).spec == spec, fields


def test_a_stored_skill_keeps_its_spread_on_an_update_and_a_resync() -> None:
    """A skill stored without a spread is not spread by an update that does not ask for it, nor by a SKILL.md's
    re-sync (an update whose file says nothing of it), however crowded its minute; one spread keeps it."""
    exact = normalize({**WORK, "schedule": "0 9 * * *"}, CTX).spec
    assert exact.spread is False
    assert normalize({"instructions": "z", "schedule": "0 * * * *"}, CROWDED, existing=exact).spec.spread is False
    spread = normalize({**WORK, "schedule": "0 9 * * *"}, CROWDED).spec
    assert normalize({"instructions": "z"}, CTX, existing=spread).spec.spread is True
    assert normalize({"spread": True}, CTX, existing=exact).spec.spread is True


@pytest.mark.parametrize(("fields", "message"), [
    ({"spread": "sometimes"}, "spread: must be true or false, got 'sometimes'"),
    ({"spread": 2}, "spread: must be true or false, got 2"),
    ({"jitter_seconds": -1}, "jitter_seconds: must be between 0 and 3600 (got -1)"),
    ({"jitter_seconds": "soon"}, "jitter_seconds: must be a whole number between 0 and 3600, got 'soon'"),
])
def test_a_bad_spread_is_refused_naming_the_field(fields: dict[str, Any], message: str) -> None:
    with pytest.raises(SkillValidationError) as refused:
        normalize({"name": "x", "instructions": "y", "schedule": "0 9 * * *", **fields}, CTX)
    assert message in [str(e) for e in refused.value.errors]
