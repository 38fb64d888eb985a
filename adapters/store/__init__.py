"""The skill store: SQLModel tables (``tables``), the database they live in (``database``: SQLite by
default, PostgreSQL at scale), its schema migrations (``migrations``) and the repository every
process uses to read and write it (``repository.Store``)."""

from adapters.store.repository import ScheduledSkill, Store

__all__ = ["ScheduledSkill", "Store"]
