"""Lint vs chunk time per strategy on the Rust book corpus; prints a Markdown table.

    python bench/bench_lint.py [CORPUS] [--repeat N] [--strategy NAME ...]

The target (lint issue): ``chunkscope lint`` costs at most 1.5x ``chunkscope chunk`` with the same strategy.

* "chunk" is what the ``chunk`` command computes before it prints: `chunk_documents` on a freshly loaded tree
  (tokenizing and parsing included) and the embedder's word-piece count of every chunk (its ``embed_tokens``
  column). "chunk_documents" alone is shown too, as a stricter reference.
* "lint" is `chunk_documents` + `lint_tree` over its results on another fresh tree, which is what ``chunkscope
  lint`` costs: for strategies that never parse the Markdown (recursive, fixed) that includes the parse, which
  the split rules need.

* Then the commands themselves, end to end in fresh processes (start-up and output included):
  ``chunkscope chunk CORPUS -s NAME --format jsonl`` against ``chunkscope lint CORPUS -s NAME``.

Each figure is the best of N interleaved runs; the embedding tokenizer is loaded once before timing (a
per-process cost both commands pay), and its cache of word-piece counts is emptied before every chunk and lint
run. Wall time is noisy on a shared machine; CPU time (all threads) is the steadier figure.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))
os.environ.setdefault("CHUNKSCOPE_CACHE", "/tmp/cs-cache-bench-lint")

from chunkscope.chunking.drivers import chunk_documents  # noqa: E402
from chunkscope.chunking.model import count_embed_tokens  # noqa: E402
from chunkscope.chunking.registry import get_strategy, strategy_names  # noqa: E402
from chunkscope.document.loader import load_docs  # noqa: E402
from chunkscope.lint import lint_tree  # noqa: E402
from chunkscope.tokens import embed_tokenizer  # noqa: E402

DEFAULT_CORPUS = REPO.parent / "shared" / "corpus" / "rust-book"


def _timed(f) -> tuple[float, float, int]:
    w, c = time.perf_counter(), time.process_time()
    n = f()
    return time.perf_counter() - w, time.process_time() - c, n


def _run_cli(cmd: list[str]) -> float:
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    t = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, check=False)
    return time.perf_counter() - t


def run_chunk(corpus: Path, name: str, embed_counts: bool = True) -> tuple[float, float, int]:
    tree = load_docs(corpus)
    strategy = get_strategy(name)
    embed_tokenizer()._run_counts.clear()  # noqa: SLF001 - the word-piece counts of text runs, kept per process

    def go() -> int:
        chunks = [c for r in chunk_documents(tree.documents, strategy) for c in r.chunks]
        if embed_counts:
            count_embed_tokens(chunks)
        return len(chunks)

    return _timed(go)


def run_lint(corpus: Path, name: str, select: list[str] | None = None) -> tuple[float, float, int]:
    tree = load_docs(corpus)
    strategy = get_strategy(name)
    # Start cold, as a fresh `chunkscope lint` process does: no word-piece counts remembered from the last run.
    embed_tokenizer()._run_counts.clear()  # noqa: SLF001 - the word-piece counts of text runs, kept per process

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
    tree = load_docs(corpus)
    print(f"corpus: {corpus} ({len(tree.documents)} files, {sum(len(d.text) for d in tree.documents):,} chars), "
          f"best of {args.repeat}, {os.cpu_count()} CPUs\n")
    print("| strategy | chunks | findings | chunk_documents CPU (s) | chunk CPU (s) | lint CPU (s) | CPU ratio "
          "| chunk wall (s) | lint wall (s) | wall ratio | lint / chunk_documents, CPU |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    ratios = []
    for name in names:
        runs: dict[str, list[tuple[float, float, int]]] = {"docs": [], "chunk": [], "lint": []}
        for _ in range(args.repeat):  # interleaved, so a burst of load elsewhere hits all three alike
            runs["docs"].append(run_chunk(corpus, name, embed_counts=False))
            runs["chunk"].append(run_chunk(corpus, name))
            runs["lint"].append(run_lint(corpus, name))
        best = {k: (min(r[0] for r in v), min(r[1] for r in v), v[0][2]) for k, v in runs.items()}
        (_, dc, _), (cw, cc, n_chunks), (lw, lc, n_find) = best["docs"], best["chunk"], best["lint"]
        ratios.append((lw / cw, lc / cc))
        print(f"| {name} | {n_chunks} | {n_find} | {dc:.2f} | {cc:.2f} | {lc:.2f} | {lc / cc:.2f}x | {cw:.2f} "
              f"| {lw:.2f} | {lw / cw:.2f}x | {lc / dc:.2f}x |")
    print(f"\nworst CPU ratio {max(r[1] for r in ratios):.2f}x, worst wall ratio {max(r[0] for r in ratios):.2f}x "
          f"(target: lint <= 1.5x chunk)")

    print("\n### The commands, end to end (fresh processes, output to /dev/null)\n")
    print("`chunk` lints too by default (its chunks carry the findings in `warnings`); `--no-lint` skips that.\n")
    print("| strategy | `chunk --format jsonl` wall (s) | `chunk --no-lint --format jsonl` wall (s) | `lint` wall (s) "
          "| lint / chunk | lint / chunk --no-lint |")
    print("|---|---:|---:|---:|---:|---:|")
    exe = [sys.executable, "-m", "chunkscope"]
    for name in names:
        chunk_t, bare_t, lint_t = [], [], []
        for _ in range(args.repeat):
            chunk_t.append(_run_cli([*exe, "chunk", str(corpus), "-s", name, "--format", "jsonl"]))
            bare_t.append(_run_cli([*exe, "chunk", str(corpus), "-s", name, "--format", "jsonl", "--no-lint"]))
            lint_t.append(_run_cli([*exe, "lint", str(corpus), "-s", name]))
        c, b, lt = min(chunk_t), min(bare_t), min(lint_t)
        print(f"| {name} | {c:.2f} | {b:.2f} | {lt:.2f} | {lt / c:.2f}x | {lt / b:.2f}x |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
