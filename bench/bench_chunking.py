"""Chunking speed against the cost of tokenizing (T) and parsing (P) a corpus; prints Markdown tables.

    python bench/bench_chunking.py [--cpu] [CORPUS]   (default: ../shared/corpus/rust-book beside the repo)

``--cpu`` times with each process's CPU time instead of the wall clock: steadier on a busy machine (the
tokenizer's threads gain nothing here, so CPU time and wall time agree on an idle one).

* T: one ``encode_ordinary`` pass over every file (encoding already loaded), best of 3.
* P: one markdown-it parse of every file with chunkscope's own parser, best of 3.
* LangChain: seed 004's ``RecursiveCharacterTextSplitter.from_tiktoken_encoder`` over every file (reference).
* Each registered strategy runs in FRESH processes (best of 3) that import chunkscope and load the tokenizer and
  the Markdown parser untimed, then time ``load_docs`` + ``tokens.prepare`` + ``strategy.chunk`` for every file
  of a corpus that process has never seen. The phases are timed separately (load, prepare, counters, structure,
  the rest of chunking); forcing counters and structure first changes nothing in the total, since ``chunk``
  builds them anyway and keeps them in ``doc.cache``. The size-only strategies (recursive, fixed) never parse:
  for them the structure phase is the outline scan (``doc.outline``), which is all they build.
* Targets: recursive and fixed <= 1.5 T; structure-aware strategies <= 1.5 (P + T).
* The interactive path: on the largest file, after one chunk with defaults, re-chunking with a changed size
  parameter (median of 20) must cost <= 0.25 of that file's T.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEFAULT_CORPUS = REPO.parent / "shared" / "corpus" / "rust-book"
SIZE_ONLY = ("recursive", "fixed")
STRUCTURE_AWARE = ("section-sentence", "header-window", "section", "content-type")
SEED_004 = dict(chunk_size=512, chunk_overlap=50, separators=["\n\n", "\n", ". ", " ", ""])

# Run in a fresh interpreter per measurement: nothing of the corpus is cached there.
CHILD = r"""
import json, sys, time
name, corpus = sys.argv[1], sys.argv[2]
clock = time.process_time if sys.argv[3] == "cpu" else time.perf_counter
size_only = sys.argv[4] == "1"
from chunkscope import tokens
from chunkscope.chunk import get_strategy
from chunkscope.docs import load_docs
from chunkscope.structure import _parser
strategy = get_strategy(name)
tok_name = strategy.length_tokenizer
tokens.get_tokenizer(tok_name)
if tok_name in tokens.TIKTOKEN_NAMES:
    tokens._token_byte_lengths(tok_name)  # the token-length table belongs to loading the tokenizer
_parser()
t0 = clock()
docs = load_docs(corpus).documents
t1 = clock()
tokens.prepare(docs, tok_name)
t2 = clock()
for d in docs:
    strategy.counter(d)
t3 = clock()
for d in docs:
    d.outline if size_only else d.structure
parsed = sum("structure" in d.cache for d in docs)
t4 = clock()
n = sum(len(strategy.chunk(d)) for d in docs)
t5 = clock()
parsed = sum("structure" in d.cache for d in docs)  # size-only strategies: documents the outline had to parse
print(json.dumps({"total": t5 - t0, "load": t1 - t0, "prepare": t2 - t1, "counters": t3 - t2,
                  "structure": t4 - t3, "chunk": t5 - t4, "chunks": n, "docs": len(docs), "parsed": parsed}))
"""


CLOCK = time.perf_counter


def best_of(n: int, fn) -> float:
    best = float("inf")
    for _ in range(n):
        t = CLOCK()
        fn()
        best = min(best, CLOCK() - t)
    return best


def main_size_param(cls) -> tuple[str, int] | None:
    """The strategy's main size parameter (by name) and a value 25% below its default."""
    ints = [p for p in cls.parameters if p.type is int]
    exact = [p for p in ints if p.name in ("chunk_size", "max_tokens", "size", "window_size", "max_words")]
    loose = [p for p in ints if any(k in p.name for k in ("size", "tokens", "max", "window", "words"))
             and not any(k in p.name for k in ("overlap", "min"))]
    for p in exact + loose:
        value = int(p.default * 0.75)
        return p.name, max(value, int(p.min)) if p.min is not None else value
    return None


