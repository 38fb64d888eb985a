"""The skill store: SQLModel tables (``tables``), the database they live in (``database``: SQLite by
default, PostgreSQL at scale), its schema migrations (``migrations``), one repository per aggregate
(``skills``, ``revisions``, ``runs``, ``approvals``, ``conversations``, ``events``, ``trust``, over
``base``) and the facade every process opens (``repository.Store``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from adapters.store.repository import Store

if TYPE_CHECKING:
    from adapters.store.runs import ScheduledSkill

__all__ = ["ScheduledSkill", "Store"]


def __getattr__(name: str) -> Any:
    # ``ScheduledSkill`` with the repositories that read it, not with the store (``repository.Store``).
    if name == "ScheduledSkill":
        from adapters.store.runs import ScheduledSkill

        return ScheduledSkill
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
