"""Word-piece counts of texts the embedding cache holds come from the cache (issue 22: `index` of a tree whose vectors
are all cached counts none of its chunks again), and they are the counts the tokenizer gives."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from chunkscope.chunking.registry import get_strategy
from chunkscope.document.loader import load_docs
from chunkscope.embedding.embedder import CACHE_FILE, Embedder, EmbeddingCache, text_sha
from chunkscope.retrieval.retriever import Retriever
from chunkscope.retrieval.store import Store
from tests.test_retrieval import write_docs


def _vec(seed: int, dim: int) -> np.ndarray:
    v = np.random.default_rng(seed).standard_normal(dim).astype(np.float32)
    return v / np.linalg.norm(v)


def test_the_cache_answers_counts_without_vectors(tmp_path: Path) -> None:
    with EmbeddingCache(tmp_path / CACHE_FILE) as c:
        c.put_many("m", [("a", _vec(1, 8), 5), ("b", _vec(2, 8), None)])
        assert c.get_tokens("m", ["a", "b", "not-cached"]) == {"a": 5}  # a row without a count is left out
        assert c.get_tokens("other-model", ["a"]) == {}
        assert c.get_tokens("m", []) == {}


def test_count_tokens_takes_the_count_stored_with_a_cached_vector(tmp_path: Path) -> None:
    e = Embedder(cache_dir=tmp_path)
    assert e.cache is not None
    cached, fresh = "A sentence embedded before.", "A sentence never embedded."
    # A count the tokenizer never gives for this text: it shows only if the cache answered.
    e.cache.put_many(e.model_id, [(text_sha(cached), _vec(1, e.dim), 999)])
    assert e.count_tokens([cached, fresh, cached]) == [999, e.tokenizer.count_batch([fresh])[0], 999]
    assert not e.loaded  # counting never loads the model
    e.close()


def test_count_tokens_counts_when_the_cache_cannot_be_used(read_only_dir: Path) -> None:
    e = Embedder(cache_dir=read_only_dir / "embeddings")
    texts = ["Counting needs no cache.", "Nor does it fail for one."]
    assert e.count_tokens(texts) == e.tokenizer.count_batch(texts)


DOCS = {
    "one.md": "# One\n\n## Borrowing\n\nA reference borrows a value without taking ownership of it.\n\n"
              + " ".join(f"word{i}" for i in range(300)) + "\n",  # longer than the model reads: counted past 256
    "two.md": "# Two\n\n## Lifetimes\n\nEvery reference has a lifetime, the scope for which it is valid.\n",
}


def _payloads(store: Store, collection: str) -> dict[str, dict[str, Any]]:
    records, _ = store.engine.scroll(collection, None, None, limit=10_000)
    return {r.id: dict(r.payload) for r in records}


@pytest.mark.model
def test_an_index_from_cached_vectors_stores_the_payloads_a_fresh_one_does(tmp_path: Path) -> None:
    """The same tree indexed twice into two stores: first with an empty embedding cache (every chunk counted by the
    tokenizer), then with every vector cached (every count read from the cache). Every point's payload is equal,
    and its ``embed_tokens`` is the tokenizer's count."""
    root = write_docs(tmp_path / "docs", DOCS)
    cache = tmp_path / "cache"
    stored: list[dict[str, dict[str, Any]]] = []
    for name in ("fresh", "cached"):
        embedder = Embedder(cache_dir=cache)
        with Store(root, path=tmp_path / name) as store:
            r = Retriever(load_docs(root), get_strategy("recursive", chunk_size=200), embedder, store,
                          tree_settings={})
            report = r.ensure_indexed()
            assert (report.embedded, report.cached) == ((len(r.chunks), 0) if name == "fresh" else (0, len(r.chunks)))
            stored.append(_payloads(store, r.collection))
        embedder.close()
    fresh, cached = stored
    assert cached == fresh and len(fresh) > 2
    texts = [p["text"] for p in fresh.values()]
    counts = Embedder(cache_dir=tmp_path / "no-cache").tokenizer.count_batch(texts)
    assert [p["embed_tokens"] for p in fresh.values()] == counts
    assert max(counts) > 256  # one chunk is longer than the model reads
