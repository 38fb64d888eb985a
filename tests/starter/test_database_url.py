"""SKILLS_DATABASE_URL as a user gives it: ``postgresql://`` or ``postgresql+psycopg://``, a
database that does not exist yet, and every wrong URL (no server there, a wrong password, a role
that may not create the database, an unknown scheme, a malformed URL) said in one line that
names the variable with the password masked, never a traceback: at `skills setup`, at
`skills dev` and when the worker starts."""

from __future__ import annotations

import subprocess
from pathlib import Path

import psycopg
import pytest
from temporalio.client import Client

from adapters.store import migrations
from config.settings import Settings, SettingsError
from tests.conftest import ROOT, free_port, worker_process
from tests.postgres import LIMITED_ROLE, SECURED_PASSWORD, SECURED_ROLE, PostgresCluster
from tests.starter.test_cli import SKILLS, address_of, clean_env, run_skills

WRONG = "pg-wrong-password"


def wrong_urls(postgres: PostgresCluster) -> dict[str, tuple[str, str]]:
    """A wrong URL of each kind: (url, what the one line says)."""
    nowhere = f"postgresql://skills:{WRONG}@127.0.0.1:{free_port()}/skills"
    return {
        "no server": (nowhere, "cannot connect"),
        "wrong password": (f"postgresql://{SECURED_ROLE}:{WRONG}@127.0.0.1:{postgres.port}/postgres",
                           "password authentication failed"),
        "may not create": (postgres.url("nothere", user=LIMITED_ROLE).replace("@", f":{WRONG}@"),
                           "could not be created"),
        "unknown scheme": (f"mysql://skills:{WRONG}@127.0.0.1/skills", "unsupported database 'mysql'"),
        "malformed": (f"postgresql://skills:{WRONG}@127.0.0.1:port/skills", "not a database URL"),
    }


def assert_one_clear_line(output: str, says: str) -> None:
    assert "Traceback" not in output and WRONG not in output, output
    [line] = [line for line in output.splitlines() if "SKILLS_DATABASE_URL" in line]
    assert says in line and "***" in line, output


@pytest.mark.parametrize("kind", ["no server", "wrong password", "may not create", "unknown scheme", "malformed"])
def test_setup_says_what_is_wrong_with_the_url_in_one_line(postgres: PostgresCluster, kind: str) -> None:
    url, says = wrong_urls(postgres)[kind]
    done = run_skills("setup", SKILLS_DATABASE_URL=url)
    assert done.returncode in (1, 2) and done.stdout == ""
    assert_one_clear_line(done.stderr, says)
    if kind == "may not create":
        assert "createdb" in done.stderr and "CREATEDB" in done.stderr


def test_the_worker_exits_with_one_line(postgres: PostgresCluster, settings: Settings, client: Client) -> None:
    for kind in ("wrong password", "unknown scheme"):  # refused by the store, refused by the settings
        url, says = wrong_urls(postgres)[kind]
        with worker_process(settings, address_of(client), SKILLS_DATABASE_URL=url) as worker:
            assert worker.process is not None
            assert worker.process.wait(timeout=60) in (1, 2)  # 2: settings refused before anything starts
        log = worker.log.read_text()
        assert_one_clear_line(log, says)
        worker.log.unlink()


def test_skills_dev_stops_at_a_wrong_url_before_starting_anything(postgres: PostgresCluster, tmp_path: Path) -> None:
    url, says = wrong_urls(postgres)["wrong password"]
    done = subprocess.run([str(SKILLS), "dev", "--config", str(ROOT / "temporal-dev.yaml"),
                           "--address", f"127.0.0.1:{free_port()}"],
                          cwd=tmp_path, env=clean_env(SKILLS_DATABASE_URL=url), capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 1
    assert_one_clear_line(done.stderr, says)
    assert not (tmp_path / ".data" / "temporal.log").exists()  # no dev server was started


def test_a_missing_database_is_created_and_either_scheme_works(postgres: PostgresCluster, client: Client) -> None:
    for scheme, name in (("postgresql", "made_by_setup"), ("postgresql+psycopg", "made_too")):
        url = f"{scheme}://{SECURED_ROLE}:{SECURED_PASSWORD}@127.0.0.1:{postgres.port}/{name}"
        done = run_skills("setup", "--address", address_of(client), SKILLS_DATABASE_URL=url)
        assert done.returncode == 0, done.stderr
        masked = f"postgresql+psycopg://{SECURED_ROLE}:***@127.0.0.1:{postgres.port}/{name}"
        assert done.stdout.splitlines()[0] == f"store {masked} at schema revision {migrations.head()}"
        with psycopg.connect(postgres.url(name).replace("+psycopg", "")) as conn:
            assert conn.execute("SELECT version_num FROM alembic_version").fetchone() == (migrations.head(),)


def test_settings_normalize_the_scheme_and_mask_a_refused_url() -> None:
    settings = Settings.from_env({"SKILLS_DATABASE_URL": "postgres://u:pw@db:5432/skills"})
    assert settings.store_url == "postgresql+psycopg://u:pw@db:5432/skills"
    with pytest.raises(SettingsError) as raised:
        Settings.from_env({"SKILLS_DATABASE_URL": "oracle://u:pw-secret@db/skills"})
    [problem] = raised.value.errors
    assert problem["field"] == "SKILLS_DATABASE_URL" and "pw-secret" not in problem["message"]
    assert "unsupported database 'oracle'" in problem["message"]
