"""Retrieval benchmarks: query latency, local Qdrant scaling, and indexing a real corpus; prints Markdown tables.

    python bench/bench_retrieval.py [--corpus PATH] [--strategy recursive] [--sizes 1000,5000,...] [--skip-corpus]

* Model: load time, and query embedding latency alone (p50/p95, the model already loaded, no cache).
* Local-mode scaling: a collection grown to each size with random normalized vectors and realistic payloads
  (1.2 kB text, 100 files, chapters) through `Store.sync`; per size: write rate, reopen time (local mode loads
  every point into memory), search latency p50/p95 (k=5), with and without a payload filter. Interactive means
  a search under 100 ms.
* Query latency at 10k points: real question embedding + search, p50/p95.
* Corpus (default ../shared/corpus/rust-book, strategy ``recursive`` = seed 004's 512/50): raw
  ``SentenceTransformer.encode`` of every chunk's text vs. `Retriever.ensure_indexed` with a cold embedding cache
  and an empty store (target ratio <= 1.2), then the second, unchanged run (fresh process state: docs reloaded,
  chunked, tokenized, ids compared).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))
DEFAULT_CORPUS = REPO.parent / "shared" / "corpus" / "rust-book"
INTERACTIVE_MS = 100.0

from chunkscope.chunking.chunk import Chunk, get_strategy  # noqa: E402
from chunkscope.document.loader import load_docs  # noqa: E402
from chunkscope.embedding.embedder import Embedded, EmbedStats, Embedder  # noqa: E402
from chunkscope.retrieval.retriever import Retriever  # noqa: E402
from chunkscope.retrieval.store import Store  # noqa: E402


def pct(values: list[float], q: float) -> float:
    s = sorted(values)
    if not s:
        return float("nan")
    i = min(len(s) - 1, max(0, round(q / 100 * (len(s) - 1))))
    return s[i]


def ms(x: float) -> str:
    return f"{x * 1000:.1f}"


def table(headers: list[str], rows: list[list[object]]) -> str:
    out = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


def emit(text: str = "") -> None:
    print(text, flush=True)


class RandomEmbedder:
    """Random normalized vectors of the real model's size: fills a store without paying for the model."""

    model_id = "bench-random"
    model = "bench-random"

    def __init__(self, dim: int) -> None:
        self.dim = dim
        self.rng = np.random.default_rng(7)

    def embed(self, texts, *, on_progress=None, cancel=None, token_counts=None, label=""):
        v = self.rng.standard_normal((len(texts), self.dim)).astype(np.float32)
        return Embedded(v / np.linalg.norm(v, axis=1, keepdims=True), EmbedStats(texts=len(texts), misses=len(texts)))


def fake_chunks(n: int, start: int = 0) -> list[Chunk]:
    body = ("Ownership rules: each value has an owner; there can be only one owner at a time; when the owner goes "
            "out of scope the value is dropped. ") * 9  # ~1.2 kB, a typical 512-token chunk's text
    out = []
    for i in range(start, start + n):
        path = f"ch{i % 100:02d}-file.md"
        text = f"{i}: {body}"
        out.append(Chunk(path=path, index=i, start=i * 2000, end=i * 2000 + len(text), start_line=i * 30 + 1,
                         end_line=i * 30 + 29, text=text, tokens=300, heading_path=["Chapter", f"Section {i}"],
                         metadata={"chapter_id": f"ch{i % 100:02d}", "chapter": i % 100, "chunk_index": i,
                                   "kind": "prose" if i % 2 else "code"}))
    return out


def bench_model(emb: Embedder, questions: list[str]) -> list[float]:
    t0 = time.perf_counter()
    emb.load()
    load = time.perf_counter() - t0
    import torch

    def run() -> list[float]:
        emb.embed_query("warm up")
        out = []
        for q in questions:
            t = time.perf_counter()
            emb.embed_query(q)
            out.append(time.perf_counter() - t)
        return out

    default_threads = torch.get_num_threads()
    times = run()
    torch.set_num_threads(1)
    one = run()
    torch.set_num_threads(default_threads)
    emit("## Model\n")
    emit(table(["model", "device", "load s (import + weights)", "torch threads", "query embed p50 ms", "p95 ms"], [
        [emb.model_id, emb.device, f"{load:.2f}", default_threads, ms(pct(times, 50)), ms(pct(times, 95))],
        ["", "", "", 1, ms(pct(one, 50)), ms(pct(one, 95))],
    ]))
    emit()
    return times


