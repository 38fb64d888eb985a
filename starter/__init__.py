"""The entry points: the `skills` CLI, the dev launcher, the MCP server, the Telegram adapter.

The library they share (SkillsClient, the management tools, the file sync) is the
``client`` package; what is here is only how a process starts, reads its arguments and ends."""

from __future__ import annotations

import json
import os
import sys
from typing import TYPE_CHECKING, NoReturn

if TYPE_CHECKING:
    from collections.abc import Coroutine
    from typing import Any


def exit_process(code: int) -> NoReturn:
    """End a process with ``code``, stdout and stderr flushed, skipping interpreter teardown (no ``atexit``
    handlers, no finalizers: call it once everything the process owes is written).

    The Temporal client's core runs on Rust threads that can outlive the event loop (the SDK's default
    runtime is a module global); one calling into Python while the interpreter finalizes aborts a process
    whose work is done (``Fatal Python error: PyGILState_Release``, or a segfault: temporalio/sdk-python#300),
    and its exit status says it failed. Every ``skills`` command, the MCP server and the Telegram adapter end
    here, as do the benchmarks and the tests' scripts that connect to Temporal (:func:`run_then_exit`). A
    program that closes its ``SkillsClient`` (``async with``) stops those threads itself and may exit as usual
    (the README's example; tests/client/test_script_exit.py)."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe or stream: nothing more can be said on it
            pass
    os._exit(code)


def run_then_exit(main: Coroutine[Any, Any, object]) -> NoReturn:
    """``asyncio.run(main)``, then :func:`exit_process`: 0 when it returned, a ``SystemExit``'s status (1, its
    message on stderr, when that is a string), 1 with the traceback on stderr when it raised, 130 on Ctrl-C.
    For a script that connects to Temporal, run as its own process (a benchmark, a test's client script)."""
    import asyncio  # here: `skills --version` and `--help` import no asyncio
    import traceback

    try:
        asyncio.run(main)
    except SystemExit as e:
        if e.code is None or isinstance(e.code, int):
            exit_process(e.code or 0)
        print(e.code, file=sys.stderr)
        exit_process(1)
    except KeyboardInterrupt:
        exit_process(130)
    except BaseException:
        traceback.print_exc()
        exit_process(1)
    exit_process(0)


def print_failure(as_json: bool, what: str, errors: list[dict[str, str]]) -> int:
    """A command's refusal, the one way every ``skills`` command gives it; returns the exit status 1.

    ``{"ok": false, "error": what, "errors": [{field, message}]}`` with ``--json``, else
    ``error: what`` on stderr and one indented line per problem (``field: message``). A known
    secret in a message (an endpoint that echoed its key, a database URL) is shown as ``***``."""
    from config.secrets import redact

    errors = [{**e, "message": redact(e["message"])} for e in errors]
    if as_json:
        print(json.dumps({"ok": False, "error": what, "errors": errors}, indent=2, ensure_ascii=False))
    else:
        from skills.display import shown

        # A message may quote what was refused (an archive's entry name): no terminal code of it acts.
        lines = (f"{e['field']}: {e['message']}" if e.get("field") else e["message"] for e in errors)
        print(f"error: {shown(what)}\n" + "\n".join(f"  {shown(line)}" for line in lines), file=sys.stderr)
    return 1
