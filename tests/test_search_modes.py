"""Keyword (BM25) and hybrid search, scored by real Qdrant (local mode and the in-memory engine the server path
uses), against BM25 computed by hand."""

from __future__ import annotations

import math

import pytest

from chunkscope.retrieval.search_modes import SearchModeError
from chunkscope.retrieval.sparse import Bm25Encoder, average_length
from chunkscope.retrieval.indexing import index_chunks
from chunkscope.retrieval.store import Store

from .test_store import FakeEmbedder, make_chunks

TEXTS = [
    "The borrow checker rejects two mutable borrows of one value.",
    "Ownership moves a value; the borrowed reference must not outlive it.",
    "Closures capture their environment by reference or by move.",
    "Iterators are lazy: nothing happens until a consumer pulls values.",
]


def hand_bm25(query: str, docs: list[str], k1: float = 1.2, b: float = 0.75) -> list[float]:
    """Okapi BM25 written out from its definition, with Qdrant's IDF: ln(1 + (N − n + 0.5) / (n + 0.5))."""
    enc = Bm25Encoder()
    terms = [enc.terms(d) for d in docs]
    avgdl = average_length(len(t) for t in terms)
    n_docs = len(docs)
    scores = []
    for t in terms:
        score = 0.0
        for q in set(enc.terms(query)):
            tf = t.count(q)
            if not tf:
                continue
            n = sum(1 for other in terms if q in other)
            idf = math.log(1 + (n_docs - n + 0.5) / (n + 0.5))
            score += idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * len(t) / avgdl))
        scores.append(score)
    return scores


def test_terms_are_stemmed_without_stop_words_and_identifiers_stay_whole():
    enc = Bm25Encoder()
    assert enc.terms("The borrowed values are borrowing read_line") == ["borrow", "valu", "borrow", "read_line"]
    assert enc.query("the of and").indices == []  # nothing left to match on
    q = enc.query("borrow borrowing")
    assert q.values == [1.0] and len(q.indices) == 1


@pytest.mark.parametrize("engine", ["edge", "local", "memory"])
def test_keyword_scores_are_bm25_and_hybrid_fuses_both(tmp_path, engine):
    # Qdrant Edge (the default), qdrant-client's local mode (the fallback) and its in-memory mode (standing in for
    # a server's query API) give the same BM25 scores.
    store = Store(tmp_path / "docs", path=None if engine == "memory" else tmp_path / "q", engine=engine)
    with store:
        emb = FakeEmbedder()
        name = store.use("test", emb, {})
        chunks = make_chunks("a.md", TEXTS)
        index_chunks(store, chunks, emb, name)
        query = "borrowing a value"
        hits = store.search(None, k=4, collection=name, mode="keyword", text=query)
        want = hand_bm25(query, TEXTS)
        got = {h.text: h.score for h in hits}
        for text, score in zip(TEXTS, want):
            if score > 0:
                assert got[text] == pytest.approx(score, rel=1e-4), text
            else:
                assert text not in got  # Qdrant returns only points sharing a term
        assert [h.text for h in hits] == [t for s, t in sorted(zip(want, TEXTS), reverse=True) if s > 0]
        assert all(h.kept for h in hits)
        # Hybrid: Qdrant's reciprocal rank fusion of the dense and the keyword ranking. The dense side is the
        # fake embedder's hash vectors (noise), so the keyword winner must still rank in the fused top 2.
        fused = store.search(emb.vector(query), k=4, collection=name, mode="hybrid", text=query, threshold=0.99)
        assert fused and all(h.kept for h in fused)  # a cosine threshold means nothing for fused ranks
        assert hits[0].text in [h.text for h in fused[:2]]
        # Filters hold in every mode.
        other = make_chunks("b.md", ["A borrowed value elsewhere."])
        index_chunks(store, chunks + other, emb, name)
        only_b = store.search(emb.vector(query), k=4, collection=name, mode="hybrid", text=query, filters={"path": "b.md"})
        assert {h.path for h in only_b} == {"b.md"}
        with pytest.raises(SearchModeError, match="choose one of dense, keyword, hybrid"):
            store.search(None, collection=name, mode="sparse", text=query)


def test_a_collection_without_the_keyword_vector_is_rebuilt(tmp_path):
    import qdrant_edge as qe

    with Store(tmp_path / "docs", path=tmp_path / "q") as store:
        emb = FakeEmbedder()
        name = store.use("test", emb, {})
        store.drop(name)
        # As chunkscope made collections before keyword search: one dense vector, no sparse one.
        qe.EdgeShard.create(str(tmp_path / "q" / name), qe.EdgeConfig(
            vectors={"dense": qe.EdgeVectorParams(size=emb.dim, distance=qe.Distance.Cosine)})).close()
        assert store.ensure_collection(name, emb.dim) is True  # recreated with both vectors
        index_chunks(store, make_chunks("a.md", TEXTS), emb, name)
        assert store.search(None, k=1, collection=name, mode="keyword", text="closures")[0].text == TEXTS[2]
