"""The fuzz suite: generated registrations and SKILL.md files, hostile values included, on the
whole path (tests/fuzz/strategies.py says what is generated).

`make test` runs a bounded number of examples, derandomized, so CI is deterministic; a deeper run
is ``SKILLS_FUZZ_EXAMPLES=2000 HYPOTHESIS_PROFILE=deep .venv/bin/python -m pytest tests/fuzz``."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, Phase, settings

EXAMPLES = int(os.environ.get("SKILLS_FUZZ_EXAMPLES", "60"))
"""Examples per property in `make test`: the registrations each reach a real worker."""

PHASES = (Phase.explicit, Phase.reuse, Phase.generate)
"""No shrinking by default: a failing example that went through a real worker takes minutes to
shrink. The deep profile shrinks (``HYPOTHESIS_PROFILE=deep``)."""


def fuzz_settings(examples: int) -> settings:
    """The suite's settings: derandomized in `make test`, so CI runs the same examples each time.
    Big and slow inputs are the point here, and the worker fixture is shared by the examples."""
    deep = os.environ.get("HYPOTHESIS_PROFILE") == "deep"
    return settings(max_examples=examples, deadline=None, derandomize=not deep,
                    database=settings.default.database if deep else None,
                    phases=tuple(Phase) if deep else PHASES, print_blob=True,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                           HealthCheck.data_too_large, HealthCheck.large_base_example])
