"""``deliver`` (always, on_change, never) and the quiet Agent run: read, bounded, and what a run is
recorded as. The runs on a real worker are in tests/workflows/test_deliver.py."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from skills.errors import SkillValidationError
from skills.llm.agent import opening_messages
from skills.management.manual import SCHEMAS
from skills.run.notify import NOTHING_TO_REPORT, completion_due, result_digest, settle
from skills.skillmd.registration import FILE_FIELDS
from skills.spec.models import DELIVERIES, RunRecord, Skill, SkillSpec
from skills.spec.normalize import NormalizeContext, normalize, own_field_problems

NOW = datetime(2026, 2, 14, 15, 0, tzinfo=UTC)
CTX = NormalizeContext(now=NOW, default_timezone="UTC", default_agent_id="main")


def spec(**fields: Any) -> SkillSpec:
    return normalize({"name": "news", "instructions": "read the news", **fields}, CTX).spec


def refused(**fields: Any) -> dict[str, str]:
    with pytest.raises(SkillValidationError) as info:
        normalize({"name": "news", "instructions": "read the news", **fields}, CTX)
    return {e.field: e.message for e in info.value.errors}


def skill(deliver: str = "always", digest: str | None = None, **fields: Any) -> Skill:
    return Skill(id=1, agent_id="main", name="news", instructions="x", trigger_type="manual", deliver=deliver,
                 delivered_digest=digest, created_at=NOW, updated_at=NOW, **fields)  # type: ignore[arg-type]


def run(summary: str, status: str = "success", tier: str = "agent") -> RunRecord:
    return RunRecord(run_id="r", skill_id=1, skill_name="news", workflow_id="w", started_at=NOW,
                     status=status, summary=summary, tier=tier)  # type: ignore[arg-type]


def test_deliver_is_always_unless_given_and_read_like_the_other_choices() -> None:
    assert spec().deliver == "always"
    assert spec(deliver="on_change").deliver == "on_change"
    assert spec(deliver="On-Change").deliver == "on_change"
    assert spec(delivery="never").deliver == "never"  # an alias a model tends to send


@pytest.mark.parametrize("value", ["sometimes", "", 3, True, ["always"], "x" * 10_000])
def test_a_bad_deliver_is_refused_naming_the_field_and_its_choices(value: Any) -> None:
    errors = refused(deliver=value)
    assert list(errors) == ["deliver"]
    assert errors["deliver"].startswith("must be one of always, on_change, never (got ")
    assert len(errors["deliver"]) < 140  # the value is cut, whatever its size


def test_an_update_changes_deliver_alone() -> None:
    stored = spec(deliver="on_change")
    assert normalize({"deliver": "never"}, CTX, existing=stored).spec.deliver == "never"
    assert normalize({"max_steps": 3}, CTX, existing=stored).spec.deliver == "on_change"  # kept


def test_deliver_without_a_completion_notice_says_it_does_nothing() -> None:
    notes = normalize({"name": "n", "instructions": "x", "deliver": "on_change", "notify_on_completion": False},
                      CTX).notes
    assert "deliver 'on_change': no effect, notify_on_completion false sends no completion notice" in notes


def test_the_schema_and_a_skill_file_say_the_same_choices() -> None:
    for tool in ("memory_store_skill", "memory_update_skill"):
        assert SCHEMAS[tool]["properties"]["deliver"]["enum"] == list(DELIVERIES) == ["always", "on_change", "never"]
    assert "deliver" in FILE_FIELDS  # a scheduled SKILL.md passes it on
    [error] = own_field_problems({"deliver": "daily"}, "UTC")  # what `skills validate` says of a file
    assert error.field == "deliver" and "must be one of always, on_change, never" in error.message


def test_an_agent_answer_of_nothing_to_report_is_a_quiet_run() -> None:
    for answer in (NOTHING_TO_REPORT, f"  {NOTHING_TO_REPORT}\n"):
        quiet = settle(skill(), run(answer))
        assert quiet.status == "quiet" and quiet.summary == "nothing to report"
    # Only the marker alone, only an Agent run's answer, only a success.
    assert settle(skill(), run(f"{NOTHING_TO_REPORT}: the feed is empty")).status == "success"
    assert settle(skill(), run(NOTHING_TO_REPORT, tier="direct")).status == "success"
    assert settle(skill(), run(NOTHING_TO_REPORT, status="error")).status == "error"


def test_on_change_marks_a_result_equal_to_the_last_delivered_one() -> None:
    digest = result_digest("3 new items")
    assert settle(skill("on_change", digest), run("3 new items")).unchanged
    assert not settle(skill("on_change", digest), run("4 new items")).unchanged
    assert not settle(skill("on_change", None), run("3 new items")).unchanged  # nothing delivered yet
    assert not settle(skill("always", digest), run("3 new items")).unchanged
    assert not settle(None, run("3 new items")).unchanged  # the skill was deleted meanwhile
    assert digest == hashlib.sha256(b"3 new items").hexdigest()  # a digest: the text is not kept twice


def test_no_completion_notice_for_never_or_an_unchanged_result() -> None:
    interval = timedelta(minutes=10)
    due = {deliver: completion_due(skill(deliver), run("done"), NOW, interval, "outbox_send_message")
           for deliver in DELIVERIES}
    assert due == {"always": True, "on_change": True, "never": False}
    unchanged = run("done").model_copy(update={"unchanged": True})
    assert not completion_due(skill("on_change"), unchanged, NOW, interval, "outbox_send_message")


def test_the_agent_is_taught_the_marker() -> None:
    system = opening_messages(skill(), NOW, ["outbox_list_messages"])[0].content or ""
    assert f"answer exactly {NOTHING_TO_REPORT} and nothing else" in system
