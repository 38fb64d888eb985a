"""What a registration pays to know whether a new Agent-tier cron's minute is crowded
(``skills.when.spread``): the store's count of the enabled crons by (cron, zone), one query, and the pure
``crowd`` over it, with N skills stored. Only a new Agent-tier cron that is not a reminder pays it; a Direct
registration (bench.register's) pays nothing. Printed beside a registration's CPU in this process as
docs/performance.md gives it (19.2 ms), there being no raw Temporal counterpart.

    .venv/bin/python -m bench.spread_count [--n 1000] [--rounds 200]
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from adapters.store import Store
from skills.spec.models import SkillSpec, TriggerConfig
from skills.when.spread import crowd

ZONES = ("UTC", "Europe/Berlin", "America/New_York", "Asia/Kolkata")


def stored(store: Store, n: int) -> None:
    """``n`` enabled crons: a third at 09:00, the rest at other minutes, hours and zones (few shared)."""
    rng = random.Random(53)
    now = datetime(2027, 3, 1, tzinfo=UTC)
    for i in range(n):
        schedule = "0 9 * * *" if i % 3 == 0 else f"{rng.randrange(60)} {rng.randrange(24)} * * {rng.choice('*12345')}"
        spec = SkillSpec.model_validate({"agent_id": f"owner{i % 20}", "name": f"s{i}", "trigger_type": "cron",
                                         "instructions": "x", "trigger_config": {"schedule": schedule,
                                                                                 "timezone": rng.choice(ZONES)}})
        store.skills.create_skill(spec, trigger_as_written=None, disabled_reason=None, now=now)


def main(n: int, rounds: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        store = Store.open(f"sqlite:///{Path(folder) / 'bench.db'}")
        stored(store, n)
        trigger = TriggerConfig(schedule="0 9 * * *", timezone="Europe/Berlin")
        now = datetime(2027, 3, 1, 6, tzinfo=UTC)
        store.skills.cron_counts()  # the repositories built, as in a worker that has served a request
        wall = cpu = 0.0
        for i in range(rounds):
            # As at a registration after the one before it: a skill more, so the count is read again.
            store.skills.create_skill(
                SkillSpec.model_validate({"agent_id": "bench", "name": f"new{i}", "trigger_type": "cron",
                                          "instructions": "x", "trigger_config": trigger.model_dump()}),
                trigger_as_written=None, disabled_reason=None, now=now)
            wall_at, cpu_at = time.perf_counter(), time.process_time()
            counts = store.skills.cron_counts()
            wall, cpu = wall + time.perf_counter() - wall_at, cpu + time.process_time() - cpu_at
        query = (wall / rounds * 1000, cpu / rounds * 1000)
        started, cpu = time.perf_counter(), time.process_time()
        for _ in range(rounds):
            found = crowd(trigger, counts, now)
        pure = ((time.perf_counter() - started) / rounds * 1000, (time.process_time() - cpu) / rounds * 1000)
    print(f"skills stored: {n:,} (+{rounds} at 09:00 Berlin, one a round; {len(counts):,} distinct cron and zone); "
          f"busiest minute shared by {found.skills:,}")
    print(f"store count (cron_counts): {query[0]:.2f} ms wall, {query[1]:.2f} ms CPU")
    print(f"crowd over it (pure):      {pure[0]:.2f} ms wall, {pure[1]:.2f} ms CPU")
    print(f"together: {query[1] + pure[1]:.2f} ms CPU a registration, beside 19.2 ms of a registration's in this "
          "process (docs/performance.md, Registrations)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=200)
    args = parser.parse_args()
    main(args.n, args.rounds)
