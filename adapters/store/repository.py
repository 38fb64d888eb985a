"""The skill store: the tables (``adapters.store.tables``) behind one repository per aggregate.

SQLite by default, PostgreSQL through the same code (only the URL changes). The
store is the source of truth for skills; schedules are derived from it. The
table models never leave the store: callers get the plain pydantic models of
``skills.spec.models``.

:class:`Store` is what the worker wires: one engine, and the repositories over it (``store.skills``,
``store.runs``, ...), each in its own module. Their methods are synchronous on purpose (``base``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlalchemy.engine import Engine

from adapters.store.approvals import ApprovalRepository
from adapters.store.base import Repository
from adapters.store.conversations import ConversationRepository
from adapters.store.database import open_database
from adapters.store.events import EventRepository
from adapters.store.revisions import RevisionRepository
from adapters.store.runs import RunRepository
from adapters.store.skills import SkillRepository
from adapters.store.trust import TrustRepository

if TYPE_CHECKING:
    from config.settings import Settings


class Store(Repository):
    """The store's repositories over one engine, each a short transaction per call."""

    def __init__(self, engine: Engine, schedule_prefix: str = "skills") -> None:
        super().__init__(engine)
        self.revisions = RevisionRepository(engine)
        self.skills = SkillRepository(engine, self.revisions, schedule_prefix)
        self.runs = RunRepository(engine, self.skills)
        self.approvals = ApprovalRepository(engine)
        self.conversations = ConversationRepository(engine)
        self.events = EventRepository(engine)
        self.trust = TrustRepository(engine)

    @classmethod
    def open(cls, url: str, schedule_prefix: str = "skills") -> Store:
        """The store at ``url``: its database created if missing (PostgreSQL), its schema migrated
        to the newest revision. Raises :class:`StoreUnavailableError` (one line) when it cannot."""
        return cls(open_database(url), schedule_prefix)

    @classmethod
    def from_settings(cls, settings: Settings) -> Store:
        """The worker's store: at ``store_url``, its schedules named after the task queue, keeping
        ``max_revisions_per_skill`` revisions a skill."""
        store = cls.open(settings.store_url, schedule_prefix=settings.task_queue)
        store.max_revisions = settings.max_revisions_per_skill
        return store

    @property
    def max_revisions(self) -> int:
        """Revisions kept a skill (``RevisionRepository.max_revisions``; :meth:`from_settings` sets it)."""
        return self.revisions.max_revisions

    @max_revisions.setter
    def max_revisions(self, value: int) -> None:
        self.revisions.max_revisions = value
