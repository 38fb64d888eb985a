"""What a revision says changed between two specs, bounded."""

from __future__ import annotations

from skills.spec.revisions import MAX_VALUE_CHARS, by_of, diff_specs


def test_only_the_fields_that_differ_are_listed_in_the_later_specs_order() -> None:
    before = {"name": "tick", "trigger_config": {"cron": "0 8 * * *"}, "max_steps": 10, "model": "a"}
    after = {"name": "tick", "trigger_config": {"cron": "0 9 * * *"}, "max_steps": 10, "enabled": False}
    changes = diff_specs(before, after)
    assert [(c.field, c.before, c.after) for c in changes] == [
        ("trigger_config", {"cron": "0 8 * * *"}, {"cron": "0 9 * * *"}),
        ("enabled", None, False),
        ("model", "a", None),
    ]
    assert diff_specs(after, after) == []


def test_a_long_value_is_kept_as_its_beginning_and_length() -> None:
    [change] = diff_specs({"instructions": "short"}, {"instructions": "x" * 5000})
    assert change.before == "short"
    assert isinstance(change.after, str) and change.after.endswith("(5002 characters)")
    assert len(change.after) < MAX_VALUE_CHARS + 40


def test_by_is_attribution_trimmed_and_bounded() -> None:
    assert by_of(None) == by_of("  ") == "client"
    assert by_of(" chat:\nabc ") == "chat: abc"
    assert len(by_of("x" * 1000)) == 100
