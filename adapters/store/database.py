"""Opening the store's database: the engine, the database itself if it is missing (PostgreSQL),
the schema brought up to date (``adapters.store.migrations``), and every way this can fail said in
one line that names ``SKILLS_DATABASE_URL`` (its password masked), never a traceback."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import text
from sqlalchemy.engine import Engine
from sqlalchemy.exc import DBAPIError, SQLAlchemyError

from adapters.store import migrations
from adapters.store.engine import make_engine
from config.secrets import mask_url, redact
from config.settings import database_url
from skills.errors import StoreUnavailableError

MAINTENANCE_DB = "postgres"


def open_database(url: str) -> Engine:
    """An engine on ``url``'s database, which exists and is at the newest schema revision."""
    try:
        url = database_url(url)
    except ValueError as e:
        raise StoreUnavailableError(f"SKILLS_DATABASE_URL: {e}") from None
    where = f"SKILLS_DATABASE_URL={mask_url(url)}"
    if url.startswith("sqlite:///"):
        Path(url.removeprefix("sqlite:///")).parent.mkdir(parents=True, exist_ok=True)
    engine = make_engine(url)
    try:
        _connect_or_create(engine, where)
        migrations.upgrade(engine)
    except StoreUnavailableError:
        engine.dispose()
        raise
    except SQLAlchemyError as e:
        engine.dispose()
        raise StoreUnavailableError(f"{where}: the schema could not be brought up to date: {_reason(e)}") from e
    return engine


def _connect_or_create(engine: Engine, where: str) -> None:
    try:
        with engine.connect():
            return
    except DBAPIError as e:
        failure = e
    if engine.dialect.name != "postgresql" or not engine.url.database:
        raise StoreUnavailableError(f"{where}: cannot connect: {_reason(failure)}") from None
    # Perhaps the server is fine and the database missing: ask the maintenance database.
    name = engine.url.database
    maintenance = make_engine(engine.url.set(database=MAINTENANCE_DB).render_as_string(hide_password=False))
    admin = maintenance.execution_options(isolation_level="AUTOCOMMIT")  # CREATE DATABASE runs outside a transaction
    try:
        with admin.connect() as conn:
            exists = conn.execute(text("SELECT 1 FROM pg_database WHERE datname = :name"), {"name": name}).first()
            if exists:
                raise StoreUnavailableError(f"{where}: cannot connect: {_reason(failure)}") from None
            try:
                conn.execute(text(f'CREATE DATABASE "{name.replace(chr(34), chr(34) * 2)}"'))
            except DBAPIError as e:
                if not _already_created(maintenance, name):
                    raise StoreUnavailableError(
                        f"{where}: the database '{name}' does not exist and could not be created "
                        f"({_reason(e)}): create it (createdb -h {engine.url.host} -U <admin> {name}) "
                        f"or grant this user CREATEDB") from None
    except DBAPIError:
        raise StoreUnavailableError(f"{where}: cannot connect: {_reason(failure)}") from None
    finally:
        maintenance.dispose()


def _already_created(maintenance: Engine, name: str) -> bool:
    """Another worker created it at the same moment."""
    with maintenance.connect() as conn:
        return conn.execute(text("SELECT 1 FROM pg_database WHERE datname = :name"), {"name": name}).first() is not None


def _reason(error: BaseException) -> str:
    """The driver's message on one line, with no secret in it."""
    cause = getattr(error, "orig", None) or error
    lines = [line.strip() for line in str(cause).splitlines() if line.strip()]
    lines = [line for line in lines if not line.startswith("(Background on this error")]
    return redact(" ".join(lines)) or type(cause).__name__
