"""CPU time of code that must not hang: a catastrophic pattern fails its test instead of holding it for hours."""

from __future__ import annotations

import signal
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager


@contextmanager
def cpu_budget(seconds: float) -> Iterator[Callable[[], float]]:
    """The CPU seconds spent inside (``time.process_time``: a loaded machine's waiting is not counted); past
    ``seconds``, the calls are stopped with TimeoutError (``re`` checks for signals as it matches), so a
    pattern that backtracks fails the test within its budget."""
    def over(signum: int, frame: object) -> None:
        raise TimeoutError(f"over {seconds} CPU seconds: a pattern backtracks")

    previous = signal.signal(signal.SIGPROF, over)
    started = time.process_time()
    signal.setitimer(signal.ITIMER_PROF, seconds)
    try:
        yield lambda: time.process_time() - started
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, previous)
