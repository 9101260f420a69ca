"""Sweep benchmark: a grid of recursive chunk sizes over the Rust book costs its distinct chunk texts once.

    python bench/bench_sweep.py [--corpus PATH] [--queries FILE | --probe] [--grid chunk_size=256,384,512 ...]
                                [--out /tmp/bench_sweep.txt] [--cleanup]

Target: a 6-point sweep (chunk_size 256/384/512 × chunk_overlap 0/50) with 50 queries takes at most the time of
embedding the DISTINCT chunk texts of the six points once, plus 10%.

1. Chunk every grid point and count the distinct texts the model must read (identical chunks of different
   points are one text), and which of them each point adds to those of the points before it.
2. The sweep (`chunkscope.evaluation.sweep.sweep`) with an EMPTY cache (CHUNKSCOPE_CACHE = a fresh temporary folder) and
   an empty store, model loading included.
3. Interleaved with it, the raw model time: when the sweep starts a point, its progress callback runs
   ``Embedder.encode`` (a second model, no cache) on exactly the texts that point adds, in one call; that time
   is measured on its own and taken off the sweep's clock. The sum over the points is the raw encode of all
   the distinct texts. Interleaving point by point matters on a shared machine: the same encode took 11 s and
   28 s minutes apart here, and a first version that timed the raw encode before the sweep compared a quiet
   quarter of an hour with a busy one.

Reports sweep / raw in wall time (the target) and in CPU time of the process, per point and in all, and the
sweep's own split: time inside the model vs. everything else. Load averages are printed. The tables go to
stdout and to ``--out``. The cache folder is kept (printed) so the CLI can be run on it warm, unless
``--cleanup``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from _setup import REPO, emit, load, table, write_report

DEFAULT_CORPUS = REPO.parent / "shared" / "corpus" / "rust-book"
DEFAULT_QUERIES = REPO / "bench" / "rust_book_queries.jsonl"
TARGET = 1.10


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

    from chunkscope.chunking.drivers import chunk_documents
    from chunkscope.chunking.registry import get_strategy
    from chunkscope.document.loader import load_docs
    from chunkscope.embedding.embedder import Embedder
    from chunkscope.evaluation.queries import load_queries
    from chunkscope.evaluation.regions import resolve_region
    from chunkscope.cli.parsing import parse_grid
    from chunkscope.evaluation.probe import probe_sections
    from chunkscope.evaluation.sweep import grid_points, sweep

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

    # 1. distinct texts over the grid, and the new ones of each point (what the sweep will embed there)
    distinct: dict[str, None] = {}
    rows = []
    new_by_point: list[list[str]] = []
    points = grid_points(grid)
    for p in points:
        s = get_strategy(args.strategy, **p)
        chunks = [c for r in chunk_documents(tree.documents, s) for c in r.chunks]
        texts = {c.embed_text for c in chunks}
        new = sorted(t for t in texts if t not in distinct)
        distinct.update(dict.fromkeys(new))
        new_by_point.append(new)
        rows.append([", ".join(f"{k}={v}" for k, v in p.items()), len(chunks), len(texts), len(new)])
    texts = list(distinct)
    emit("## 1. chunk texts per grid point")
    emit(table(["point", "chunks", "distinct texts", "new (not in an earlier point)"], rows))
    total_chunks = sum(r[1] for r in rows)
    emit(f"\n{total_chunks} chunks in all, {len(texts)} distinct texts "
         f"({total_chunks - len(texts)} repeats a sweep must not embed again)")
    emit()

    # 2 + 3. the sweep, empty cache and store, with the raw encode of each point's new texts just before it
    raw = Embedder(use_cache=False)
    t = time.perf_counter()
    raw.load()
    raw_load = time.perf_counter() - t
    raw.encode(["warm up the model", "and its threads"])
    raw_wall = [0.0] * len(points)
    raw_cpu = [0.0] * len(points)
    loads: list[str] = [""] * len(points)

    def on_progress(p) -> None:
        # A configuration's first step is chunking; its place in the sweep is the outer report's count.
        i = p.outer.done if p.outer is not None else None
        if p.phase.name != "CHUNK" or i is None or i >= len(loads) or loads[i]:
            return
        loads[i] = load()
        t, c = time.perf_counter(), time.process_time()
        raw.encode(new_by_point[i])
        raw_wall[i] = time.perf_counter() - t
        raw_cpu[i] = time.process_time() - c

    os.environ["CHUNKSCOPE_CACHE"] = str(scratch / "sweep")
    emit(f"## 2. sweep with an empty cache ({os.environ['CHUNKSCOPE_CACHE']}), raw encodes interleaved")
    emit(f"(raw model load {raw_load:.1f}s, not counted)")
    embedder = Embedder()
    load_before = load()
    t, c = time.perf_counter(), time.process_time()
    result = sweep(tree, args.strategy, grid, queries, embedder=embedder, on_progress=on_progress)
    wall = time.perf_counter() - t - sum(raw_wall)
    cpu = time.process_time() - c - sum(raw_cpu)
    emit(f"sweep: wall {wall:.1f}s, CPU {cpu:.1f}s (raw encodes taken off; load {load_before} before, {load()} "
         f"after): model load {embedder.load_seconds:.1f}s, inside the model {result.encode_seconds:.1f}s, "
         f"everything else {wall - result.encode_seconds:.1f}s")
    emit(f"embedding cache: {result.distinct_texts} distinct texts, {result.embedded} embedded, "
         f"{result.cached} from cache, {result.query_embedded} questions embedded")
    emit()
    # A point's own seconds are counted from before its progress callback: take the raw encode off.
    own_s = [p.seconds - raw_wall[i] for i, p in enumerate(result.points)]
    emit("## 3. point by point: raw encode of the point's new texts, then the sweep's work on that point")
    emit(table(
        ["point", "new texts", "raw wall s", "sweep wall s", "ratio", "raw CPU s", "load at start"],
        [[p.label, len(new_by_point[i]), f"{raw_wall[i]:.1f}", f"{own_s[i]:.1f}",
          f"{own_s[i] / raw_wall[i]:.2f}" if raw_wall[i] else "—", f"{raw_cpu[i]:.1f}", loads[i]]
         for i, p in enumerate(result.points)]))
    emit("(the sweep's seconds per point leave out the questions' embedding and the store's opening)")
    emit()
    emit(f"## 4. the sweep's results ({result.metric}, best first)")
    emit(table(
        ["#", "point", result.metric, "hit@1", "mrr", "chunks", "storage MB", "embedded", "cached", "seconds"],
        [[i, p.label, f"{p.metrics[result.metric]:.3f}", f"{p.metrics['hit@1']:.3f}", f"{p.metrics['mrr']:.3f}",
          p.chunks, f"{p.storage_bytes / 2**20:.1f}", p.embedded, p.cached, f"{own_s[p.index]:.1f}"]
         for i, p in enumerate(result.ranked(), 1)]))
    emit()
    raw_s, raw_c = sum(raw_wall), sum(raw_cpu)
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
    write_report(args.out)
    if args.cleanup:
        shutil.rmtree(scratch, ignore_errors=True)
    else:
        print(f"(cache kept: CHUNKSCOPE_CACHE={scratch / 'sweep'})", file=sys.stderr)
    return 0 if result.embedded == len(texts) else 1


if __name__ == "__main__":
    sys.exit(main())
