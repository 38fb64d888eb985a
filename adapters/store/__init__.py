"""The skill store: SQLModel tables (``tables``), the database they live in (``database``: SQLite by
default, PostgreSQL at scale), its schema migrations (``migrations``), one repository per aggregate
(``skills``, ``revisions``, ``runs``, ``approvals``, ``conversations``, ``events``, ``trust``, over
``base``) and the facade every process opens (``repository.Store``)."""

from adapters.store.repository import Store
from adapters.store.runs import ScheduledSkill

__all__ = ["ScheduledSkill", "Store"]
