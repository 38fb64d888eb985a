"""``python -m adapters.store.migrations revision "message"``: a new revision from the models' changes."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from alembic import command
from sqlalchemy import create_engine

from adapters.store.migrations import alembic_config, head, upgrade


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[0] != "revision":
        print(__doc__, file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as scratch:
        engine = create_engine(f"sqlite:///{Path(scratch) / 'scratch.db'}")
        upgrade(engine)
        with engine.begin() as conn:
            # Revisions are numbered in order: 0004_what_changed.py follows 0003.
            command.revision(alembic_config(conn), message=argv[1], autogenerate=True, rev_id=f"{int(head()) + 1:04d}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
