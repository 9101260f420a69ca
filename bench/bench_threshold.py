"""How all-MiniLM-L6-v2's default score threshold was chosen: scores of right and wrong answers on real questions.

    python bench/bench_threshold.py [--corpus PATH] [--queries FILE] [--strategy recursive] [--embedder MODEL]

For each labelled question (bench/rust_book_queries.jsonl over the Rust book by default) the tree is indexed
with the strategy and searched (top 10, no threshold). A hit is *right* when it holds the expected section's
text (the same judgement `eval` makes), *wrong* otherwise. The script prints the score distribution of the right
answers at rank 1 and of the wrong hits at rank 1, and for candidate thresholds the share of right rank-1
answers kept and of wrong rank-1 hits dropped. chunkscope's default for the model is the highest threshold that
keeps at least 95% of the right rank-1 answers (a threshold exists to drop off-topic answers, and one that drops
the right answer costs more than one that lets a wrong one through). The chosen value and this table go into
`chunkscope.embedding.spec`.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))
DEFAULT_CORPUS = REPO.parent / "shared" / "corpus" / "rust-book"
DEFAULT_QUERIES = REPO / "bench" / "rust_book_queries.jsonl"
KEEP = 0.95


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    ap.add_argument("--queries", type=Path, default=DEFAULT_QUERIES)
    ap.add_argument("--strategy", default="recursive")
    ap.add_argument("--embedder", default=None)
    args = ap.parse_args()
    if not args.corpus.is_dir():
        print(f"no corpus at {args.corpus}", file=sys.stderr)
        return 2

    from chunkscope.chunking.registry import get_strategy
    from chunkscope.document.loader import load_docs
    from chunkscope.embedding.embedder import Embedder
    from chunkscope.evaluation.queries import load_queries
    from chunkscope.evaluation.regions import overlaps, resolve_region
    from chunkscope.retrieval.retriever import Retriever
    from chunkscope.retrieval.store import Store

    tree = load_docs(args.corpus)
    queries = load_queries(args.queries)
    embedder = Embedder(args.embedder)
    right, wrong = [], []
    with tempfile.TemporaryDirectory() as tmp, Store(tree.root, path=Path(tmp) / "q") as store:
        r = Retriever(tree, get_strategy(args.strategy), embedder, store)
        r.ensure_indexed()
        for q in queries:
            region = resolve_region(tree, q)
            doc = tree.get(region.path)
            hits = r.query(q.query, k=10, threshold=None)
            if not hits:
                continue
            top = hits[0]
            ok = top.path == region.path and overlaps(doc.text, top.start, top.end, region)
            (right if ok else wrong).append(top.score)
    print(f"# {embedder.model_id}, {args.strategy}, {len(queries)} questions over {args.corpus.name}")
    for name, xs in (("right answer at rank 1", right), ("wrong hit at rank 1", wrong)):
        if xs:
            print(f"{name}: n={len(xs)}, min {min(xs):.3f}, median {statistics.median(xs):.3f}, max {max(xs):.3f}")
    print("\n| threshold | right rank-1 kept | wrong rank-1 dropped |\n|---:|---:|---:|")
    best = None
    for t in [x / 100 for x in range(20, 76, 5)]:
        kept = sum(s >= t for s in right) / max(1, len(right))
        dropped = sum(s < t for s in wrong) / max(1, len(wrong))
        print(f"| {t:.2f} | {kept:.0%} | {dropped:.0%} |")
        if kept >= KEEP:
            best = t
    print(f"\nhighest threshold keeping >= {KEEP:.0%} of right rank-1 answers: {best}")
    embedder.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
