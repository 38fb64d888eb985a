"""The entry points: the `skills` CLI, the dev launcher, the MCP server, the Telegram adapter.

The library they share (SkillsClient, the management tools, the file sync) is the
``client`` package; what is here is only how a process starts, reads its arguments and ends."""

from __future__ import annotations

import json
import os
import sys
from typing import NoReturn


def exit_process(code: int) -> NoReturn:
    """End a command-line process with ``code``, flushed, skipping interpreter teardown:
    the Temporal client's core threads can outlive the event loop and abort a finished
    command while Python finalizes (temporalio/sdk-python#300)."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


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
