"""The client side: the Python client, the `skills` CLI, the dev launcher, adapters."""

from __future__ import annotations

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
