"""The skills' vectors on disk: one sealed file read as data, never trusted.

Only a regular file is opened, never through a link and never waiting (a FIFO); its size, its entries and the
shapes their headers declare are bounded before anything is decompressed (:func:`read_vectors`); and it is sealed
with a key kept beside it (:func:`vectors_key`), so a vector someone else wrote under a text's digest is not taken
for that text's (``adapters.semantic.VectorCache`` reads and writes it).
"""

from __future__ import annotations

import errno
import hashlib
import hmac
import io
import logging
import math
import os
import secrets
import stat
import tempfile
import zipfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from adapters.blas import load_numpy
from adapters.folders import kind_of

logger = logging.getLogger(__name__)

KEY_BYTES = 32
"""The size of the key that seals a cache file (:func:`vectors_key`)."""


MAX_MODEL_CHARS = 256
"""The longest model identity a cache file may name (``adapters.semantic.model_identity`` gives 34 characters)."""


MAX_HEADER_BYTES = 1024
"""The longest ``.npy`` header an entry of a cache file may have (numpy writes 128 bytes for these)."""


ZIP_OVERHEAD = 4096
"""Bytes of a cache file that are the zip's own (its four entries' records, the end records)."""


SEAL_DOMAIN = b"skills-engine skill-vectors 1\0"
"""What a seal's message starts with: the same key sealing anything else never gives a cache's seal."""


class RefusedCache(Exception):
    """A cache file that is not used, and why (one line)."""


def open_regular(path: Path) -> tuple[Any, os.stat_result] | None:
    """``path`` opened for reading if it is a regular file: never through a link (``O_NOFOLLOW``), never
    waiting (``O_NONBLOCK``: a FIFO opens at once, and is refused); None when nothing is there."""
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise RefusedCache("it is a link, and it is read only from a regular file") from None
        raise RefusedCache(f"it cannot be opened ({exc.strerror or exc})") from None
    info = os.fstat(descriptor)
    if not stat.S_ISREG(info.st_mode):
        os.close(descriptor)
        kind = "a folder" if stat.S_ISDIR(info.st_mode) else kind_of(info.st_mode)
        raise RefusedCache(f"it is {kind}, not a regular file")
    return os.fdopen(descriptor, "rb"), info


def most_bytes(rows: int, dimensions: int) -> int:
    """The most a cache file of ``rows`` vectors of ``dimensions`` takes, whole or decompressed: its arrays'
    data (the model's name, a 64-character digest and a vector a row, the seal), their headers, the zip's
    records."""
    data = 4 * MAX_MODEL_CHARS + rows * (4 * 64 + 2 * dimensions) + 4 * 64
    return data + len(_ENTRIES) * MAX_HEADER_BYTES + ZIP_OVERHEAD


_ENTRIES = ("model.npy", "digests.npy", "vectors.npy", "seal.npy")


def read_vectors(path: Path, model: str, dimensions: int, rows: int,
                 key: Callable[[Path], bytes]) -> tuple[Any, Any] | None:
    """The digests and vectors of the cache file at ``path`` written for ``model``, of at most ``rows``
    vectors of ``dimensions``, once it passed every check, in this order; None when there is no file.

    1. a regular file, opened without following a link or waiting (:func:`open_regular`), of at most
       :func:`most_bytes`, read whole at once (so it cannot change between the checks and the load);
    2. a zip of the four entries :func:`write_vectors` writes, stored or deflated, whose sizes add up to at
       most :func:`most_bytes`; the ``.npy`` header of each, read without decompressing the rest, declares
       the dtype and the shape written (``rows`` at most), and its size is that header and that data exactly:
       nothing is decompressed past what the cache holds (``zipfile`` reads no entry past its size);
    3. ``np.load`` with ``allow_pickle=False``; the model named is ``model``;
    4. the seal: an HMAC-SHA256, under the key beside the file (``key(path)``), of the model, the digests
       and the vectors: a file written by anyone who does not hold the key is refused whole.

    A refusal raises :class:`RefusedCache` with the reason."""
    np = load_numpy()

    opened = open_regular(path)
    if opened is None:
        return None
    file, info = opened
    limit = most_bytes(rows, dimensions)
    with file:
        if info.st_size > limit:
            raise RefusedCache(f"it is {info.st_size:,} bytes, more than a cache of {rows:,} vectors takes "
                               f"({limit:,})")
        data = file.read(limit + 1)
    if len(data) > limit:
        raise RefusedCache(f"it grew past {limit:,} bytes as it was read")
    expected = {
        "model.npy": lambda dtype, shape: dtype.kind == "U" and dtype.itemsize <= 4 * MAX_MODEL_CHARS
        and shape == (),
        "digests.npy": lambda dtype, shape: dtype == np.dtype("<U64") and len(shape) == 1 and shape[0] <= rows,
        "vectors.npy": lambda dtype, shape: dtype == np.dtype("<f2") and len(shape) == 2 and shape[0] <= rows
        and shape[1] == dimensions,
        "seal.npy": lambda dtype, shape: dtype == np.dtype("<U64") and shape == (),
    }
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as zipped:
            entries = zipped.infolist()
            names = sorted(entry.filename for entry in entries)
            if names != sorted(_ENTRIES):
                unsealed = names == sorted(_ENTRIES[:3])
                raise RefusedCache("it carries no seal (an older engine's file, or not this engine's)" if unsealed
                                   else f"it holds {', '.join(names[:6]) or 'nothing'}, not {', '.join(_ENTRIES)}")
            declared = sum(entry.file_size for entry in entries)
            if declared > limit:
                raise RefusedCache(f"its entries declare {declared:,} bytes, more than a cache of {rows:,} vectors "
                                   f"takes ({limit:,})")
            shapes = {}
            for entry in entries:
                if entry.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
                    raise RefusedCache(f"its {entry.filename} is compressed with method {entry.compress_type}")
                with zipped.open(entry) as stream:
                    version = np.lib.format.read_magic(stream)
                    reader = {(1, 0): np.lib.format.read_array_header_1_0,
                              (2, 0): np.lib.format.read_array_header_2_0}.get(version)
                    if reader is None:
                        raise RefusedCache(f"its {entry.filename} is of .npy version {version}")
                    shape, fortran, dtype = reader(stream, max_header_size=MAX_HEADER_BYTES)
                    header = stream.tell()
                if fortran or not expected[entry.filename](dtype, shape):
                    raise RefusedCache(f"its {entry.filename} declares {dtype.str} {shape}: not what a cache of "
                                       f"at most {rows:,} vectors of {dimensions} writes")
                size = math.prod(shape) * dtype.itemsize
                if entry.file_size != header + size:
                    raise RefusedCache(f"its {entry.filename} is {entry.file_size:,} bytes, not the {header + size:,} "
                                       "its header declares")
                shapes[entry.filename] = shape
            if shapes["digests.npy"][0] != shapes["vectors.npy"][0]:
                raise RefusedCache(f"its vectors are not {shapes['digests.npy'][0]} rows of {dimensions} numbers")
        with np.load(io.BytesIO(data), allow_pickle=False, max_header_size=MAX_HEADER_BYTES) as saved:
            named, digests, vectors, seal = saved["model"], saved["digests"], saved["vectors"], saved["seal"]
    except RefusedCache:
        raise
    except Exception as exc:  # noqa: BLE001 - whatever a damaged or foreign file raises, it is not used
        raise RefusedCache(f"it could not be read ({exc})") from None
    if str(named) != model:
        raise RefusedCache("another model's vectors")
    if not hmac.compare_digest(str(seal), _seal(key(path), str(named), digests, vectors)):
        raise RefusedCache(f"it is not sealed with this engine's key ({key_path(path).name}): written by "
                           "someone else, or the key changed")
    return digests, vectors


