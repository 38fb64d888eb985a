"""Business days and holidays (skills.when.calendar): the field as people write it, the days skipped, and the
fires to come with the skipped ones marked. Pure code; the server's agreement is in
tests/adapters/test_calendar_server.py and tests/workflows/test_calendar.py."""

from __future__ import annotations

from datetime import UTC, date, datetime
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from skills.errors import SkillValidationError
from skills.spec.models import Skill, TriggerConfig
from skills.spec.normalize import NormalizeContext, normalize
from skills.when.calendar import (
    check_holidays,
    coming_lines,
    first_fire,
    forecast,
    next_fire,
    next_skipped,
    skipped_days,
    upcoming,
)

NOW = datetime(2026, 12, 20, 12, 0, tzinfo=UTC)
CTX = NormalizeContext(now=NOW, default_timezone="America/New_York", default_agent_id="me")


def skill(trigger: TriggerConfig, **fields: Any) -> Skill:
    return Skill(id=1, agent_id="me", name="standup", trigger_type="cron", trigger_config=trigger,
                 instructions="x", created_at=NOW, updated_at=NOW, **fields)


def refused(data: dict[str, Any], existing: Any = None) -> dict[str, str]:
    with pytest.raises(SkillValidationError) as caught:
        normalize({"name": "standup", "instructions": "x", **data}, CTX, existing=existing)
    return {e.field: e.message for e in caught.value.errors}


# --- the field ----------------------------------------------------------------------------------


@pytest.mark.parametrize(("given", "read"), [
    ("US", "US"), ("us-ca", "US-CA"), (" de-by ", "DE-BY"), ("DE-Bayern", "DE-BY"), ("France", "FR"),
    ("united states-ny", "US-NY"), ("GB-SCT", "GB-SCT"),
])
def test_a_country_and_subdivision_are_read_as_the_package_spells_them(given: str, read: str) -> None:
    assert check_holidays(given) == read


@pytest.mark.parametrize(("given", "says"), [
    ("Frnace", "unknown country 'Frnace'; did you mean 'FR' (France)?"),
    ("ZZ", "unknown country 'ZZ': give an ISO 3166 code"),
    ("US-XX", "unknown subdivision 'XX' of US (its subdivisions: AK, AL"),
    ("DE-Bayren", "unknown subdivision 'Bayren' of DE"),
    ("", "must be a country code"),
    ("U" * 500, "is 500 characters"),
])
def test_an_unknown_country_or_subdivision_is_refused_with_a_suggestion(given: str, says: str) -> None:
    with pytest.raises(ValueError, match=None) as caught:
        check_holidays(given)
    assert says in str(caught.value)


def test_the_normalizer_reads_both_fields_and_names_the_bad_one() -> None:
    spec = normalize({"name": "standup", "instructions": "x", "schedule": "0 9 * * *", "holidays": "us",
                      "businessDaysOnly": "yes"}, CTX).spec
    assert (spec.skip_holidays, spec.business_days_only) == ("US", True)
    assert refused({"schedule": "0 9 * * *", "skip_holidays": "Germny"}) == {
        "skip_holidays": "unknown country 'Germny'; did you mean 'DE' (Germany)?: give an ISO 3166 code the "
                         "holidays package supports, such as 'US', 'GB', 'DE' or 'FR'"}
    assert set(refused({"schedule": "0 9 * * *", "business_days_only": "often"})) == {"business_days_only"}


@pytest.mark.parametrize("trigger", [{"in_minutes": 5}, {"at": "2027-01-04T09:00:00"},
                                     {"trigger_config": {"event": "mail.received"}}, {}])
def test_only_a_repeating_schedule_skips_days(trigger: dict[str, Any]) -> None:
    problems = refused({**trigger, "business_days_only": True, "skip_holidays": "US"})
    assert set(problems) == {"business_days_only", "skip_holidays"}
    assert "only a repeating schedule" in problems["skip_holidays"]


def test_an_update_that_takes_the_schedule_away_drops_the_skips_with_a_note() -> None:
    existing = normalize({"name": "standup", "instructions": "x", "schedule": "0 9 * * *",
                          "business_days_only": True}, CTX).spec
    updated = normalize({"trigger_type": "manual"}, CTX, existing=existing)
    assert updated.spec.business_days_only is False
    assert "business_days_only dropped: the skill no longer has a repeating schedule" in updated.notes
    kept = normalize({"schedule": "0 10 * * *"}, CTX, existing=existing).spec
    assert kept.business_days_only is True


def test_an_interval_that_skips_days_gets_the_default_zone() -> None:
    result = normalize({"name": "standup", "instructions": "x", "interval_minutes": 90,
                        "business_days_only": True}, CTX)
    assert result.spec.trigger_config is not None
    assert result.spec.trigger_config.timezone == "America/New_York"
    assert any("the days skipped are its dates" in note for note in result.notes)


