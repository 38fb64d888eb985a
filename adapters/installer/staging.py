"""The staging folder's lifetime: the folders an install creates, removed again after a refusal."""

from __future__ import annotations

import shutil
from contextlib import suppress
from pathlib import Path


def make_dirs(folder: Path) -> list[Path]:
    """Create ``folder`` and missing parents; the ones created, deepest first (to remove them after a refusal)."""
    missing = []
    current = folder
    while not current.exists():
        missing.append(current)
        current = current.parent
    folder.mkdir(parents=True, exist_ok=True)
    return missing


def clean_up(stage: Path, created: list[Path]) -> None:
    """After a refusal: the staging folder goes, and so do the folders the install created."""
    remove_tree(stage)
    with suppress(OSError):
        for folder in created:
            folder.rmdir()


def remove_tree(folder: Path) -> None:
    if folder.exists():
        shutil.rmtree(folder, ignore_errors=True)
