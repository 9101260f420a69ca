"""Chunking speed against the cost of tokenizing (T) and parsing (P) a corpus; prints Markdown tables.

    python bench/bench_chunking.py [--only NAME,NAME] [CORPUS]   (default: ../shared/corpus/rust-book beside the repo)

* T: one ``encode_ordinary`` pass over every file (encoding already loaded, a plain ``tiktoken.Encoding`` used from
  this thread only, as any tiktoken user has it); wall clock and CPU time.
* P: one plain markdown-it-py parse of every file (CommonMark + tables).
* Rounds: each of 8 rounds measures T, P and LangChain, then runs every strategy once, so every figure is sampled
  over the same minutes: the machine's speed drifts by up to ±60% over a run, and a baseline taken in another
  minute than its samples misjudges them either way. The verdict reads the median, over the rounds, of each sample
  against its own round's T (or P + T) ("paired"); the least sample over the least T of the rounds (timeit's
  reading) is printed beside it.
* LangChain: seed 004's ``RecursiveCharacterTextSplitter.from_tiktoken_encoder`` over every file (reference).
* LangChain's Markdown recipe: ``MarkdownHeaderTextSplitter`` (``#``..``####``, headers kept in the text) followed
  by ``RecursiveCharacterTextSplitter.from_tiktoken_encoder`` (cl100k_base, 512 tokens, no overlap: the limits of
  section-sentence's defaults), timed in each round beside the strategies; section-sentence (a fresh process,
  ``load_docs`` included, which LangChain's texts, already in memory, do not pay) must be at least as fast: the
  paired ratio <= 1.0.
* Each registered strategy runs in FRESH processes (one per round) that import chunkscope and load the tokenizer
  and the Markdown parser untimed, then time what ``chunkscope chunk`` does: ``load_docs`` + ``chunk_documents``
  over a corpus that process has never seen. The tree is tokenized on a background thread (tiktoken releases the
  GIL) while the Markdown is scanned and chunked, so wall time can be below the sum of the work: both the wall clock
  and the process's CPU time (all threads) are printed, each against T measured the same way.
* A second set of fresh processes forces the phases one after another (load, encode + token offsets, structure,
  the rest of chunking) to show where the time goes. The size-only strategies (recursive, fixed) never parse:
  for them the structure phase is the outline scan (``doc.outline``), which is all they build.
* Targets: recursive and fixed <= 1.5 T; structure-aware strategies <= 1.5 (P + T) (wall clock).
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
#: Fresh-process samples per strategy (as many as T's), and how many of those rounds also time the phases.
ROUNDS = 8
PHASE_ROUNDS = 3
SEED_004 = dict(chunk_size=512, chunk_overlap=50, separators=["\n\n", "\n", ". ", " ", ""])
#: LangChain's header-then-recursive recipe, at section-sentence's default limits.
LC_HEADERS = [("#", "h1"), ("##", "h2"), ("###", "h3"), ("####", "h4")]
LC_MARKDOWN = dict(chunk_size=512, chunk_overlap=0)

# Run in a fresh interpreter per measurement: nothing of the corpus is cached there. Mode "real" times what
# `chunkscope chunk` does (load_docs + chunk_documents: the tree is tokenized on a background thread while the
# Markdown is scanned and chunked); mode "phases" forces each phase to finish before the next, to show where the
# time goes (its total is higher than the real one: nothing overlaps).
CHILD = r"""
import json, sys, time
name, corpus, mode, size_only = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4] == "1"
from chunkscope import tokens
from chunkscope.chunking.drivers import chunk_documents
from chunkscope.chunking.registry import get_strategy
from chunkscope.document.loader import load_docs
from chunkscope.document.structure import _parser
strategy = get_strategy(name)
tok_name = strategy.length_tokenizer
tokens.get_tokenizer(tok_name)
# Loaded as chunking loads it (numpy, the encoding, its token-length table: `tokens.background.prepare`), outside
# the clock: the cut is timed, not the load.
tokens.prepare([], tok_name)
_parser()
w0, c0 = time.perf_counter(), time.process_time()
if mode == "real":
    docs = load_docs(corpus).documents
    n = sum(len(cd.chunks) for cd in chunk_documents(docs, strategy))
    w1, c1 = time.perf_counter(), time.process_time()
    print(json.dumps({"total": w1 - w0, "cpu": c1 - c0, "chunks": n, "docs": len(docs)}))
    raise SystemExit(0)
