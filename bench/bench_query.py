"""A question never re-does the tree: fresh-process ``query`` and ``index`` on many copies of the Rust book.

    python bench/bench_query.py [--copies 7,28] [--corpus PATH] [--cache DIR] [--runs 3] [--strategy NAME]
                                [--index-only] [--out FILE]

Each tree is the Rust book copied under N folder names (``copy-00/`` …) into a temporary folder, never into the
repository; the copies' chunks have the same texts, so they share cached vectors and the store's and the tree's own
costs show. ``--cache`` (default ``CHUNKSCOPE_CACHE``, else chunkscope's cache) should already hold the book's
vectors (``chunkscope index`` of one copy embeds them once: minutes on a small CPU); the trees' workspaces are
removed at the end. Every figure is one fresh ``chunkscope`` process (its wall time, and its CPU time: user + system
of the child, the fairer figure on a loaded machine), against T1 = a fresh ``chunkscope chunk`` of one copy. Every
command is given the same strategy (``--strategy``, default ``recursive``: 715 chunks a copy, 20,020 at 28 copies, the
issue's T1; the built-in ``default`` preset cuts about three times as many):

* ``index``, vectors cached (the first pass: every file chunked, points written, the manifest made);
* ``query --search hybrid`` on the indexed, unchanged tree (the manifest vouches: no file read or chunked);
* the same query with the manifest removed first (the tree loaded, chunked and compared: the path of a question
  before the manifest);
* re-``index`` with one file changed (only that file read, chunked and written).

``--index-only`` measures the first ``index`` alone (the step to profile while working on indexing).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import _setup
from _setup import emit, load, table

DEFAULT_CORPUS = _setup.REPO.parent / "shared" / "corpus" / "rust-book"
QUESTION = "how do I borrow a value without taking ownership"
EDITED = "ch04-02-references-and-borrowing.md"


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run(args: list[str], env: dict[str, str], out: "list[str] | None" = None) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one fresh ``chunkscope`` process; its output is dropped (appended to ``out``
    when given), a failure raised."""
    cpu0, t0 = _children_cpu(), time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "chunkscope", *args], env=env,
                          stdout=subprocess.DEVNULL if out is None else subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True)
    wall, cpu = time.perf_counter() - t0, _children_cpu() - cpu0
    if proc.returncode not in (0, 1):
        raise SystemExit(f"chunkscope {' '.join(args[:2])} failed ({proc.returncode}): {proc.stderr.strip()[-400:]}")
    if out is not None:
        out.append(proc.stdout)
    return wall, cpu


def best(args: list[str], env: dict[str, str], runs: int, before: "list[Path] | None" = None) -> tuple[float, float]:
    """Median wall and CPU over ``runs`` fresh processes (``before``: files removed before each run)."""
    walls, cpus = [], []
    for _ in range(runs):
        for f in before or ():
            f.unlink(missing_ok=True)
        w, c = run(args, env)
        walls.append(w)
        cpus.append(c)
    return statistics.median(walls), statistics.median(cpus)


