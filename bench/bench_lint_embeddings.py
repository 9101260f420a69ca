"""``chunkscope lint --embeddings`` on a tree of many copies of the Rust book, against T1, in one run.

    python bench/bench_lint_embeddings.py [--copies 28] [--strategy recursive] [--cache DIR] [--runs 3]
                                          [--src LABEL=PATH ...] [--out FILE]

The target (issue 22): ``lint --embeddings`` on a 20,000-chunk tree whose vectors are cached costs at most 20 T1,
where T1 is a fresh ``chunkscope chunk`` of one copy (715 chunks with ``recursive``; 28 copies are 20,020 chunks).

The tree is built as ``bench_query.py`` builds it (copies under ``copy-00/`` … in a temporary folder, never in
the repository); the copies share their texts, so ``--cache`` (default ``CHUNKSCOPE_CACHE``) should already hold
the book's vectors for the strategy: nothing is embedded, and what is measured is lint's own work, the store and
the neighbourhoods. Two figures per source tree, each one fresh process (wall, and CPU = user + system of the
child, the fairer figure on a loaded machine):

* the first ``lint --embeddings`` (the tree's collection is empty: every point is written from the cache);
* the same again (the collection is in step: nothing is written).

``--src LABEL=PATH`` runs the same steps with chunkscope imported from another ``src`` folder (a copy of the code
before a change, say), in the same run and against the same T1; by default only this checkout's ``src``. The
tree's workspace (its store) is removed before each source's first run and at the end.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
from pathlib import Path

import _setup
from _setup import emit, load, table
from bench_query import build_tree, run

DEFAULT_CORPUS = _setup.REPO.parent / "shared" / "corpus" / "rust-book"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--copies", type=int, default=28, help="copies of the book (28 ≈ 20,000 recursive chunks)")
    ap.add_argument("--strategy", default="recursive", help="strategy of both T1 and lint (recursive: 715 a copy)")
    ap.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    ap.add_argument("--cache", type=Path, default=None, help="chunkscope's cache (holding the book's vectors)")
    ap.add_argument("--runs", type=int, default=3, help="fresh processes for T1 (median)")
    ap.add_argument("--src", action="append", default=[], metavar="LABEL=PATH",
                    help="also measure chunkscope from this src folder (repeatable)")
    ap.add_argument("--out", type=Path, default=None, help="also write the report here")
    a = ap.parse_args()
    if not a.corpus.is_dir():
        raise SystemExit(f"{a.corpus}: no such corpus folder")
    sources = [("this checkout", _setup.REPO / "src")]
    for given in a.src:
        label, _, path = given.partition("=")
        if not path or not Path(path, "chunkscope").is_dir():
            raise SystemExit(f"--src {given}: give LABEL=PATH, PATH a folder holding chunkscope/")
        sources.append((label, Path(path).resolve()))
    base = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    if a.cache is not None:
        base["CHUNKSCOPE_CACHE"] = str(a.cache)
    os.environ.update(base)
    from chunkscope.retrieval.ids import workspace_dir

    cache = base.get("CHUNKSCOPE_CACHE", "default")
    emit(f"# bench_lint_embeddings: load {load()}, {os.cpu_count()} CPUs, cache {cache}")
    with tempfile.TemporaryDirectory(prefix="chunkscope-bench-lint-emb-") as tmp:
        one = build_tree(a.corpus, Path(tmp), 1) / "copy-00"
        tree = build_tree(a.corpus, Path(tmp), a.copies)
        env = {**base, "PYTHONPATH": str(sources[0][1])}
        t1 = [run(["chunk", str(one), "-s", a.strategy], env) for _ in range(a.runs)]
        t1_wall, t1_cpu = statistics.median(w for w, _ in t1), statistics.median(c for _, c in t1)
        emit(f"T1 = fresh `chunk -s {a.strategy}` of one copy: {t1_wall:.2f} s wall, {t1_cpu:.2f} s CPU "
             f"(median of {a.runs}); load {load()}")
        lint = ["lint", str(tree), "-s", a.strategy, "--embeddings", "--format", "text"]
        rows: list[list[object]] = []
        try:
            for label, src in sources:
                env = {**base, "PYTHONPATH": str(src)}
                shutil.rmtree(workspace_dir(tree), ignore_errors=True)
                for what in ("first run (store empty)", "again (store in step)"):
                    wall, cpu = run(lint, env)
                    rows.append([label, what, f"{wall:.1f}", f"{wall / t1_wall:.1f}", f"{cpu:.1f}",
                                 f"{cpu / t1_cpu:.1f}", load()])
                    emit(table(["code", "`lint --embeddings`", "wall s", "wall ÷ T1", "CPU s", "CPU ÷ T1", "load"],
                               rows[-1:]))
        finally:
            shutil.rmtree(workspace_dir(tree), ignore_errors=True)
    emit("")
    emit(f"{a.copies} copies, `-s {a.strategy}`; T1 = {t1_wall:.2f} s wall, {t1_cpu:.2f} s CPU; load now {load()}; "
         f"target: ≤ 20 T1")
    emit(table(["code", "`lint --embeddings`", "wall s", "wall ÷ T1", "CPU s", "CPU ÷ T1", "load"], rows))
    if a.out is not None:
        _setup.write_report(a.out)


if __name__ == "__main__":
    main()
