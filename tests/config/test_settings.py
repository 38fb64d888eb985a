"""The settings as each entry point reads them: ``SKILLS_*`` variables through pydantic-settings,
the OpenAI SDK's own variables as the LLM's fallback, the machine's time zone through tzlocal."""

from __future__ import annotations

import os
import subprocess
from datetime import timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from config.settings import Settings, SettingsError
from tests.conftest import PYTHON, ROOT


def test_every_text_form_of_the_environment_is_read() -> None:
    settings = Settings.from_env({
        "SKILLS_TASK_QUEUE": "prod",
        "SKILLS_DATA_DIR": "/srv/skills",
        "SKILLS_CATCHUP_WINDOW": "PT2H",            # ISO 8601
        "SKILLS_TOOL_CALL_TIMEOUT": "90.5",         # seconds, with a fraction
        "SKILLS_NOTIFY_INTERVAL": "300",
        "SKILLS_BACKOFF_STEPS": "30, 120,600",      # comma-separated seconds
        "SKILLS_TELEGRAM_CHATS": "42, -1001",       # comma-separated ids
        "SKILLS_FAILURE_LIMIT": "3",
        "SKILLS_SPIKE_FACTOR": "2.5",
        "SKILLS_LOG_FORMAT": "json",
        "SKILLS_LOG_LEVEL": "DEBUG",
        "SKILLS_DEFAULT_CHAT_ID": "",               # empty: not set
        "UNRELATED": "x",
    })
    assert settings.task_queue == "prod" and settings.data_dir == Path("/srv/skills")
    assert settings.catchup_window == timedelta(hours=2)
    assert settings.tool_call_timeout == timedelta(seconds=90.5)
    assert settings.notify_interval == timedelta(minutes=5)
    assert settings.maintenance_interval == settings.skill_sync_interval == timedelta(minutes=5)  # defaults
    assert settings.backoff_steps == [timedelta(seconds=30), timedelta(minutes=2), timedelta(minutes=10)]
    assert settings.telegram_chats == ["42", "-1001"]
    assert settings.failure_limit == 3 and settings.spike_factor == 2.5
    assert settings.log_format == "json" and settings.log_level == "DEBUG"
    assert settings.default_chat_id is None


def test_overrides_win_and_none_means_not_given() -> None:
    environ = {"SKILLS_TASK_QUEUE": "from-env", "SKILLS_LLM_MODEL": "llama3.1"}
    assert Settings.from_env(environ, task_queue="from-flag").task_queue == "from-flag"
    assert Settings.from_env(environ, task_queue=None).task_queue == "from-env"
    assert Settings.from_env(environ).llm_model == "llama3.1"


def test_from_env_reads_the_process_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SKILLS_TASK_QUEUE", "from-os-environ")
    assert Settings.from_env().task_queue == "from-os-environ"


def test_settings_built_in_code_never_read_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    # A developer's shell must not change what a test runs: explicit values and the defaults only.
    monkeypatch.setenv("SKILLS_TASK_QUEUE", "from-env")
    monkeypatch.setenv("SKILLS_FAILURE_LIMIT", "not a number")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-the-shell")
    settings = Settings(timezone="UTC")
    assert settings.task_queue == "skills" and settings.failure_limit == 5
    assert settings.llm_api_key is None and not settings.llm_configured
    assert Settings(task_queue="mine", llm_api_key="k").llm_api_key == "k"


def test_the_llm_falls_back_to_the_openai_variables() -> None:
    openai_only = Settings.from_env({"OPENAI_API_KEY": "sk-openai", "OPENAI_BASE_URL": "http://proxy:4000/v1"})
    assert openai_only.llm_api_key == "sk-openai" and openai_only.llm_base_url == "http://proxy:4000/v1"
    assert openai_only.llm_configured

    both = Settings.from_env({"OPENAI_API_KEY": "sk-openai", "SKILLS_LLM_API_KEY": "sk-skills",
                              "OPENAI_BASE_URL": "http://proxy:4000/v1",
                              "SKILLS_LLM_BASE_URL": "http://localhost:11434/v1"})
    assert both.llm_api_key == "sk-skills" and both.llm_base_url == "http://localhost:11434/v1"

    empty = Settings.from_env({"SKILLS_LLM_API_KEY": "", "OPENAI_API_KEY": "sk-openai"})
    assert empty.llm_api_key == "sk-openai"
    assert not Settings.from_env({}).llm_configured


def test_the_llm_description_names_the_endpoint_and_model_never_the_key() -> None:
    local = Settings.from_env({"SKILLS_LLM_BASE_URL": "http://localhost:11434/v1", "SKILLS_LLM_MODEL": "llama3.1"})
    assert local.llm_description == "http://localhost:11434/v1, model llama3.1"

    openai = Settings.from_env({"OPENAI_API_KEY": "sk-secret-key"})
    assert openai.llm_description == "the OpenAI API (https://api.openai.com/v1), model gpt-4o-mini"
    assert "sk-secret-key" not in openai.llm_description

    with_credentials = Settings(llm_base_url="https://user:hunter2@proxy.example/v1")
    assert with_credentials.llm_description == "https://user:***@proxy.example/v1, model gpt-4o-mini"

    none = Settings.from_env({})
    assert none.llm_description.startswith("none: ") and "SKILLS_LLM_BASE_URL" in none.llm_description


