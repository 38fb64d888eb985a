"""CPU time of code that must not hang: a catastrophic pattern fails its test instead of holding it for hours."""

from __future__ import annotations

import gc
import signal
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

GUARD = 4
"""The guard stops the calls at this many budgets of the process's CPU (other threads count there), the test's
own figure is this thread's."""


@contextmanager
def cpu_budget(seconds: float) -> Iterator[Callable[[], float]]:
    """The CPU seconds this thread spends inside (``time.thread_time``: neither a loaded machine's waiting nor
    another thread of the test process, such as an in-process worker's, is counted; nor a garbage collection of
    what earlier tests left, which is held off inside: not run before either, as a full collection of a test
    process's heap costs more than the calls it would keep out, about half a CPU second each). Past ``GUARD`` times ``seconds`` of the
    whole process's CPU, the calls are stopped with TimeoutError (``re`` checks for signals as it matches), so a
    pattern that backtracks fails its test rather than holding it."""
    def over(signum: int, frame: object) -> None:
        raise TimeoutError(f"over {GUARD * seconds} CPU seconds: a pattern backtracks")

    gc.disable()
    previous = signal.signal(signal.SIGPROF, over)
    started = time.thread_time()
    signal.setitimer(signal.ITIMER_PROF, GUARD * seconds)
    try:
        yield lambda: time.thread_time() - started
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, previous)
        gc.enable()