def bench_scaling(emb: Embedder, questions: list[str], sizes: list[int], workdir: Path) -> None:
    rnd = RandomEmbedder(emb.dim)
    path = workdir / "scale-qdrant"
    rows = []
    qvecs = [emb.embed_query(q) for q in questions]
    at10k: list[float] = []
    have = 0
    chunks: list[Chunk] = []
    store = Store(workdir, path=path)
    collection = store.use("bench-scale", rnd, {})
    for n in sizes:
        chunks.extend(fake_chunks(n - have, have))
        t = time.perf_counter()
        rep = store.sync(chunks, rnd, collection)
        fill = time.perf_counter() - t
        added = n - have
        have = n
        store.close()
        t = time.perf_counter()
        store = Store(workdir, path=path)
        reopen = time.perf_counter() - t
        collection = store.use("bench-scale", rnd, {})
        store.search(qvecs[0], 5, collection=collection)  # first query pays lazy set-up, if any
        plain, broad, selective = [], [], []
        for v in qvecs[:20]:
            t = time.perf_counter()
            store.search(v, 5, collection=collection)
            plain.append(time.perf_counter() - t)
            t = time.perf_counter()
            store.search(v, 5, filters={"kind": "prose"}, collection=collection)  # half the points match: served from the unfiltered ranking
            broad.append(time.perf_counter() - t)
            t = time.perf_counter()
            store.search(v, 5, filters={"chapter": "3"}, collection=collection)  # 1% match: qdrant-client's per-point filter pass
            selective.append(time.perf_counter() - t)
        if n == 10_000:
            for q in questions:
                t = time.perf_counter()
                store.search(emb.embed_query(q), 5, threshold=0.7, collection=collection)
                at10k.append(time.perf_counter() - t)
        def yes(xs: list[float]) -> str:
            return "yes" if pct(xs, 95) * 1000 <= INTERACTIVE_MS else "**no**"

        rows.append([f"{n:,}", f"{added / fill:,.0f}" if fill else "-", f"{reopen:.2f}",
                     f"{ms(pct(plain, 50))} / {ms(pct(plain, 95))}", f"{ms(pct(broad, 50))} / {ms(pct(broad, 95))}",
                     f"{ms(pct(selective, 50))} / {ms(pct(selective, 95))}",
                     f"{yes(plain)} / {yes(broad)} / {yes(selective)}"])
        emit(f"<!-- {n} points: sync {rep.upserted} in {fill:.1f}s -->")
    store.close()
    emit("\n## Local-mode Qdrant: search latency by collection size (k=5, 384-d, payload ~1.3 kB)\n")
    emit(table(["points", "write points/s", "reopen s", "search p50 / p95 ms", "filter kind=prose (50%) p50 / p95 ms",
                "filter chapter=3 (1%) p50 / p95 ms", f"interactive (p95 <= {INTERACTIVE_MS:.0f} ms): plain / 50% / 1%"], rows))
    emit()
    if at10k:
        emit("## Query latency at 10k points (real question embedding + search, k=5)\n")
        emit(table(["queries", "p50 ms", "p95 ms", "max ms"], [[len(at10k), ms(pct(at10k, 50)), ms(pct(at10k, 95)), ms(max(at10k))]]))
        emit()
    shutil.rmtree(path, ignore_errors=True)