def test_the_database_url_is_shown_without_its_password(tmp_path: Path) -> None:
    postgres = Settings(database_url="postgresql+psycopg://skills:s3cret-pw@db.internal:5432/skills")
    assert postgres.masked_database_url == "postgresql+psycopg://skills:***@db.internal:5432/skills"
    assert "s3cret-pw" not in postgres.masked_database_url
    sqlite = Settings(data_dir=tmp_path)
    assert sqlite.masked_database_url == sqlite.store_url == f"sqlite:///{tmp_path.resolve() / 'skills.db'}"


def test_bad_values_name_the_variable_and_the_problem() -> None:
    with pytest.raises(SettingsError) as raised:
        Settings.from_env({"SKILLS_FAILURE_LIMIT": "many", "SKILLS_LOG_FORMAT": "xml",
                           "SKILLS_CHAT_HISTORY_TURNS": "0"}, default_agent_id="agent")
    by_field = {e["field"]: e["message"] for e in raised.value.errors}
    assert set(by_field) == {"SKILLS_FAILURE_LIMIT", "SKILLS_LOG_FORMAT", "SKILLS_CHAT_HISTORY_TURNS"}
    assert "valid integer" in by_field["SKILLS_FAILURE_LIMIT"] and "'many'" in by_field["SKILLS_FAILURE_LIMIT"]
    assert "'text' or 'json'" in by_field["SKILLS_LOG_FORMAT"]
    assert "greater than or equal to 1" in by_field["SKILLS_CHAT_HISTORY_TURNS"]

    with pytest.raises(SettingsError) as raised:
        Settings.from_env({}, file_skills_agent="")  # an override is named as the field it is
    assert [e["field"] for e in raised.value.errors] == ["file_skills_agent"]


def zone_of_a_process(tz: str) -> str:
    """The time zone a fresh process reads (tzlocal caches it for the life of a process)."""
    code = "from config.settings import Settings, system_timezone; print(system_timezone(), Settings.from_env().timezone)"
    done = subprocess.run([PYTHON, "-c", code], cwd=ROOT, env={**os.environ, "TZ": tz}, capture_output=True,
                          text=True, timeout=60, check=True)
    found, in_settings = done.stdout.split()
    assert found == in_settings
    return found


def test_the_system_time_zone_comes_from_tzlocal() -> None:
    assert zone_of_a_process("America/Sao_Paulo") == "America/Sao_Paulo"
    assert zone_of_a_process(":Europe/Paris") == "Europe/Paris"  # the POSIX form, with a colon
    ZoneInfo(zone_of_a_process("Not/AZone"))  # unusable: the machine's configuration, or UTC


def test_the_health_port_is_a_port_zero_or_off() -> None:
    assert Settings.from_env({}).health_port == 8080
    assert Settings.from_env({"SKILLS_HEALTH_PORT": "0"}).health_port == 0
    for off in ("off", "none", "OFF"):
        assert Settings.from_env({"SKILLS_HEALTH_PORT": off}).health_port is None
    with pytest.raises(SettingsError) as bad:
        Settings.from_env({"SKILLS_HEALTH_PORT": "70000"})
    assert bad.value.errors[0]["field"] == "SKILLS_HEALTH_PORT" and "65535" in bad.value.errors[0]["message"]
    traced = Settings.from_env({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"})
    assert traced.otel_endpoint == "http://collector:4318"
    assert Settings.from_env({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://a:4318", "SKILLS_OTEL_ENDPOINT": "http://b:4318"}
                             ).otel_endpoint == "http://b:4318"


def test_scripts_are_off_by_default_and_their_limits_are_settings() -> None:
    default = Settings()
    assert default.scripts_enabled is False and default.bwrap_path == "bwrap"
    assert (default.script_timeout, default.script_output_bytes, default.script_max_args,
            default.script_max_arg_bytes) == (timedelta(seconds=60), 1_048_576, 100, 4096)
    settings = Settings.from_env({"SKILLS_SCRIPTS_ENABLED": "true", "SKILLS_SCRIPT_TIMEOUT": "2.5",
                                  "SKILLS_BWRAP_PATH": "/opt/bwrap", "SKILLS_SCRIPT_PROCESSES": "8"})
    assert settings.scripts_enabled and settings.script_timeout == timedelta(seconds=2.5)
    assert settings.bwrap_path == "/opt/bwrap" and settings.script_processes == 8
    with pytest.raises(SettingsError) as refused:
        Settings.from_env({"SKILLS_SCRIPT_PROCESSES": "1", "SKILLS_SCRIPT_TIMEOUT": "0"})
    assert {e["field"] for e in refused.value.errors} == {"SKILLS_SCRIPT_PROCESSES", "SKILLS_SCRIPT_TIMEOUT"}
