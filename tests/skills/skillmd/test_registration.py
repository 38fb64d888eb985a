"""File skills that carry a schedule: the registration request built from them."""

from __future__ import annotations

from pathlib import Path

from adapters.skill_folders import FOLDERS, discover
from skills.skillmd import registration_request
from skills.spec.models import DEFAULT_MAX_STEPS


def test_a_skill_with_trigger_config_gives_a_registration_request(tmp_path: Path, write_skill) -> None:
    path = write_skill(
        tmp_path,
        "news-digest",
        description="Summarises AI news every three hours.",
        body="Search the news, then send a summary.",
        metadata={
            "required_tools": ["searcher_news_search", "telegram_send_message"],
            "trigger_config": {"schedule": "0 */3 * * *", "timezone": "Europe/Paris"},
            "max_steps": 5,
        },
    )
    skill = discover(bundled=tmp_path).skills["news-digest"]

    assert registration_request(skill, FOLDERS) == {
        "name": "news-digest",
        "description": "Summarises AI news every three hours.",
        "instructions": "Search the news, then send a summary.",
        "trigger_type": "cron",
        "trigger_config": {"schedule": "0 */3 * * *", "timezone": "Europe/Paris"},
        "required_tools": ["searcher_news_search", "telegram_send_message"],
        "max_steps": 5,
        "file_path": str(path),
        "file_mtime": skill.mtime,
    }
    assert abs(skill.mtime.timestamp() - path.stat().st_mtime) < 1e-5


def test_the_trigger_config_is_kept_as_written(tmp_path: Path, write_skill) -> None:
    write_skill(tmp_path, "nudge", metadata={"trigger_config": {"in_minutes": 5}})

    request = registration_request(discover(user=tmp_path).skills["nudge"], FOLDERS)

    assert request is not None
    assert request["trigger_config"] == {"in_minutes": 5}
    assert request["required_tools"] == []
    assert request["max_steps"] == DEFAULT_MAX_STEPS


def test_no_request_without_trigger_config(tmp_path: Path, write_skill) -> None:
    write_skill(tmp_path, "playbook", metadata={"keywords": ["remind me"]})

    assert registration_request(discover(user=tmp_path).skills["playbook"], FOLDERS) is None


def test_a_skill_file_subscribes_with_an_event_trigger(tmp_path: Path, write_skill) -> None:
    write_skill(tmp_path, "mail-watch", metadata={"trigger_config": {"event": "mail.in"}})
    request = registration_request(discover(user=tmp_path).skills["mail-watch"], FOLDERS)
    assert request is not None and request["trigger_type"] == "event"
    assert request["trigger_config"] == {"event": "mail.in"}


def test_the_schedule_shape_in_metadata_is_passed_on_as_written(tmp_path: Path, write_skill) -> None:
    write_skill(tmp_path, "hourly", metadata={"trigger_config": {"schedule": "0 * * * *"}, "jitter_seconds": 120,
                                              "timeout_minutes": 5, "overlap": "buffer_one", "other": 1,
                                              "business_days_only": True, "skip_holidays": "DE-BY",
                                              "required_tools": ["outbox_send_message"],
                                              "approval_required_tools": ["outbox_send_message"]})

    request = registration_request(discover(user=tmp_path).skills["hourly"], FOLDERS)

    assert request is not None and "other" not in request
    assert (request["jitter_seconds"], request["timeout_minutes"], request["overlap"]) == (120, 5, "buffer_one")
    assert (request["business_days_only"], request["skip_holidays"]) == (True, "DE-BY")
    assert request["approval_required_tools"] == ["outbox_send_message"]