# --- the days --------------------------------------------------------------------------------------


def test_holidays_and_weekends_of_the_country() -> None:
    days = skipped_days("US", True, date(2026, 12, 24), date(2027, 1, 4))
    assert days == {date(2026, 12, 25): "Christmas Day", date(2026, 12, 26): "weekend",
                    date(2026, 12, 27): "weekend", date(2027, 1, 1): "New Year's Day",
                    date(2027, 1, 2): "weekend", date(2027, 1, 3): "weekend"}
    assert skipped_days("US", False, date(2026, 12, 24), date(2027, 1, 4)) == {
        date(2026, 12, 25): "Christmas Day", date(2027, 1, 1): "New Year's Day"}
    assert skipped_days(None, False, date(2026, 12, 24), date(2027, 1, 4)) == {}


def test_a_subdivision_has_its_own_holidays() -> None:
    bavaria = skipped_days("DE-BY", False, date(2027, 1, 1), date(2027, 1, 31))
    berlin = skipped_days("DE-BE", False, date(2027, 1, 1), date(2027, 1, 31))
    assert date(2027, 1, 6) in bavaria and date(2027, 1, 6) not in berlin  # Epiphany


def test_a_country_whose_weekend_is_not_saturday_and_sunday() -> None:
    # Israel rests on Friday and Saturday.
    days = skipped_days("IL", True, date(2027, 2, 1), date(2027, 2, 7))
    assert {d.weekday() for d, why in days.items() if why == "weekend"} == {4, 5}


def test_a_weekend_working_day_is_not_skipped() -> None:
    # China works some Saturdays and Sundays to bridge its holidays (2026-01-04 is a Sunday worked).
    days = skipped_days("CN", True, date(2026, 1, 3), date(2026, 1, 4))
    assert date(2026, 1, 4) not in days and days[date(2026, 1, 3)] == "weekend"


# --- the fires to come -------------------------------------------------------------------------------


def test_the_next_fires_mark_the_skipped_days() -> None:
    daily = skill(TriggerConfig(schedule="0 9 * * *", timezone="America/New_York"), skip_holidays="US",
                  business_days_only=True)
    found = forecast(daily, now=NOW, count=6)
    # 2026-12-20 is a Sunday.
    assert found.lines() == ["2026-12-20 skipped: weekend", "2026-12-21 09:00 Mon", "2026-12-22 09:00 Tue", "2026-12-23 09:00 Wed",
                             "2026-12-24 09:00 Thu", "2026-12-25 skipped: Christmas Day",
                             "2026-12-26 skipped: weekend", "2026-12-27 skipped: weekend",
                             "2026-12-28 09:00 Mon", "2026-12-29 09:00 Tue"]
    assert all(fire.at.tzinfo is not None and str(fire.at.tzinfo) == "America/New_York" for fire in found.fires)


NEW_YORK = ZoneInfo("America/New_York")


@pytest.mark.parametrize(("now", "first"), [
    (datetime(2026, 11, 27, 13, 0, tzinfo=UTC), datetime(2026, 11, 27, 9, 0, tzinfo=NEW_YORK)),  # that Friday
    (datetime(2026, 11, 27, 15, 0, tzinfo=UTC), datetime(2026, 11, 30, 9, 0, tzinfo=NEW_YORK)),  # after it: Monday
    (datetime(2026, 11, 28, 12, 0, tzinfo=UTC), datetime(2026, 11, 30, 9, 0, tzinfo=NEW_YORK)),  # a Saturday
    (datetime(2026, 11, 25, 15, 0, tzinfo=UTC), datetime(2026, 11, 27, 9, 0, tzinfo=NEW_YORK)),  # Thanksgiving's eve
    (datetime(2026, 12, 24, 15, 0, tzinfo=UTC), datetime(2026, 12, 28, 9, 0, tzinfo=NEW_YORK)),  # Christmas Eve
])
def test_the_first_fire_of_a_weekday_skill_is_its_next_business_day(now: datetime, first: datetime) -> None:
    # Registered on a Friday afternoon, a weekend or a holiday's eve, the answer was None.
    daily = skill(TriggerConfig(schedule="0 9 * * *", timezone="America/New_York"), skip_holidays="US",
                  business_days_only=True).model_copy(update={"created_at": now})
    assert first_fire(daily, now) == first
    assert next_fire(daily, anchor=now, now=now) == first
    fires = forecast(daily, now=now, count=1).fires
    assert [fire.at for fire in fires if fire.skipped is None] == [first]
    assert all(fire.at < first for fire in fires if fire.skipped)


