"""The skill store: the tables (``adapters.store.tables``) behind one repository per aggregate.

SQLite by default, PostgreSQL through the same code (only the URL changes). The
store is the source of truth for skills; schedules are derived from it. The
table models never leave the store: callers get the plain pydantic models of
``skills.spec.models``.

:class:`Store` is what the worker wires: one engine, and the repositories over it (``store.skills``,
``store.runs``, ...), each in its own module. Their methods are synchronous on purpose (``base``).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from sqlalchemy.engine import Engine

from adapters.store.database import open_database
from skills.spec.revisions import DEFAULT_MAX_REVISIONS

if TYPE_CHECKING:
    from sqlmodel import Session

    from adapters.store.approvals import ApprovalRepository
    from adapters.store.conversations import ConversationRepository
    from adapters.store.events import EventRepository
    from adapters.store.revisions import RevisionRepository
    from adapters.store.runs import RunRepository
    from adapters.store.skills import SkillRepository
    from adapters.store.trust import TrustRepository
    from config.settings import Settings

REPOSITORIES = ("revisions", "skills", "runs", "approvals", "conversations", "events", "trust")


class Store:
    """The store's repositories over one engine, each a short transaction per call.

    The engine is opened (and the schema migrated) at once; the repositories, with SQLAlchemy's ORM, SQLModel and
    the tables they import, are built together at the first one asked for: a worker answers ``/readyz`` and polls
    with the engine alone, and an idle worker holds none of them (docs/performance.md, "Worker RSS")."""

    revisions: RevisionRepository
    skills: SkillRepository
    runs: RunRepository
    approvals: ApprovalRepository
    conversations: ConversationRepository
    events: EventRepository
    trust: TrustRepository

    def __init__(self, engine: Engine, schedule_prefix: str = "skills") -> None:
        self.engine = engine
        self._schedule_prefix = schedule_prefix
        self._max_revisions = DEFAULT_MAX_REVISIONS
        self._building = threading.Lock()
        self._built = False

    def __getattr__(self, name: str) -> Any:
        # Called only for an attribute not set yet: a repository before the first was built.
        if name not in REPOSITORIES:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        self._build_repositories()
        return self.__dict__[name]

    def _build_repositories(self) -> None:
        """Every repository at once, under a lock: threads asking first at the same time share one set (the
        skills repository keeps a cache)."""
        with self._building:
            if self._built:
                return
            from adapters.store.approvals import ApprovalRepository
            from adapters.store.conversations import ConversationRepository
            from adapters.store.events import EventRepository
            from adapters.store.revisions import RevisionRepository
            from adapters.store.runs import RunRepository
            from adapters.store.skills import SkillRepository
            from adapters.store.trust import TrustRepository

            revisions = RevisionRepository(self.engine)
            revisions.max_revisions = self._max_revisions
            skills = SkillRepository(self.engine, revisions, self._schedule_prefix)
            built = {"revisions": revisions, "skills": skills, "runs": RunRepository(self.engine, skills),
                     "approvals": ApprovalRepository(self.engine),
                     "conversations": ConversationRepository(self.engine),
                     "events": EventRepository(self.engine), "trust": TrustRepository(self.engine)}
            for name in REPOSITORIES:
                self.__dict__.setdefault(name, built[name])  # one a caller set itself stays
            self._built = True

    @contextmanager
    def session(self) -> Iterator[Session]:
        """A short session on the store's engine (``Repository.session``)."""
        from sqlmodel import Session

        with Session(self.engine, expire_on_commit=False) as session:
            yield session

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
        return self.revisions.max_revisions if "revisions" in self.__dict__ else self._max_revisions

    @max_revisions.setter
    def max_revisions(self, value: int) -> None:
        self._max_revisions = value
        if "revisions" in self.__dict__:
            self.revisions.max_revisions = value
