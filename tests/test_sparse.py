"""A chunk's BM25 sparse vector: each distinct term once, sorted, weighted by BM25's term-frequency part."""

from __future__ import annotations

from chunkscope.retrieval.sparse import B, K1, Bm25Encoder


def test_a_documents_weights_are_bm25s_term_frequency_part_exactly() -> None:
    enc = Bm25Encoder()
    ids = [7, 3, 7, 12, 7, 3]  # three terms: 7 three times, 3 twice, 12 once
    avgdl = 4.0
    v = enc.document(ids, avgdl)
    assert v.indices == [3, 7, 12]
    norm = K1 * (1 - B + B * len(ids) / avgdl)
    assert v.values == [tf * (K1 + 1) / (tf + norm) for tf in (2, 3, 1)]  # exactly: the same float operations
    assert all(isinstance(x, int) for x in v.indices) and all(isinstance(x, float) for x in v.values)
    assert enc.document([], avgdl).indices == []


def test_a_texts_vector_counts_repeated_words_once_per_occurrence() -> None:
    enc = Bm25Encoder()
    ids = enc.term_ids("Borrowing a value borrows it; the borrow ends.")
    v = enc.document(ids, 10.0)
    borrow = enc.index_of("borrow")
    assert ids.count(borrow) == 3 and v.indices.count(borrow) == 1
    assert v.values[v.indices.index(borrow)] > v.values[v.indices.index(enc.index_of("valu"))]