def run_child(name: str, corpus: Path, clock: str) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO / "src") + os.pathsep + env.get("PYTHONPATH", "")
    size_only = "1" if name in SIZE_ONLY else "0"
    proc = subprocess.run([sys.executable, "-c", CHILD, name, str(corpus), clock, size_only], capture_output=True,
                          text=True, env=env)
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["failed"])[-1]
        raise RuntimeError(last)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def verdict(ok: bool) -> str:
    return "pass" if ok else "FAIL"


def main(argv: list[str]) -> int:
    global CLOCK
    args = [a for a in argv[1:] if a != "--cpu"]
    clock = "cpu" if "--cpu" in argv[1:] else "wall"
    CLOCK = time.process_time if clock == "cpu" else time.perf_counter
    corpus = Path(args[0]) if args else DEFAULT_CORPUS
    if not corpus.exists():
        print(f"{corpus}: no such corpus", file=sys.stderr)
        return 2
    os.environ.setdefault("CHUNKSCOPE_CACHE", str(Path(tempfile.gettempdir()) / "cs-cache-bench"))
    sys.path.insert(0, str(REPO / "src"))

    from chunkscope import tokens
    from chunkscope.chunk import _BUILTIN, get_strategy, strategy_class
    from chunkscope.docs import load_docs
    from chunkscope.structure import _parser

    docs = load_docs(corpus).documents
    texts = [d.text for d in docs]
    enc = tokens.tiktoken_encoding("cl100k_base")
    enc.encode_ordinary("warm up")
    T = best_of(3, lambda: [enc.encode_ordinary(t) for t in texts])
    # P is a plain markdown-it-py parse (CommonMark + tables, inline included), what "parsing the Markdown"
    # costs anyone; chunkscope's own parser skips the inline pass except for headings.
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark", {"html": True}).enable("table")
    P = best_of(3, lambda: [md.parse(t) for t in texts])
    print(f"# Chunking benchmark: {corpus} ({len(docs)} files, {sum(map(len, texts)):,} chars; "
          f"{'CPU' if clock == 'cpu' else 'wall-clock'} time)\n")
    print(f"T (encode_ordinary, every file) = {T * 1000:.1f} ms; P (markdown-it parse, every file) = {P * 1000:.1f} ms; "
          f"P + T = {(P + T) * 1000:.1f} ms\n")

    notes: list[str] = []
    rows: list[tuple] = []
    phases: list[tuple] = []

    # LangChain, in this process, encoding loaded (its tiktoken reads the rank files from a local cache folder).
    lc_texts: list[list[str]] | None = None
    try:
        cache = Path(tempfile.mkdtemp(prefix="tiktoken-"))
        tokens.populate_tiktoken_cache(cache)
        os.environ["TIKTOKEN_CACHE_DIR"] = str(cache)
        from langchain_text_splitters import RecursiveCharacterTextSplitter

        lc = RecursiveCharacterTextSplitter.from_tiktoken_encoder(encoding_name="cl100k_base", **SEED_004)
        lc_texts = [lc.split_text(t) for t in texts]
        t_lc = best_of(3, lambda: [lc.split_text(t) for t in texts])
        rows.append(("LangChain (split_text only)", t_lc, "reference", None))
    except Exception as exc:  # noqa: BLE001 - a reference only; say why it is missing
        notes.append(f"LangChain skipped: {type(exc).__name__}: {exc}")

    interactive: list[tuple] = []
    largest = max(docs, key=lambda d: len(d.text))
    T_file = best_of(5, lambda: enc.encode_ordinary(largest.text))

    for name in _BUILTIN:
        if name == "custom":
            continue
        try:
            cls = strategy_class(name)
        except Exception as exc:  # noqa: BLE001 - others are writing these modules right now
            notes.append(f"{name}: skipped, import failed ({type(exc).__name__}: {exc})")
            continue
        if name in SIZE_ONLY:
            target_label, limit = "<= 1.5 T", 1.5 * T
        elif name in STRUCTURE_AWARE:
            target_label, limit = "<= 1.5 (P+T)", 1.5 * (P + T)
        else:
            target_label, limit = "-", None
        try:
            runs = [run_child(name, corpus, clock) for _ in range(3)]
        except RuntimeError as exc:
            notes.append(f"{name}: skipped, the timing process failed ({exc})")
            continue
        best = min(runs, key=lambda r: r["total"])
        rows.append((name, best["total"], target_label, limit))
        phases.append((name, best))

        # Interactive: re-chunk one open document with a changed size.
        change = {"chunk_size": 384} if name in SIZE_ONLY else None
        if change is None:
            found = main_size_param(cls)
            change = {found[0]: found[1]} if found else None
        if change is None:
            notes.append(f"{name}: no size parameter found for the interactive test")
            continue
        try:
            doc = load_docs(largest.source).documents[0]
            get_strategy(name).chunk(doc)
            times = []
            for _ in range(20):
                t = CLOCK()
                get_strategy(name, **change).chunk(doc)
                times.append(CLOCK() - t)
            interactive.append((name, change, statistics.median(times), times[0]))
        except Exception as exc:  # noqa: BLE001 - report, keep benchmarking the others
            notes.append(f"{name}: interactive test failed ({type(exc).__name__}: {exc})")

    print("## Whole corpus: load + prepare + chunk (fresh process, best of 3)\n")
    print("| name | seconds | × T | × (P+T) | target | result |")
    print("|---|---:|---:|---:|---|---|")
    for name, secs, label, limit in rows:
        result = "reference" if limit is None else verdict(secs <= limit)
        print(f"| {name} | {secs:.3f} | {secs / T:.2f} | {secs / (P + T):.2f} | {label} | {result} |")

    if phases:
        print("\n## Where the time goes (seconds, same runs)\n")
        print("| name | load_docs | prepare (encode) | counters | structure parse (recursive, fixed: outline scan) "
              "| chunk (rest) | chunk (rest) × T | total without the parse × T | files parsed | chunks |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for name, r in phases:
            without = r["total"] if name in SIZE_ONLY else r["total"] - r["structure"]
            print(f"| {name} | {r['load']:.3f} | {r['prepare']:.3f} | {r['counters']:.3f} | {r['structure']:.3f} | "
                  f"{r['chunk']:.3f} | {r['chunk'] / T:.2f} | {without / T:.2f} | {r.get('parsed', '-')} | "
                  f"{r['chunks']} |")

    if lc_texts is not None and "recursive" in _BUILTIN:
        try:
            rec = get_strategy("recursive", **SEED_004)
            same = sum(1 for d, theirs in zip(load_docs(corpus).documents, lc_texts) if [c.text for c in rec.chunk(d)] == theirs)
            print(f"\nIdentical output, recursive vs LangChain: {same}/{len(docs)} files\n")
        except Exception as exc:  # noqa: BLE001
            notes.append(f"identity check failed: {type(exc).__name__}: {exc}")

    if interactive:
        print(f"## Interactive re-chunk of the largest file ({largest.path}, {len(largest.text):,} chars, "
              f"T = {T_file * 1000:.2f} ms)\n")
        print("| name | change | median ms | × T(file) | first run × T(file) | target | result |")
        print("|---|---|---:|---:|---:|---|---|")
        for name, change, med, first in interactive:
            ch = ", ".join(f"{k}={v}" for k, v in change.items())
            print(f"| {name} | {ch} | {med * 1000:.2f} | {med / T_file:.3f} | {first / T_file:.3f} | <= 0.25 | "
                  f"{verdict(med / T_file <= 0.25)} |")

    if notes:
        print("\nNotes:")
        for n in notes:
            print(f"- {n}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
