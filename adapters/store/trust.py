"""The owner's trust in file skills' executable parts: the digest trusted, by skill name."""

from __future__ import annotations

from datetime import datetime

from sqlmodel import select

from adapters.store.base import Repository
from adapters.store.tables import TrustRow


class TrustRepository(Repository):
    """Trust records of file skills."""

    def trusted(self, names: list[str]) -> dict[str, tuple[str, datetime]]:
        """The digest the owner trusted, and when, of each of ``names`` that has a record."""
        if not names:
            return {}
        with self.session() as session:
            rows = session.exec(select(TrustRow).where(TrustRow.name.in_(names)))  # type: ignore[attr-defined]
            return {row.name: (row.digest, row.trusted_at) for row in rows}

    def set_trust(self, name: str, digest: str, covers: list[str], now: datetime) -> None:
        with self.session() as session:
            row = session.get(TrustRow, name) or TrustRow(name=name, digest=digest, trusted_at=now)
            row.digest, row.covers, row.trusted_at = digest, covers, now
            session.add(row)
            session.commit()

    def remove_trust(self, name: str) -> bool:
        """Forget the owner's trust in ``name``; False if there was none."""
        with self.session() as session:
            row = session.get(TrustRow, name)
            if row is None:
                return False
            session.delete(row)
            session.commit()
            return True