def bench_corpus(corpus: Path, strategy_name: str, workdir: Path, rounds: int = 2) -> None:
    strategy = get_strategy(strategy_name)
    tree = load_docs(corpus)
    chunks = [c for d in tree for c in strategy.chunk(d)]
    texts = [c.embed_text for c in chunks]
    loader = Embedder(cache_dir=workdir / "unused-embcache")
    st = loader._load()  # noqa: SLF001 - the raw model, for the reference timing
    st.encode(texts[:32], batch_size=loader.batch_size, normalize_embeddings=True, show_progress_bar=False)  # warm-up

    # Raw encode and a cold index alternate, so a busy machine slows both alike; the best round of each counts.
    raws, firsts, model_secs = [], [], []
    rep1 = None
    for r in range(rounds):
        t = time.perf_counter()
        st.encode(texts, batch_size=loader.batch_size, normalize_embeddings=True, show_progress_bar=False)
        raws.append(time.perf_counter() - t)
        emb = Embedder(cache_dir=workdir / f"corpus-embcache-{r}")
        emb._st = st  # noqa: SLF001 - share the loaded model: model loading is not indexing
        store = Store(corpus, path=workdir / f"corpus-qdrant-{r}")
        t = time.perf_counter()
        rep1 = Retriever(load_docs(corpus), get_strategy(strategy_name), emb, store).ensure_indexed()
        firsts.append(time.perf_counter() - t)
        model_secs.append(emb.encode_seconds)
        store.close()
        emb.close()
        emit(f"<!-- round {r + 1}: raw {raws[-1]:.1f}s, index {firsts[-1]:.1f}s (model {model_secs[-1]:.1f}s); {rep1} -->")
    assert rep1 is not None
    raw, first = min(raws), min(firsts)
    best = firsts.index(first)
    other = first - model_secs[best]

    # Second run: everything from scratch but the store and the embedding cache of the last round (a new CLI
    # invocation would also pay the Python imports, not measured here).
    last = rounds - 1
    emb2 = Embedder(cache_dir=workdir / f"corpus-embcache-{last}")
    t = time.perf_counter()
    store2 = Store(corpus, path=workdir / f"corpus-qdrant-{last}")
    t_open = time.perf_counter() - t
    tree2 = load_docs(corpus)
    r2 = Retriever(tree2, get_strategy(strategy_name), emb2, store2)
    t_chunk0 = time.perf_counter()
    _ = r2.chunks
    t_chunk = time.perf_counter() - t_chunk0
    rep2 = r2.ensure_indexed()
    second = time.perf_counter() - t
    emit(f"<!-- second index: {rep2}; model loaded: {emb2.loaded} -->")
    truncated = sum(1 for c in r2.chunks if (c.embed_tokens or 0) > loader.max_seq_length)

    emit(f"## Indexing {corpus.name} with `{strategy_name}` ({len(chunks)} chunks, {len(tree)} files, "
         f"{truncated} chunks longer than the model's {loader.max_seq_length} word pieces)\n")
    emit(table(["run", "wall s", "embedded", "cached", "upserted", "unchanged", "notes"], [
        ["raw `SentenceTransformer.encode` (all texts, one call)", f"{raw:.1f}", len(texts), "-", "-", "-",
         f"{len(texts) / raw:.1f} texts/s; best of {rounds}: " + ", ".join(f"{x:.1f}" for x in raws)],
        ["first index (cold cache, empty store)", f"{first:.1f}", rep1.embedded, rep1.cached, rep1.upserted,
         rep1.unchanged, f"best of {rounds}: " + ", ".join(f"{x:.1f}" for x in firsts)],
        ["second index (unchanged)", f"{second:.2f}", rep2.embedded, rep2.cached, rep2.upserted, rep2.unchanged,
         f"store open {t_open:.2f}s, chunking {t_chunk:.2f}s, model loaded: {emb2.loaded}"],
    ]))
    emit()
    emit(table(["overhead", "value", "target"], [
        ["wall ratio: first index / raw encode", f"{first / raw:.2f}", "<= 1.2"],
        ["time outside the model in that index run (chunk, tokenize, cache, upsert)", f"{other:.1f} s", ""],
        ["pipeline ratio: (raw + time outside the model) / raw", f"{(raw + other) / raw:.2f}", "<= 1.2"],
    ]))
    emit()
    store2.close()
    emb2.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    ap.add_argument("--strategy", default="recursive")
    ap.add_argument("--sizes", default="1000,5000,10000,20000,40000")
    ap.add_argument("--skip-corpus", action="store_true")
    ap.add_argument("--skip-scaling", action="store_true")
    ap.add_argument("--rounds", type=int, default=2, help="alternating raw/index rounds on the corpus")
    args = ap.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="cs-bench-retrieval-"))
    os.environ.setdefault("CHUNKSCOPE_CACHE", str(workdir / "cache"))
    try:
        import torch

        emit(f"<!-- load average at start: {os.getloadavg()} -->")
        emit(f"<!-- python {sys.version.split()[0]}, torch {torch.__version__}, threads {torch.get_num_threads()}, "
             f"cpus {os.cpu_count()} -->\n")
        emb = Embedder(cache_dir=workdir / "q-embcache")
        questions = ["How do I borrow a value mutably?", "What is the difference between a String and a &str?",
                     "How do I handle errors with Result?", "What does the ? operator do?",
                     "How are closures captured?", "What is a trait object?", "How do I spawn a thread?",
                     "How does pattern matching work with enums?", "What is lifetime elision?",
                     "How do I write tests in Rust?"] * 5
        bench_model(emb, questions)
        if not args.skip_scaling:
            bench_scaling(emb, questions, [int(x) for x in args.sizes.split(",")], workdir)
        emb.close()
        if not args.skip_corpus:
            if args.corpus.is_dir():
                bench_corpus(args.corpus, args.strategy, workdir, args.rounds)
            else:
                emit(f"(corpus {args.corpus} not found: skipped)")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
