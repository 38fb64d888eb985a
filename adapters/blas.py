"""numpy, imported with its BLAS held to one thread: OpenBLAS's fork handler waits for its pool's threads, and a
thread that finishes a product as a fork begins goes back to sleep for good, so the fork (the script sandbox's, as
root) never returns and the whole worker stops (docs/skill-files.md, "One BLAS thread")."""

from __future__ import annotations

import ctypes
import os
import sys
import threading
from pathlib import Path
from typing import Any

BLAS_THREADS = "OPENBLAS_NUM_THREADS"
"""Read by OpenBLAS (numpy's BLAS, in its wheels) once, as numpy first loads it: set to 1 for that import."""

BLAS_SETTERS = ("openblas_set_num_threads", "scipy_openblas_set_num_threads64_", "scipy_openblas_set_num_threads",
                "openblas_set_num_threads64_")
"""The names OpenBLAS's ``openblas_set_num_threads`` has in the builds numpy and scipy ship and in a system's."""

_ONE_BLAS_THREAD = threading.Lock()
_blas_limited = False


def load_numpy() -> Any:
    """numpy, its BLAS held to the thread that calls it: every use of numpy here goes through this.

    A BLAS thread pool and ``fork()`` do not mix. OpenBLAS stops its pool in an atfork handler; when
    a fork comes (the sandbox forks bwrap as the script's user, and vfork cannot switch users) while
    another thread has a matrix product on that pool (the "skill-vectors" thread encoding the skills),
    a pool thread finishing its share overwrites the stop request, sleeps for good, and the handler
    waits for it forever, the forking thread, holding the GIL, with it: the whole worker hangs. With
    one thread nothing is ever on the pool. Set by the environment when this is numpy's first import
    (no pool is made), else on the library loaded (something imported numpy first). docs/skill-files.md,
    "One BLAS thread"."""
    global _blas_limited
    if not _blas_limited:
        with _ONE_BLAS_THREAD:
            if not _blas_limited:
                if "numpy" not in sys.modules:
                    before = os.environ.get(BLAS_THREADS)
                    os.environ[BLAS_THREADS] = "1"
                    try:
                        import numpy as np  # noqa: F401
                    finally:
                        if before is None:
                            del os.environ[BLAS_THREADS]
                        else:
                            os.environ[BLAS_THREADS] = before
                one_blas_thread()
                _blas_limited = True
    import numpy as np

    return np


def one_blas_thread() -> list[str]:
    """Set every OpenBLAS loaded in this process to one thread (found in ``/proc/self/maps``, called by
    its ``openblas_set_num_threads``, never loaded here), and return their paths; none found (another
    BLAS, another system): nothing done."""
    try:
        maps = Path("/proc/self/maps").read_text()
    except OSError:
        return []
    paths = sorted({fields[5] for fields in (line.split(None, 5) for line in maps.splitlines())
                    if len(fields) == 6 and "openblas" in Path(fields[5]).name.lower()})
    limited = []
    for path in paths:
        try:
            library = ctypes.CDLL(path, mode=os.RTLD_NOLOAD)
        except OSError:
            continue
        setter = next((getattr(library, name) for name in BLAS_SETTERS if hasattr(library, name)), None)
        if setter is not None:
            setter.argtypes, setter.restype = [ctypes.c_int], None
            setter(1)
            limited.append(path)
    return limited
