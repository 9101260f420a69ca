"""Lint vs chunk time per strategy on the Rust book corpus; prints a Markdown table.

    python bench/bench_lint.py [CORPUS] [--repeat N] [--strategy NAME ...]

"chunk" is `chunk_documents` on a freshly loaded tree (parsing and tokenizing included, as the ``chunk`` command
pays them); "lint" is the same chunking plus `lint_tree` over its results, on another fresh tree, which is what
``chunkscope lint`` costs. The target is lint <= 1.5x chunk. Each figure is the best of N runs; the embedding
tokenizer is loaded once before timing (a per-process cost the ``chunk`` command pays too), but lint's cache of
word-piece counts is emptied before every lint run. Wall time is noisy on a shared machine; CPU time (all threads)
is the steadier figure.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))
os.environ.setdefault("CHUNKSCOPE_CACHE", "/tmp/cs-cache-bench-lint")

from chunkscope.chunk import chunk_documents, get_strategy, strategy_names  # noqa: E402
from chunkscope.docs import load_docs  # noqa: E402
from chunkscope import lint  # noqa: E402
from chunkscope.lint import RULES, lint_tree  # noqa: E402
from chunkscope.tokens import embed_tokenizer  # noqa: E402

DEFAULT_CORPUS = REPO.parent / "shared" / "corpus" / "rust-book"


def _timed(f) -> tuple[float, float, int]:
    w, c = time.perf_counter(), time.process_time()
    n = f()
    return time.perf_counter() - w, time.process_time() - c, n


def run_chunk(corpus: Path, name: str) -> tuple[float, float, int]:
    tree = load_docs(corpus)
    strategy = get_strategy(name)
    return _timed(lambda: sum(len(r.chunks) for r in chunk_documents(tree.documents, strategy)))


def run_lint(corpus: Path, name: str, select: list[str] | None = None) -> tuple[float, float, int]:
    tree = load_docs(corpus)
    strategy = get_strategy(name)
    # Start cold, as a fresh `chunkscope lint` process does: no word-piece counts remembered from the last run.
    lint._RUN_CACHE.clear()
    lint._bert_pretokenized.cache_clear()

    def go() -> int:
        results = chunk_documents(tree.documents, strategy)
        return len(lint_tree(tree, strategy, None, select=select, results=results).findings)

    return _timed(go)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("corpus", nargs="?", default=str(DEFAULT_CORPUS))
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--strategy", action="append", help="strategies to measure (default: all but custom)")
    args = ap.parse_args()
    corpus = Path(args.corpus)
    if not corpus.is_dir():
        print(f"no corpus at {corpus}", file=sys.stderr)
        return 2
    names = args.strategy or [n for n in strategy_names() if n != "custom"]
    embed_tokenizer().count("warm up")
    no_embed = [r for r in RULES if r != "embed-truncation"]
    tree = load_docs(corpus)
    print(f"corpus: {corpus} ({len(tree.documents)} files, {sum(len(d.text) for d in tree.documents):,} chars), "
          f"best of {args.repeat}, {os.cpu_count()} CPUs\n")
    print("| strategy | chunks | findings | chunk wall (s) | lint wall (s) | wall ratio | chunk CPU (s) | lint CPU (s) "
          "| CPU ratio | lint CPU without embed-truncation (s) |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    ratios = []
    for name in names:
        runs: dict[str, list[tuple[float, float, int]]] = {"chunk": [], "lint": [], "bare": []}
        for _ in range(args.repeat):  # interleaved, so a burst of load elsewhere hits all three alike
            runs["chunk"].append(run_chunk(corpus, name))
            runs["lint"].append(run_lint(corpus, name))
            runs["bare"].append(run_lint(corpus, name, no_embed))
        best = {k: (min(r[0] for r in v), min(r[1] for r in v), v[0][2]) for k, v in runs.items()}
        (cw, cc, n_chunks), (lw, lc, n_find), (_, bc, _) = best["chunk"], best["lint"], best["bare"]
        ratios.append((lw / cw, lc / cc))
        print(f"| {name} | {n_chunks} | {n_find} | {cw:.2f} | {lw:.2f} | {lw / cw:.2f}x | {cc:.2f} | {lc:.2f} "
              f"| {lc / cc:.2f}x | {bc:.2f} |")
    print(f"\nworst wall ratio {max(r[0] for r in ratios):.2f}x, worst CPU ratio {max(r[1] for r in ratios):.2f}x "
          f"(target <= 1.5x)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