def _seal(key: bytes, model: str, digests: Any, vectors: Any) -> str:
    """HMAC-SHA256 of a cache file's model, digests and vectors, as they are written (fixed-width arrays,
    their shapes first: no two files give the same message)."""
    np = load_numpy()

    mac = hmac.new(key, SEAL_DOMAIN, hashlib.sha256)
    mac.update(model.encode("utf-8", "surrogatepass") + b"\0")
    mac.update(np.array(vectors.shape, dtype="<u8").tobytes())
    mac.update(np.ascontiguousarray(digests, dtype="<U64").tobytes())
    mac.update(np.ascontiguousarray(vectors, dtype="<f2").tobytes())
    return mac.hexdigest()


def key_path(path: Path) -> Path:
    """Where the key that seals the cache file at ``path`` is kept: beside it, ``<stem>.key``."""
    return path.with_name(f"{path.stem}.key")


def vectors_key(path: Path) -> bytes:
    """The key that seals the cache file at ``path`` (:func:`key_path`): :data:`KEY_BYTES` random bytes in a
    regular file of this process's user that no one else may read or write (0600), never read through a
    link. Made when missing, and made again (the cache then rebuilt, said in one line) when the file there is
    not such a key. When it cannot be written, a key for this process alone: the cache still serves it, and
    the next start encodes again."""
    where = key_path(path)
    try:
        opened = open_regular(where)
        if opened is not None:
            file, info = opened
            with file:
                key = file.read(KEY_BYTES + 1)
            if info.st_uid != os.geteuid():
                raise RefusedCache(f"it belongs to user {info.st_uid}, not this process's {os.geteuid()}")
            if info.st_mode & 0o077:
                raise RefusedCache(f"others may read or write it (mode {stat.S_IMODE(info.st_mode):o}, not 600)")
            if len(key) != KEY_BYTES:
                raise RefusedCache(f"it is not {KEY_BYTES} bytes")
            return key
    except RefusedCache as refused:
        logger.warning("replaced the key of the vector cache %s: %s; the cache is rebuilt", where, refused)
    key = secrets.token_bytes(KEY_BYTES)
    try:
        where.parent.mkdir(parents=True, exist_ok=True)
        _write_private(where, key)
    except OSError as exc:
        logger.warning("the key of the vector cache could not be written to %s (%s): the cache is kept for this "
                       "process alone", where, exc)
    return key


def _write_private(path: Path, data: bytes) -> None:
    """``data`` as the file ``path``, 0600, written beside it under a name no one could have laid a link at
    (``mkstemp``: ``O_EXCL``) and renamed over: a reader never sees half of it."""
    descriptor, partial = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".partial")
    try:
        with os.fdopen(descriptor, "wb") as file:
            file.write(data)
        os.replace(partial, path)
    finally:
        Path(partial).unlink(missing_ok=True)


def write_vectors(path: Path, model: str, digests: Sequence[str], rows: Any, *, key: bytes) -> None:
    """The file :meth:`VectorCache.load` reads: ``model``'s vectors (rows) by the digests of their texts,
    sealed with ``key`` (:func:`vectors_key`)."""
    np = load_numpy()

    path.parent.mkdir(parents=True, exist_ok=True)
    digests = np.array(list(digests), dtype="<U64")
    vectors = np.asarray(rows).astype("<f2")
    buffer = io.BytesIO()
    np.savez(buffer, model=np.array(model), digests=digests, vectors=vectors,
             seal=np.array(_seal(key, model, digests, vectors), dtype="<U64"))
    # Written beside and renamed over: a reader (another process, a crash half-way) never sees half a file.
    _write_private(path, buffer.getvalue())
