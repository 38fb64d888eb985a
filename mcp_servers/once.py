"""Served idempotency keys: a repeated ``tools/call`` is answered with its first result, acting once.

The engine sends every tool call with an idempotency key (``skills.run.idempotency``), the same on
every retry of that call: a worker that died after the server acted, a session lost before the
answer came back. A bundled server keeps the keys it has served in a small SQLite file beside its
data, for a bounded window (``SKILLS_IDEMPOTENCY_WINDOW_HOURS``, 24 by default, and at most
``SKILLS_IDEMPOTENCY_MAX_KEYS`` keys, 10000 by default), each with a digest of the call (tool and
arguments) and the result it gave:

- a key not seen: the call is made, and its result kept under the key;
- a key seen with the same call: the kept result, nothing done again;
- a key seen with another call: refused, naming the key (a key names one call, never two);
- a key whose call began and has not finished: a server that can tell whether the effect happened
  (the outbox finds the key in its own file) answers from what it finds; otherwise a call still
  running (begun under 30 s ago) is waited for; past that its process was killed in between, and a
  server that cannot tell (a message sent to Telegram) refuses rather than acting a second time:
  the error says the outcome is unknown;
- a call refused without acting frees its key (the retry may act); one refused after part of its
  effect (a long message's first parts sent) keeps that error as its result.

The key is read from the request's ``idempotencyKey`` parameter (the field SEP-3182 proposes) or
else its ``_meta`` (where the engine sends it). A call without a key is made as before.

The order, and why: the key is recorded as *begun* before the effect and as *done* with its result
after. A process killed between the effect and the *done* record leaves a begun key; a retry then
never makes a second effect blindly (at most once, with an error that says so) unless the server
can see its effect was not made. Recording only after the effect would repeat it on that retry.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import sqlite3
import threading
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Final, Literal

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent

from skills.run.idempotency import MAX_KEY_CHARS, META_KEY

WINDOW_ENV = "SKILLS_IDEMPOTENCY_WINDOW_HOURS"
MAX_KEYS_ENV = "SKILLS_IDEMPOTENCY_MAX_KEYS"
DEFAULT_WINDOW_HOURS = 24.0
DEFAULT_MAX_KEYS = 10_000
REQUEST_FIELD = "idempotencyKey"
"""The ``tools/call`` parameter SEP-3182 proposes for the key."""
IN_FLIGHT_SECONDS = 30.0
"""How long a begun call may still be running (the bundled servers' HTTP timeout): a repeat of it
within this waits for its result instead of calling it an unknown outcome."""
_POLL = 0.1
BUSY_SECONDS = 30.0
"""How long a call waits for the keys file while another connection (a thread, another server) writes it."""
_BUSY_POLL = 0.02

ACT: Final = "act"
"""A claim's answer: make the call now (it is recorded as begun)."""
WAIT: Final = "wait"
"""A claim's answer: the call is being made elsewhere right now; ask again in a moment."""
Claim = CallToolResult | Literal["act", "wait"]

Recover = Callable[[str], CallToolResult | None]
"""The result of a begun call whose effect the server can find (by key) in its own data, or None
when the effect was not made."""


def request_key(ctx: Context | None) -> str | None:
    """The request's idempotency key: its SEP-3182 parameter, else its ``_meta`` entry; None without one.
    A key that is not a short string of printable characters is refused."""
    if ctx is None:
        return None
    try:
        request = ctx.request_context
    except ValueError:  # called outside a request (a test calling the function itself)
        return None
    params: Mapping[str, Any] = request.params or {}
    meta: Mapping[str, Any] = request.meta or params.get("_meta") or {}
    key = params.get(REQUEST_FIELD, meta.get(META_KEY))
    if key is None or key == "":
        return None
    if not isinstance(key, str) or len(key) > MAX_KEY_CHARS or not key.isprintable():
        raise ToolError(f"the idempotency key must be a string of at most {MAX_KEY_CHARS} printable characters, "
                        f"got {str(key)[:60]!r}")
    return key


def call_digest(tool: str, arguments: Mapping[str, Any]) -> str:
    text = json.dumps({"tool": tool, "arguments": arguments}, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()


class PartlyDone(ToolError):  # noqa: N818 - a ToolError, named for what it says
    """A refusal that came after part of the effect was made (a long message's first parts were sent):
    kept as the key's result, so that a retry does not make that part a second time."""


class ServedKeys:
    """The keys one server has served, in a SQLite file (several processes may share it)."""

    def __init__(self, path: Path, *, window_seconds: float, max_keys: int) -> None:
        self.path = path
        self.window_seconds = window_seconds
        self.max_keys = max_keys

    @classmethod
    def from_env(cls, path: Path, environ: Mapping[str, str] | None = None) -> ServedKeys:
        """Bounded as the environment says (read on every call, like the servers' other settings)."""
        environ = os.environ if environ is None else environ
        hours = _number(environ, WINDOW_ENV, DEFAULT_WINDOW_HOURS)
        keys = int(_number(environ, MAX_KEYS_ENV, DEFAULT_MAX_KEYS))
        return cls(path, window_seconds=hours * 3600, max_keys=max(1, keys))

    @contextmanager
    def _db(self) -> Iterator[sqlite3.Connection]:
        """This thread's connection to the keys file, kept open from one call to the next: opening one costs
        its setup, and closing the last one checkpoints the WAL and removes it, each time. A file replaced
        or removed since (another inode at the path) gets a new connection; one that failed is dropped."""
        held: dict[Path, tuple[sqlite3.Connection, tuple[int, int]]] = _THREAD.__dict__.setdefault("held", {})
        found = held.get(self.path)
        if found is None or found[1] != _identity(self.path):
            if found is not None:
                found[0].close()
            db = self._connect()
            found = held[self.path] = (db, _identity(self.path))
        try:
            yield found[0]
        except sqlite3.Error:
            held.pop(self.path, None)
            found[0].close()
            raise

    def _connect(self) -> sqlite3.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(self.path, timeout=BUSY_SECONDS, isolation_level=None)
        try:
            _wal(db)
            db.execute("PRAGMA synchronous=FULL")  # a key recorded is a key kept, through a power cut too
            db.execute("CREATE TABLE IF NOT EXISTS served (key TEXT PRIMARY KEY, digest TEXT NOT NULL, "
                       "began REAL NOT NULL, done INTEGER NOT NULL DEFAULT 0, result TEXT)")
            # Every claim prunes by age and by count: by this index, not by a scan and a sort of every key
            # kept (a call cost 41 ms of CPU with the default cap's 10,000 keys kept, 3 ms with none).
            db.execute("CREATE INDEX IF NOT EXISTS served_began ON served (began)")
        except BaseException:
            db.close()
            raise
        return db

    def claim(self, key: str, digest: str, recover: Recover | None) -> Claim:
        """Begin the call under ``key``: :data:`ACT` when it is to be made now (recorded as begun); the
        first result when it was made; :data:`WAIT` while it is being made. Refuses (``ToolError``)
        another call under the key, and a begun call whose outcome cannot be known."""
        with self._db() as db:
            db.execute("BEGIN IMMEDIATE")  # one claim at a time across processes: check and record as one
            try:
                now = time.time()
                self._prune(db, now)
                row = db.execute("SELECT digest, began, done, result FROM served WHERE key = ?", (key,)).fetchone()
                if row is None:
                    db.execute("INSERT INTO served (key, digest, began) VALUES (?, ?, ?)", (key, digest, now))
                    self._cap(db)
                    db.execute("COMMIT")
                    return ACT
                kept_digest, began, done, result = row
                if kept_digest != digest:
                    raise ToolError(f"idempotency key {key!r} was already used for a different call (other "
                                    "arguments): a key names one call; send this one with a key of its own")
                if done:
                    db.execute("COMMIT")
                    return CallToolResult.model_validate_json(result)
                found = recover(key) if recover is not None else None
                if found is not None:
                    self._record(db, key, found)
                    db.execute("COMMIT")
                    return found
                if now - began < IN_FLIGHT_SECONDS:
                    db.execute("COMMIT")
                    return WAIT
                if recover is not None:  # the server's own data says the effect was not made: make it now
                    db.execute("UPDATE served SET began = ? WHERE key = ?", (now, key))
                    db.execute("COMMIT")
                    return ACT
                raise ToolError(f"a call with idempotency key {key!r} began {now - began:.0f} s ago and did not "
                                "finish (its server stopped in the middle): whether it took effect is unknown, so "
                                "it is not made a second time; check its destination and send it again with a new "
                                "key if it is missing")
            except BaseException:
                if db.in_transaction:
                    db.execute("ROLLBACK")
                raise

    def finish(self, key: str, result: CallToolResult) -> None:
        """Keep the result of the call made under ``key``."""
        with self._db() as db:
            self._record(db, key, result)

    def release(self, key: str) -> None:
        """Forget a begun call that failed without acting, so that its retry may act."""
        with self._db() as db:
            db.execute("DELETE FROM served WHERE key = ? AND done = 0", (key,))

    @staticmethod
    def _record(db: sqlite3.Connection, key: str, result: CallToolResult) -> None:
        db.execute("UPDATE served SET done = 1, result = ? WHERE key = ?",
                   (result.model_dump_json(by_alias=True, exclude_none=True), key))

    def _prune(self, db: sqlite3.Connection, now: float) -> None:
        db.execute("DELETE FROM served WHERE began < ?", (now - self.window_seconds,))

    def _cap(self, db: sqlite3.Connection) -> None:
        """Keep the newest ``max_keys`` keys: the first key past them, in the index's order, and all older."""
        past = db.execute("SELECT began, rowid FROM served ORDER BY began DESC, rowid DESC LIMIT 1 OFFSET ?",
                          (self.max_keys,)).fetchone()
        if past is not None:
            db.execute("DELETE FROM served WHERE began < ? OR (began = ? AND rowid <= ?)", (past[0], *past))

    def keys(self) -> list[str]:
        """The keys kept now, oldest first (for tests and inspection)."""
        if not self.path.exists():
            return []
        with self._db() as db:
            return [row[0] for row in db.execute("SELECT key FROM served ORDER BY began, rowid")]


async def once(ctx: Context | None, store: ServedKeys, tool: str, arguments: Mapping[str, Any],
               act: Callable[[str | None], Awaitable[CallToolResult]], recover: Recover | None = None
               ) -> CallToolResult:
    """Make the call ``act(key)`` once per idempotency key of the request (see the module's docstring);
    ``arguments`` are what tells one call from another under a key."""
    key = request_key(ctx)
    if key is None:
        return await act(None)
    digest = call_digest(tool, arguments)
    deadline = time.monotonic() + IN_FLIGHT_SECONDS + 5
    # SQLite's lock wait blocks: off the event loop, which serves the other requests meanwhile.
    claim = await asyncio.to_thread(store.claim, key, digest, recover)
    while claim == WAIT:
        if time.monotonic() > deadline:
            raise ToolError(f"a call with idempotency key {key!r} is still running; try again later")
        await asyncio.sleep(_POLL)
        claim = await asyncio.to_thread(store.claim, key, digest, recover)
    if isinstance(claim, CallToolResult):
        return claim
    try:
        result = await act(key)
    except PartlyDone as exc:
        # An error result, not a raise: the repeat answers with exactly this.
        result = CallToolResult(content=[TextContent(type="text", text=str(exc))], is_error=True)
    except ToolError:
        # Refused without acting (bad arguments, the service said no): a retry may try again. Anything
        # else (a cancel when the client went away) may have come after the effect: the key stays begun.
        await asyncio.to_thread(store.release, key)
        raise
    await asyncio.to_thread(store.finish, key, result)
    return result


def _wal(db: sqlite3.Connection) -> None:
    """Put the keys file in WAL mode (kept in the file, so a no-op once done). Making a new file WAL is a
    write after a read: a connection that read the file while another was making it WAL (two first calls at
    once) is told "database is locked" at once, its busy timeout unused, since waiting with its read held
    could deadlock. Asked again, it waits like any writer and finds the file in WAL mode."""
    deadline = time.monotonic() + BUSY_SECONDS
    while True:
        try:
            db.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if exc.sqlite_errorcode & 0xFF != sqlite3.SQLITE_BUSY or time.monotonic() > deadline:
                raise
        time.sleep(_BUSY_POLL)


_THREAD = threading.local()
"""Each thread's open connections to keys files (:meth:`ServedKeys._db`)."""


def _identity(path: Path) -> tuple[int, int] | None:
    try:
        stat = path.stat()
    except FileNotFoundError:
        return None
    return stat.st_dev, stat.st_ino


def _number(environ: Mapping[str, str], name: str, default: float) -> float:
    raw = environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ToolError(f"{name}={raw!r} is not a number") from None
    if value <= 0:
        raise ToolError(f"{name} must be above 0, got {raw}")
    return value
