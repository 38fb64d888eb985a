"""`skills chat`'s conversation across commands: the terminal user's last session, kept in the data folder.

A proposal says "reply `skills chat yes` to make it": so the next `skills chat` goes on with the session that
proposed, as long as a proposal of it waits for the owner's answer, and the engine reads that yes itself (no
model is asked). With nothing waiting, a message starts a new conversation, as before; `--new` always does.
The file holds one session id, per user of this machine (``chat-session.<uid>``), written by the user alone.
"""

from __future__ import annotations

import contextlib
import getpass
import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from client import SkillsClient

CLI_ANSWER = "reply `skills chat yes` to make it or `skills chat no` to cancel"
"""How a proposal shown in a terminal is answered: the command that sends the yes to its session."""
MAX_SESSION_CHARS = 200
"""A session id read back longer than this (or with a control character) is not one this command wrote."""


def session_file(data_dir: Path) -> Path:
    """The file of this terminal user's last session: by user id (by name where there are no ids)."""
    who = str(os.getuid()) if hasattr(os, "getuid") else "".join(c for c in getpass.getuser() if c.isalnum())
    return data_dir / f"chat-session.{who}"


def last_session(data_dir: Path) -> str | None:
    """The session this user's last `skills chat` went on with, or None (none yet, or unreadable)."""
    try:
        text = session_file(data_dir).read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return None
    if not text or len(text) > MAX_SESSION_CHARS or not text.isprintable():
        return None
    return text


def remember(data_dir: Path, session: str) -> None:
    """Keep ``session`` as this user's last (written whole, then moved into place; only its owner reads it).
    A data folder that cannot be written costs only the going on, never the turn."""
    path = session_file(data_dir)
    with contextlib.suppress(OSError):
        data_dir.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "w", encoding="utf-8") as file:
            file.write(session + "\n")
        os.replace(partial, path)


async def going_on(skills: SkillsClient, data_dir: Path) -> tuple[str | None, str]:
    """The session a `skills chat` without ``--session`` goes on with: the user's last one while a change it
    proposed waits for an answer (else None: a new one), and a note saying so for stderr."""
    last = last_session(data_dir)
    if last is None:
        return None, ""
    waiting = sorted(a.id for a in await skills.approvals(limit=200) if a.kind == "change" and a.session_id == last)
    if not waiting:
        return None, ""
    ids = ", ".join(f"#{i}" for i in waiting)
    return last, f"going on with session {last}: {ids} waits for your answer; --new starts afresh"