def build_tree(corpus: Path, dest: Path, copies: int) -> Path:
    tree = dest / f"tree-{copies}"
    for i in range(copies):
        shutil.copytree(corpus, tree / f"copy-{i:02d}", ignore=shutil.ignore_patterns("LICENSE*", ".*"))
    # An hour old, as a tree edited long ago is (a file written within the manifest's racy window is hashed).
    when = time.time() - 3600
    for folder, _, files in os.walk(tree):
        for name in files:
            os.utime(Path(folder) / name, (when, when))
        os.utime(folder, (when, when))
    return tree


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--copies", default="7", help="comma-separated copy counts (7 ≈ 5,000 chunks, 28 ≈ 20,000)")
    ap.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    ap.add_argument("--cache", type=Path, default=None, help="chunkscope's cache (holding the book's vectors)")
    ap.add_argument("--runs", type=int, default=3, help="fresh processes per query figure (median)")
    ap.add_argument("--strategy", default="recursive", help="the strategy or preset every command uses")
    ap.add_argument("--index-only", action="store_true", help="measure the first `index` alone")
    ap.add_argument("--out", type=Path, default=None, help="also write the report here")
    a = ap.parse_args()
    if not a.corpus.is_dir():
        raise SystemExit(f"{a.corpus}: no such corpus folder")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "PYTHONPATH": str(_setup.REPO / "src")}
    if a.cache is not None:
        env["CHUNKSCOPE_CACHE"] = str(a.cache)
    os.environ.update(env)
    from chunkscope.retrieval.ids import workspace_dir
    from chunkscope.retrieval.manifest import MANIFEST_DIR

    emit(f"# bench_query: load {load()}, {os.cpu_count()} CPUs, cache {env.get('CHUNKSCOPE_CACHE', 'default')}")
    with tempfile.TemporaryDirectory(prefix="chunkscope-bench-query-") as tmp:
        one = build_tree(a.corpus, Path(tmp) / "t1", 1) / "copy-00"  # apart from the trees measured below
        strategy = ["-s", a.strategy]
        t1_wall, t1_cpu = best(["chunk", *strategy, str(one)], env, a.runs)
        emit(f"T1 = chunk -s {a.strategy} of one copy: {t1_wall:.2f} s wall, {t1_cpu:.2f} s CPU")
        rows: list[list[object]] = []
        for copies in [int(c) for c in a.copies.split(",") if c.strip()]:
            tree = build_tree(a.corpus, Path(tmp), copies)
            try:
                chunks, figures = measure(tree, env, a.runs, workspace_dir(tree) / MANIFEST_DIR, strategy,
                                          a.index_only)
            finally:
                shutil.rmtree(workspace_dir(tree), ignore_errors=True)
                shutil.rmtree(tree, ignore_errors=True)
            for what, (wall, cpu) in figures:
                rows.append([f"{copies} copies ({chunks:,} chunks)", what, f"{wall:.2f}", f"{wall / t1_wall:.2f}",
                             f"{cpu:.2f}", f"{cpu / t1_cpu:.2f}"])
            emit(table(["tree", "step", "wall s", "wall ÷ T1", "CPU s", "CPU ÷ T1"], rows[-len(figures):]))
    emit("")
    emit(f"T1 = fresh `chunkscope chunk -s {a.strategy}` of one copy: {t1_wall:.2f} s wall, {t1_cpu:.2f} s CPU; "
         f"load {load()}")
    emit(table(["tree", "step", "wall s", "wall ÷ T1", "CPU s", "CPU ÷ T1"], rows))
    if a.out is not None:
        _setup.write_report(a.out)


def measure(tree: Path, env: dict[str, str], runs: int, manifests: Path, strategy: list[str],
            index_only: bool = False) -> tuple[int, list[tuple[str, tuple[float, float]]]]:
    """(the tree's chunk count, each step's wall and CPU seconds)."""
    out: list[tuple[str, tuple[float, float]]] = []
    report: list[str] = []
    out.append(("`index`, vectors cached (first pass)", run(["index", *strategy, "--json", str(tree)], env, report)))
    chunks = int(json.loads(report[0])["chunks"])
    if index_only:
        return chunks, out
    query = ["query", *strategy, str(tree), QUESTION, "--search", "hybrid"]
    run(query, env)  # the first question after indexing: nothing left to do, but the OS cache warms alike for all
    out.append(("`query --search hybrid`, unchanged tree", best(query, env, runs)))
    out.append(("`query --search hybrid`, manifest removed (the path before it)",
                best(query, env, runs, before=sorted(manifests.glob("*.json")))))
    edited = tree / "copy-00" / EDITED
    with edited.open("a", encoding="utf-8") as fh:
        fh.write("\nOne more sentence about borrowing, written after the tree was indexed.\n")
    out.append(("re-`index`, one file changed", run(["index", *strategy, str(tree)], env)))
    out.append(("`query --search hybrid` after that", best(query, env, runs)))
    return chunks, out


if __name__ == "__main__":
    main()
