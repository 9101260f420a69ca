"""Sweep benchmark: a grid of recursive chunk sizes over the Rust book costs its distinct chunk texts once.

    python bench/bench_sweep.py [--corpus PATH] [--queries FILE | --probe] [--grid chunk_size=256,384,512 ...]
                                [--out /tmp/bench_sweep.txt] [--cleanup]

Target: a 6-point sweep (chunk_size 256/384/512 × chunk_overlap 0/50) with 50 queries takes at most the time of
embedding the DISTINCT chunk texts of the six points once, plus 10%.

1. Chunk every grid point and count the distinct texts the model must read (identical chunks of different
   points are one text).
2. Raw model time: ``Embedder.encode`` of those texts, no cache, the model loaded and warmed first. The texts are
   sorted by length and dealt into two halves of the same length mix; one half is encoded before the sweep and
   the other after it, so a change in the machine's load during the run weighs on both sides alike (this
   machine is shared: the same encode took 11 s and 28 s minutes apart). Each half is one call.
3. The sweep (`chunkscope.tuning.sweep`) with an EMPTY cache (CHUNKSCOPE_CACHE = a fresh temporary folder) and
   an empty store: wall time of the call, model loading included.

Reports sweep / raw in wall time (the target) and in CPU time of the process (less sensitive to other
processes), and the sweep's own split: time inside the model vs. everything else. Load averages are printed at
each step. The table goes to stdout and to ``--out``. The cache folder is kept (printed) so the CLI can be run
on it warm, unless ``--cleanup``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))
DEFAULT_CORPUS = REPO.parent / "shared" / "corpus" / "rust-book"
DEFAULT_QUERIES = REPO / "bench" / "rust_book_queries.jsonl"
TARGET = 1.10

_lines: list[str] = []


def emit(text: str = "") -> None:
    print(text, flush=True)
    _lines.append(text)


def table(headers: list[str], rows: list[list[object]]) -> str:
    out = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


def load() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "?"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    ap.add_argument("--queries", type=Path, default=DEFAULT_QUERIES)
    ap.add_argument("--probe", action="store_true", help="score on 50 probe questions instead of --queries")
    ap.add_argument("--strategy", default="recursive")
    ap.add_argument("--grid", action="append", default=None)
    ap.add_argument("--out", type=Path, default=Path("/tmp/bench_sweep.txt"))
    ap.add_argument("--cleanup", action="store_true", help="remove the sweep's cache folder at the end")
    args = ap.parse_args()
    grid_args = args.grid or ["chunk_size=256,384,512", "chunk_overlap=0,50"]
    if not args.corpus.is_dir():
        print(f"corpus not found: {args.corpus}", file=sys.stderr)
        return 2
    # Everything the bench writes (tiktoken ranks, the step-2 model run) stays out of the user's cache; the sweep
    # gets a second, empty folder of its own.
    scratch = Path(tempfile.mkdtemp(prefix="cs-bench-sweep-"))
    os.environ["CHUNKSCOPE_CACHE"] = str(scratch / "setup")

    from chunkscope.chunk import chunk_documents, get_strategy
    from chunkscope.docs import load_docs
    from chunkscope.embed import Embedder
    from chunkscope.evaluate import load_queries, resolve_region
    from chunkscope.tuning import grid_points, parse_grid, probe_sections, sweep

    emit(f"# sweep benchmark ({time.strftime('%Y-%m-%d %H:%M')}, {os.cpu_count()} cores, load {load()})")
    tree = load_docs(args.corpus)
    grid = parse_grid(grid_args, args.strategy)
    if args.probe:
        queries = probe_sections(tree, max_queries=50)
        nq = len(queries.sections)
        qdesc = f"{nq} probe questions (section headings, evenly sampled)"
    else:
        queries = load_queries(args.queries)
        for q in queries:
            resolve_region(tree, q)  # every path and heading exists
        nq = len(queries)
        qdesc = f"{nq} questions from {args.queries.name} (all expectations resolve)"
    emit(f"corpus {args.corpus.name}: {len(tree.documents)} files; {args.strategy} grid {' × '.join(grid_args)}; {qdesc}")
    emit()

    # 1. distinct texts over the grid
    distinct: dict[str, None] = {}
    rows = []
    for p in grid_points(grid):
        s = get_strategy(args.strategy, **p)
        chunks = [c for r in chunk_documents(tree.documents, s) for c in r.chunks]
        texts = {c.embed_text for c in chunks}
        new = [t for t in texts if t not in distinct]
        distinct.update(dict.fromkeys(sorted(new)))
        rows.append([", ".join(f"{k}={v}" for k, v in p.items()), len(chunks), len(texts), len(new)])
    texts = list(distinct)
    emit("## 1. chunk texts per grid point")
    emit(table(["point", "chunks", "distinct texts", "new (not in an earlier point)"], rows))
    total_chunks = sum(r[1] for r in rows)
    emit(f"\n{total_chunks} chunks in all, {len(texts)} distinct texts "
         f"({total_chunks - len(texts)} repeats a sweep must not embed again)")
    emit()

    # 2. raw model time of the distinct texts: half before the sweep, half after
    emit(f"## 2. raw Embedder.encode of the {len(texts)} distinct texts (no cache), half before the sweep and half after")
    raw = Embedder(use_cache=False)
    t = time.perf_counter()
    raw.load()
    raw_load = time.perf_counter() - t
    raw.encode(["warm up the model", "and its threads"])
    by_len = sorted(texts, key=len)
    halves = [by_len[0::2], by_len[1::2]]
    raw_wall: list[float] = []
    raw_cpu: list[float] = []

    def raw_half(i: int) -> None:
        before = load()
        t, c = time.perf_counter(), time.process_time()
        raw.encode(halves[i])
        raw_wall.append(time.perf_counter() - t)
        raw_cpu.append(time.process_time() - c)
        emit(f"half {i + 1} ({len(halves[i])} texts): {raw_wall[-1]:.1f}s wall, {raw_cpu[-1]:.1f}s CPU "
             f"(load {before} before, {load()} after)")

    emit(f"model load {raw_load:.1f}s")
    raw_half(0)
    emit()

    # 3. the sweep, empty cache and store
    os.environ["CHUNKSCOPE_CACHE"] = str(scratch / "sweep")
    emit(f"## 3. sweep with an empty cache ({os.environ['CHUNKSCOPE_CACHE']})")
    embedder = Embedder()
    load_before = load()
    t, c = time.perf_counter(), time.process_time()
    result = sweep(tree, args.strategy, grid, queries, embedder=embedder)
    wall, cpu = time.perf_counter() - t, time.process_time() - c
    emit(f"wall {wall:.1f}s, CPU {cpu:.1f}s (load {load_before} before, {load()} after): model load "
         f"{embedder.load_seconds:.1f}s, inside the model {result.encode_seconds:.1f}s, everything else "
         f"{wall - result.encode_seconds:.1f}s")
    emit(f"embedding cache: {result.distinct_texts} distinct texts, {result.embedded} embedded, "
         f"{result.cached} from cache, {result.query_embedded} questions embedded")
    emit()
    emit(table(
        ["#", "point", result.metric, "hit@1", "mrr", "chunks", "storage MB", "embedded", "cached", "seconds"],
        [[i, p.label, f"{p.metrics[result.metric]:.3f}", f"{p.metrics['hit@1']:.3f}", f"{p.metrics['mrr']:.3f}",
          p.chunks, f"{p.storage_bytes / 2**20:.1f}", p.embedded, p.cached, f"{p.seconds:.1f}"]
         for i, p in enumerate(result.ranked(), 1)]))
    emit()
    emit("## 2b. the other half of the raw encode")
    raw_half(1)
    raw_s, raw_c = sum(raw_wall), sum(raw_cpu)
    emit()
    ratio, ratio_cpu = wall / raw_s, cpu / raw_c
    own = wall / result.encode_seconds if result.encode_seconds else float("nan")

    def verdict(x: float) -> str:
        return f"<= {TARGET:.2f}" + (" ✓" if x <= TARGET else " ✗")

    emit("## result")
    emit(table(["measure", "value", "target"], [
        ["distinct chunk texts over the grid", len(texts), ""],
        ["texts the sweep embedded", result.embedded, f"= {len(texts)}"],
        ["raw encode of the distinct texts: wall (s)", f"{raw_s:.1f}", ""],
        ["raw encode of the distinct texts: CPU (s)", f"{raw_c:.1f}", ""],
        ["sweep, empty cache: wall (s)", f"{wall:.1f}", f"<= {raw_s * TARGET:.1f}"],
        ["sweep, empty cache: CPU (s)", f"{cpu:.1f}", f"<= {raw_c * TARGET:.1f}"],
        ["sweep / raw encode, wall", f"{ratio:.3f}", verdict(ratio)],
        ["sweep / raw encode, CPU", f"{ratio_cpu:.3f}", verdict(ratio_cpu)],
        ["sweep wall / its own model time", f"{own:.3f}", "(everything but the model)"],
    ]))
    emit()
    emit("winning preset:")
    emit(result.preset_toml().rstrip())
    args.out.write_text("\n".join(_lines) + "\n", encoding="utf-8")
    if args.cleanup:
        shutil.rmtree(scratch, ignore_errors=True)
    else:
        print(f"(cache kept: CHUNKSCOPE_CACHE={scratch / 'sweep'})", file=sys.stderr)
    return 0 if result.embedded == len(texts) else 1


if __name__ == "__main__":
    sys.exit(main())