def test_a_skipped_day_is_listed_once_however_often_the_skill_fires_in_it() -> None:
    minutely = skill(TriggerConfig(schedule="* * * * *", timezone="UTC"), business_days_only=True)
    lines = forecast(minutely, now=datetime(2027, 1, 1, 23, 58, tzinfo=UTC), count=3).lines()
    assert lines == ["2027-01-01 23:59 Fri", "2027-01-02 skipped: weekend", "2027-01-03 skipped: weekend",
                     "2027-01-04 00:00 Mon", "2027-01-04 00:01 Mon"]


def test_a_skill_whose_every_fire_is_skipped_lists_a_bounded_answer() -> None:
    saturdays = skill(TriggerConfig(schedule="0 9 * * 6", timezone="UTC"), business_days_only=True)
    fires = upcoming(saturdays, anchor=NOW, now=NOW, count=10)
    # Searched as far as a skip list reaches, and no further; listed: as many as the fires asked for.
    assert len(fires) == 10 and all(fire.skipped == "weekend" for fire in fires)
    assert next_fire(saturdays, anchor=NOW, now=NOW) is None
    # Skipped days between fires are all listed, however many fires were asked for; none past the end.
    ending = skill(TriggerConfig(schedule="0 9 * * *", timezone="UTC"), business_days_only=True,
                   end_at=datetime(2027, 1, 6, 12, 0, tzinfo=UTC))
    fires = upcoming(ending, anchor=NOW, now=NOW, count=20)
    assert [fire.at.day for fire in fires if fire.skipped] == [26, 27, 2, 3]
    assert len([fire for fire in fires if not fire.skipped]) == 13 and fires[-1].at.day == 6


def test_an_interval_skips_whole_days_of_its_zone() -> None:
    every_8h = skill(TriggerConfig(interval_minutes=480, timezone="Europe/Berlin"), business_days_only=True)
    lines = forecast(every_8h, now=datetime(2027, 1, 1, 12, 0, tzinfo=UTC), count=3).lines()
    # Every 8 hours from the anchor: 04:00, 12:00 and 20:00 UTC (05:00, 13:00, 21:00 in Berlin).
    assert lines == ["2027-01-01 21:00 Fri", "2027-01-02 skipped: weekend", "2027-01-03 skipped: weekend",
                     "2027-01-04 05:00 Mon", "2027-01-04 13:00 Mon"]


def test_a_reply_lists_the_fires_to_come_only_of_a_skill_that_repeats() -> None:
    daily = skill(TriggerConfig(schedule="0 9 * * *", timezone="America/New_York"), skip_holidays="US")
    assert coming_lines(daily, now=NOW, count=2) == ["2026-12-20 09:00 Sun", "2026-12-21 09:00 Mon"]
    assert coming_lines(daily.model_copy(update={"enabled": False}), now=NOW) == []
    once = skill(TriggerConfig(at=datetime(2026, 12, 24, 9, 0, tzinfo=UTC), timezone="UTC"))
    assert once.is_one_shot and coming_lines(once, now=NOW) == []


def test_skills_get_lists_the_next_skipped_days() -> None:
    daily = skill(TriggerConfig(schedule="0 9 * * *", timezone="America/New_York"), skip_holidays="US")
    assert next_skipped(daily, now=NOW, count=3) == [
        (date(2026, 12, 25), "Christmas Day"), (date(2027, 1, 1), "New Year's Day"),
        (date(2027, 1, 18), "Martin Luther King Jr. Day")]
    assert next_skipped(skill(TriggerConfig(schedule="0 9 * * *", timezone="UTC")), now=NOW) == []


def test_a_skill_read_back_from_skills_get_json_registers_again() -> None:
    # `skills get --json` adds the next skipped days and how far the list reaches: the engine's, not given.
    result = normalize({"name": "standup", "instructions": "x", "schedule": "0 9 * * *", "business_days_only": True,
                        "skipped_days": [{"date": "2026-12-26", "why": "weekend"}],
                        "skips_until": "2028-01-25T05:00:00+00:00"}, CTX)
    assert result.spec.business_days_only is True
    assert "ignored 'skipped_days': it is kept by the engine, not given" in result.notes
    assert "ignored 'skips_until': it is kept by the engine, not given" in result.notes


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(max_size=60), st.integers(), st.none(), st.lists(st.text(max_size=3), max_size=3)))
def test_any_value_of_skip_holidays_is_read_or_refused_with_a_reason(value: object) -> None:
    try:
        code = check_holidays(value)
    except ValueError as e:
        assert str(e)
    else:
        assert check_holidays(code) == code  # a code read is read again as itself
