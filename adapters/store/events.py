"""Events and hooks: the skills an event wakes, each skill's hook token (POST /hooks/<skill>), and the
claims that make one event id run once.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import delete, func
from sqlmodel import select

from adapters.store.base import Repository, insert_or_ignore, skill_model, skill_row
from adapters.store.tables import SeenEventRow, SkillRow
from skills.spec.models import Skill
from skills.when.hooks import HOOKED_SKILLS_LIMIT


class EventRepository(Repository):
    """Event subscribers, hook tokens and event claims."""

    def event_subscribers(self, name: str) -> list[Skill]:
        """The event-type skills subscribed to the event ``name`` (exact match), enabled or not."""
        with self.session() as session:
            query = (select(SkillRow).where(SkillRow.trigger_type == "event")
                     .order_by(SkillRow.agent_id, SkillRow.name))
            return [skill_model(row) for row in session.exec(query)
                    if (row.trigger_config or {}).get("event") == name]

    def set_hook(self, skill_id: int, digest: str | None, now: datetime) -> Skill:
        """Set (replacing any earlier one) or, with None, remove the digest of a skill's hook token."""
        with self.session() as session:
            row = skill_row(session, skill_id)
            row.hook_digest = digest
            row.updated_at = now
            session.add(row)
            session.commit()
            return skill_model(row)

    def hook_digests(self, ref: str) -> list[tuple[int, str]]:
        """The skills ``ref`` names (an id, or a name across agents, case-insensitive) that have a hook
        token, each as its id and its token's digest: the token decides among same-named skills of two
        agents. Only the two columns are read: the work is the same whether a skill matches or not."""
        with self.session() as session:
            query = select(SkillRow.id, SkillRow.hook_digest).where(  # type: ignore[call-overload]
                SkillRow.hook_digest.is_not(None))  # type: ignore[union-attr]
            if ref.isascii() and ref.isdigit() and len(ref) <= 18:
                query = query.where(SkillRow.id == int(ref))
            else:
                query = query.where(func.lower(SkillRow.name) == ref.strip().lower())
            return [(skill_id, digest or "") for skill_id, digest in session.exec(query.limit(HOOKED_SKILLS_LIMIT))]

    def claim_event(self, name: str, event_id: str, claimer: str, now: datetime,
                    window: timedelta) -> SeenEventRow | None:
        """Claim an event id for ``claimer``: None when it is now (or already was) the claimer's,
        else the earlier claim still within ``window``. Claims past the window are forgotten."""
        with self.session() as session:
            session.exec(delete(SeenEventRow).where(SeenEventRow.seen_at < now - window))  # type: ignore[call-overload,arg-type]
            # Insert or keep the claim already there: two emits of one id at the same instant (two
            # workers, two engines) both succeed here, and the row says whose it is.
            session.execute(insert_or_ignore(self.engine, SeenEventRow(name=name, event_id=event_id, seen_at=now,
                                                                        claimer=claimer)))
            session.commit()
            row = session.get(SeenEventRow, (name, event_id))
            return row if row is not None and row.claimer != claimer else None

    def record_event(self, name: str, event_id: str, claimer: str, result: dict[str, Any]) -> None:
        """Keep what the claimer's emit did, for a duplicate's answer."""
        with self.session() as session:
            row = session.get(SeenEventRow, (name, event_id))
            if row is not None and row.claimer == claimer:
                row.result = result
                session.add(row)
                session.commit()