clock = time.perf_counter
t0 = clock()
docs = load_docs(corpus).documents
t1 = clock()
tokens.prepare(docs, tok_name)
for d in docs:
    strategy.counter(d)  # waits for each background encoding: prepare and counters are one phase here
t3 = clock()
for d in docs:
    d.outline if size_only else d.structure
t4 = clock()
n = sum(len(strategy.chunk(d)) for d in docs)
t5 = clock()
parsed = sum(d.analysis.structure_parsed for d in docs)  # size-only strategies: documents the outline had to parse
print(json.dumps({"total": t5 - t0, "load": t1 - t0, "counters": t3 - t1, "structure": t4 - t3, "chunk": t5 - t4,
                  "chunks": n, "docs": len(docs), "parsed": parsed}))
"""


def best_of(n: int, fn) -> float:
    """Least wall-clock seconds of ``n`` runs."""
    return best_of_both(n, fn)[0]


def best_of_both(n: int, fn) -> tuple[float, float]:
    """Least wall-clock and least CPU seconds of ``n`` runs."""
    wall = cpu = float("inf")
    for _ in range(n):
        w, c = time.perf_counter(), time.process_time()
        fn()
        wall, cpu = min(wall, time.perf_counter() - w), min(cpu, time.process_time() - c)
    return wall, cpu


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


def run_child(name: str, corpus: Path, mode: str) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO / "src") + os.pathsep + env.get("PYTHONPATH", "")
    size_only = "1" if name in SIZE_ONLY else "0"
    proc = subprocess.run([sys.executable, "-c", CHILD, name, str(corpus), mode, size_only], capture_output=True,
                          text=True, env=env)
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["failed"])[-1]
        raise RuntimeError(last)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def print_markdown_recipe(samples: list[dict], base_rounds: list[dict[str, float]]) -> None:
    """section-sentence against LangChain's header-then-recursive splitting, each round's pair timed together."""
    pairs = [(r["total"], b["lc_md"]) for r, b in zip(samples, base_rounds)]
    paired = statistics.median(ss / lc for ss, lc in pairs)
    print("\n## section-sentence against LangChain's MarkdownHeaderTextSplitter + RecursiveCharacterTextSplitter "
          "(512 tokens, cl100k_base; same rounds)\n")
    print("| name | least wall s | median wall s |")
    print("|---|---:|---:|")
    print(f"| section-sentence (fresh process, load_docs + chunk_documents) | {min(p[0] for p in pairs):.3f} | "
          f"{statistics.median(p[0] for p in pairs):.3f} |")
    print(f"| LangChain header + recursive (texts in memory) | {min(p[1] for p in pairs):.3f} | "
          f"{statistics.median(p[1] for p in pairs):.3f} |")
    print(f"\nPaired ratio section-sentence / LangChain (median of {len(pairs)} rounds): {paired:.2f} "
          f"(target <= 1.00: {verdict(paired <= 1.0)})\n")


def verdict(ok: bool) -> str:
    return "pass" if ok else "FAIL"


def main(argv: list[str]) -> int:
    args = argv[1:]
    only: set[str] | None = None
    if "--only" in args:
        i = args.index("--only")
        only = set(args[i + 1].split(","))
        del args[i:i + 2]
    corpus = Path(args[0]) if args else DEFAULT_CORPUS
    if not corpus.exists():
        print(f"{corpus}: no such corpus", file=sys.stderr)
        return 2
    os.environ.setdefault("CHUNKSCOPE_CACHE", str(Path(tempfile.gettempdir()) / "cs-cache-bench"))
    sys.path.insert(0, str(REPO / "src"))

    from chunkscope import tokens
    from chunkscope.chunking.registry import _BUILTIN, get_strategy, strategy_class
    from chunkscope.document.loader import load_docs

    docs = load_docs(corpus).documents
    texts = [d.text for d in docs]
    # T is what a plain tiktoken user pays: an Encoding of its own, built from the same rank file, used from this
    # thread only.
    import tiktoken

    enc = tiktoken.Encoding(**tokens.tiktoken_constructor_args("cl100k_base"))
    enc.encode_ordinary("warm up")
    T, T_cpu = best_of_both(3, lambda: [enc.encode_ordinary(t) for t in texts])
    # P is a plain markdown-it-py parse (CommonMark + tables, inline included), what "parsing the Markdown"
    # costs anyone; chunkscope's own parser skips the inline pass except for headings.
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark", {"html": True}).enable("table")
    P = best_of(3, lambda: [md.parse(t) for t in texts])
    print(f"# Chunking benchmark: {corpus} ({len(docs)} files, {sum(map(len, texts)):,} chars; "
          f"{os.cpu_count()} CPUs)\n")
    print(f"T (encode_ordinary, every file) = {T * 1000:.1f} ms (CPU {T_cpu * 1000:.1f} ms); P (markdown-it parse, every file) = {P * 1000:.1f} ms; "
          f"P + T = {(P + T) * 1000:.1f} ms\n")

    notes: list[str] = []
    rows: list[tuple] = []
    phases: list[tuple] = []

    # LangChain, in this process, encoding loaded (its tiktoken reads the rank files from a local cache folder).
    lc_texts: list[list[str]] | None = None
    split_all = split_md = None
    try:
        cache = Path(tempfile.mkdtemp(prefix="tiktoken-"))
        tokens.populate_tiktoken_cache(cache)
        os.environ["TIKTOKEN_CACHE_DIR"] = str(cache)
        from langchain_text_splitters import RecursiveCharacterTextSplitter

        lc = RecursiveCharacterTextSplitter.from_tiktoken_encoder(encoding_name="cl100k_base", **SEED_004)
        lc_texts = [lc.split_text(t) for t in texts]
        split_all = lambda: [lc.split_text(t) for t in texts]  # noqa: E731 - timed once per round below
        from langchain_text_splitters import MarkdownHeaderTextSplitter

        headers = MarkdownHeaderTextSplitter(LC_HEADERS, strip_headers=False)
        lc_rec = RecursiveCharacterTextSplitter.from_tiktoken_encoder(encoding_name="cl100k_base", **LC_MARKDOWN)
        split_md = lambda: [lc_rec.split_documents(headers.split_text(t)) for t in texts]  # noqa: E731
    except Exception as exc:  # noqa: BLE001 - a reference only; say why it is missing
        notes.append(f"LangChain skipped: {type(exc).__name__}: {exc}")

    interactive: list[tuple] = []
    largest = max(docs, key=lambda d: len(d.text))
    T_file = best_of(25, lambda: enc.encode_ordinary(largest.text))

    # Which strategies to time, with their targets.
    selected: list[tuple[str, type, str, str | None]] = []
    for name in _BUILTIN:
        if name == "custom" or (only is not None and name not in only):
            continue
        try:
            cls = strategy_class(name)
        except Exception as exc:  # noqa: BLE001 - report, benchmark the others
            notes.append(f"{name}: skipped, import failed ({type(exc).__name__}: {exc})")
            continue
        if name in SIZE_ONLY:
            selected.append((name, cls, "<= 1.5 T", "T"))
        elif name in STRUCTURE_AWARE:
            selected.append((name, cls, "<= 1.5 (P+T)", "P+T"))
        else:
            selected.append((name, cls, "-", None))

    # Fresh processes in interleaved rounds (every strategy once per round), so that each strategy's samples are
    # spread over the whole run, as T's are: this machine has slow spells lasting seconds, and consecutive samples
    # of one strategy could all fall into one. The least of ROUNDS samples is kept, as for T.
    runs: dict[str, list[dict]] = {name: [] for name, *_ in selected}
    split: dict[str, list[dict]] = {name: [] for name, *_ in selected}
    failed: set[str] = set()
    # Each round also measures its own T and P (and LangChain) right before its strategy samples: a sample is
    # compared with the baseline measured in the same minute, since this machine's speed drifts by up to ±60%
    # over a run (a T taken in a fast moment against strategies run in a slow spell reads as a failure, and the
    # reverse as an easy pass).
    base_rounds: list[dict[str, float]] = []
    for round_no in range(ROUNDS):
        t_r, t_r_cpu = best_of_both(2, lambda: [enc.encode_ordinary(t) for t in texts])
        base = {"T": t_r, "T_cpu": t_r_cpu, "P": best_of(1, lambda: [md.parse(t) for t in texts])}
        if split_all is not None:
            base["lc"], base["lc_cpu"] = best_of_both(1, split_all)
        if split_md is not None:
            base["lc_md"] = best_of(1, split_md)
        base_rounds.append(base)
        for name, *_ in selected:
            if name in failed:
                continue
            try:
                runs[name].append(run_child(name, corpus, "real"))
                if round_no < PHASE_ROUNDS:
                    split[name].append(run_child(name, corpus, "phases"))
            except RuntimeError as exc:
                notes.append(f"{name}: skipped, the timing process failed ({exc})")
                failed.add(name)

    for name, cls, target_label, limit in selected:
        if name in failed:
            continue
        rows.append((name, [(r["total"], r["cpu"]) for r in runs[name]], target_label, limit))
        phases.append((name, min(split[name], key=lambda r: r["total"])))

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
                t = time.perf_counter()
                get_strategy(name, **change).chunk(doc)
                times.append(time.perf_counter() - t)
            interactive.append((name, change, statistics.median(times), times[0]))
        except Exception as exc:  # noqa: BLE001 - report, keep benchmarking the others
            notes.append(f"{name}: interactive test failed ({type(exc).__name__}: {exc})")

    # T again, now that the machine has run everything else: the least of all samples heads the report and
    # scales the phase table; the verdicts use the paired ratios of each round.
    T2, T2_cpu = best_of_both(5, lambda: [enc.encode_ordinary(t) for t in texts])
    T = min([T, T2, *(b["T"] for b in base_rounds)])
    T_cpu = min([T_cpu, T2_cpu, *(b["T_cpu"] for b in base_rounds)])
    print(f"T, least of all {8 + 2 * len(base_rounds)} samples taken before, during and after the strategies: "
          f"{T * 1000:.1f} ms (CPU {T_cpu * 1000:.1f} ms)\n")
    if split_all is not None:
        rows.insert(0, ("LangChain (split_text only)", [(b["lc"], b["lc_cpu"]) for b in base_rounds], "reference", None))
    print(f"## Whole corpus: load_docs + chunk_documents (fresh processes, {ROUNDS} interleaved rounds)\n")
    print("Each round measures T and P, then runs every strategy once. \"paired\": the median over the rounds of each "
          "sample against its own round's T (or P + T), robust to the machine's drift, and the verdict; × T: the "
          "least sample over the least T of the same rounds (timeit's reading), which a fast moment for T and a "
          "slow one for the strategy can tip either way.\n")
    rT = min(b["T"] for b in base_rounds)
    rT_cpu = min(b["T_cpu"] for b in base_rounds)
    rPT = min(b["P"] for b in base_rounds) + rT
    print("| name | wall s | × T | × (P+T) | paired × T | paired × (P+T) | CPU s | CPU × T(CPU) | target (wall) | result |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---|---|")
    for name, samples, label, limit in rows:
        pairs = list(zip(samples, base_rounds))
        wall, cpu = min(w for w, _ in samples), min(c for _, c in samples)
        p_t = statistics.median(w / b["T"] for (w, _), b in pairs)
        p_pt = statistics.median(w / (b["P"] + b["T"]) for (w, _), b in pairs)
        ratio = {"T": p_t, "P+T": p_pt}.get(limit)
        result = "reference" if ratio is None else verdict(ratio <= 1.5)
        print(f"| {name} | {wall:.3f} | {wall / rT:.2f} | {wall / rPT:.2f} | {p_t:.2f} | {p_pt:.2f} | {cpu:.3f} "
              f"| {cpu / rT_cpu:.2f} | {label} | {result} |")

    if split_md is not None and "section-sentence" in runs and runs["section-sentence"]:
        print_markdown_recipe(runs["section-sentence"], base_rounds)

    if phases:
        print(f"\n## Where the time goes: the phases one after another, nothing overlapping (seconds, least of {PHASE_ROUNDS})\n")
        print("| name | load_docs | encode + token offsets | structure parse (recursive, fixed: outline scan) "
              "| chunk (rest) | sum | sum × T | files parsed | chunks |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
        for name, r in phases:
            print(f"| {name} | {r['load']:.3f} | {r['counters']:.3f} | {r['structure']:.3f} | {r['chunk']:.3f} | "
                  f"{r['total']:.3f} | {r['total'] / T:.2f} | {r.get('parsed', '-')} | {r['chunks']} |")

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
