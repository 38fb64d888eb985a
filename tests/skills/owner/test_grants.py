"""Standing grants, pure: which calls a grant approves, and when it stops approving."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from skills.owner.grants import Grant, GrantRequest, grant_problems, matches, parse_duration, parse_where

NOW = datetime(2026, 11, 26, 12, tzinfo=UTC)


def grant(**fields: object) -> Grant:
    return Grant.model_validate({"id": 1, "tool": "telegram_send_message", "created_at": NOW - timedelta(days=1),
                                 **fields})


def test_a_grant_matches_its_tool_for_any_skill() -> None:
    assert matches(grant(), "telegram_send_message", 7, {"text": "hi"}, NOW)
    assert not matches(grant(), "mail_send", 7, {}, NOW)


def test_a_skill_grant_matches_only_that_skill() -> None:
    assert matches(grant(skill_id=7), "telegram_send_message", 7, {}, NOW)
    assert not matches(grant(skill_id=7), "telegram_send_message", 8, {}, NOW)


def test_where_compares_each_argument_exactly_as_text() -> None:
    owner = grant(where={"chat_id": "42"})
    assert matches(owner, "telegram_send_message", 1, {"chat_id": "42", "text": "x"}, NOW)
    assert matches(owner, "telegram_send_message", 1, {"chat_id": 42}, NOW)  # a number, as its JSON
    assert not matches(owner, "telegram_send_message", 1, {"chat_id": "421"}, NOW)
    assert not matches(owner, "telegram_send_message", 1, {"text": "x"}, NOW)  # missing: no match
    both = grant(where={"chat_id": "42", "silent": "true"})
    assert matches(both, "telegram_send_message", 1, {"chat_id": "42", "silent": True}, NOW)
    assert not matches(both, "telegram_send_message", 1, {"chat_id": "42", "silent": False}, NOW)


def test_an_expired_or_revoked_grant_approves_nothing() -> None:
    assert matches(grant(expires_at=NOW + timedelta(seconds=1)), "telegram_send_message", 1, {}, NOW)
    assert not matches(grant(expires_at=NOW), "telegram_send_message", 1, {}, NOW)
    assert not matches(grant(revoked_at=NOW - timedelta(minutes=1)), "telegram_send_message", 1, {}, NOW)
    assert grant(expires_at=NOW).state(NOW) == "expired"
    assert grant(revoked_at=NOW).state(NOW) == "revoked"
    assert grant().state(NOW) == "live"


def test_a_management_tool_never_matches_and_is_refused() -> None:
    assert not matches(grant(tool="approve"), "approve", 1, {}, NOW)
    [error] = grant_problems(GrantRequest(tool="memory_delete_skill"))
    assert error.field == "tool" and "management tool" in error.message


def test_durations() -> None:
    assert (parse_duration("30d"), parse_duration("12h"), parse_duration("90m")) == (43200, 720, 90)
    assert parse_duration("365d") == 365 * 24 * 60
    for bad in ("366d", "0m", "1w", "", "-1d", "1.5h"):
        with pytest.raises(ValueError, match="^for: "):
            parse_duration(bad)
    [error] = grant_problems(GrantRequest(tool="x", minutes=10**9))
    assert error.field == "for"


def test_where_items() -> None:
    assert parse_where(["chat_id=42", "text=a=b", "empty="]) == {"chat_id": "42", "text": "a=b", "empty": ""}
    for bad in (["chat_id"], ["=1"], ["a b=1"], ["x=1", "x=2"]):
        with pytest.raises(ValueError, match="^where: "):
            parse_where(bad)
    [error] = grant_problems(GrantRequest(tool="x", where={"bad key": "1"}))
    assert error.field == "where"
