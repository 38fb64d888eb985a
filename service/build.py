"""The worker's build id, recorded with each workflow task it completes (the engine uses no worker
versioning): it changes when the code does, and costs next to nothing at the worker's start."""

from __future__ import annotations

import hashlib
import os
import sys


def code_build_id() -> str:
    """A hash of the Python version and of every loaded module's name and file (path, size,
    modification time). The SDK's default hashes the bytecode of every loaded module, read from disk
    again: a fifth of a second of each worker start, with the engine's modules."""
    digest = hashlib.md5(sys.version.encode(), usedforsecurity=False)
    for name, module in sorted(list(sys.modules.items()), key=lambda item: item[0]):  # a copy: a thread may import
        path = getattr(module, "__file__", None)
        try:
            stat = os.stat(path) if isinstance(path, str) else None
        except OSError:
            stat = None
        digest.update(f"{name}\0{path}\0{stat.st_size if stat else ''}\0{stat.st_mtime_ns if stat else ''}\n".encode())
    return digest.hexdigest()
