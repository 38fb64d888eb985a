"""The store's URL as the settings take it (``SKILLS_DATABASE_URL``): which databases the engine opens, each
URL checked and its driver named, and a bad one told with its password masked."""

from __future__ import annotations

from skills import linear

POSTGRES_DRIVER = "postgresql+psycopg"
DATABASE_SCHEMES = {"sqlite": "sqlite", "sqlite+pysqlite": "sqlite+pysqlite", "postgresql": POSTGRES_DRIVER,
                    "postgres": POSTGRES_DRIVER, POSTGRES_DRIVER: POSTGRES_DRIVER}
DATABASE_EXAMPLES = "sqlite:///path/to/skills.db or postgresql://user:password@host:5432/dbname"


def database_url(url: str) -> str:
    """``url`` as the store opens it: ``postgresql://`` and ``postgres://`` mean psycopg 3 (the
    driver installed with the engine). Raises ValueError, the URL's password masked, for a URL
    that is malformed, of another database, or that names no database."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        parsed = make_url(url.strip())
    except (ArgumentError, ValueError):
        raise ValueError(f"not a database URL: {_mask_any_password(url)!r}; expected {DATABASE_EXAMPLES}") from None
    driver = DATABASE_SCHEMES.get(parsed.drivername)
    if driver is None:
        raise ValueError(f"unsupported database '{parsed.drivername}' in "
                         f"{parsed.render_as_string(hide_password=True)!r}; expected {DATABASE_EXAMPLES}")
    if not parsed.database:
        raise ValueError(f"{parsed.render_as_string(hide_password=True)!r} names no database; "
                         f"expected {DATABASE_EXAMPLES}")
    return parsed.set(drivername=driver).render_as_string(hide_password=False)


def _mask_any_password(url: str) -> str:
    """A URL that did not parse, with whatever stands between ``user:`` and ``@`` masked."""
    return linear.sub(r"(//[^/:@]*:)[^@]*@", r"\1***@", url)
