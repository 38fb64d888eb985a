"""The engine's outbox replaced by the held one (``held_outbox.py``): it stores a message as the outbox does, then
holds its answer while a file exists. For tests that act while a call is in flight (a worker killed, an overlap
decided)."""

from __future__ import annotations

import sys
from pathlib import Path

from config.settings import Settings
from tests.conftest import ROOT, write_mcp_config

FAKES = Path(__file__).parent


def held_outbox(settings: Settings, tmp_path: Path) -> tuple[Settings, Path]:
    """The engine's outbox server replaced by the held one, on the same file; its answers are held while the
    returned file exists."""
    hold = tmp_path / "hold"
    hold.touch()
    config = write_mcp_config(tmp_path / "mcp.json", {"outbox": {
        "command": sys.executable, "args": [str(FAKES / "held_outbox.py")], "cwd": str(ROOT),
        "env": {"SKILLS_OUTBOX_PATH": str(settings.outbox_path), "FAKE_HOLD": str(hold),
                "PYTHONPATH": str(ROOT)}}})
    return settings.model_copy(update={"mcp_config": config}), hold


def release(hold: Path) -> None:
    """Let the held answers go."""
    hold.unlink()
