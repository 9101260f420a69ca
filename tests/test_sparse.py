"""A chunk's BM25 terms (the fast cut equals `terms`, whatever the text) and its sparse vector: each distinct term
once, sorted, weighted by BM25's term-frequency part."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

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


def _ids_of_terms(text: str) -> list[int]:
    """The reference: `terms` (one regular expression over the lower-cased text), each term's index."""
    enc = Bm25Encoder()
    return [enc.index_of(t) for t in enc.terms(text)]


def test_term_ids_cut_words_as_terms_does_at_underscores_and_non_ascii_characters() -> None:
    text = "Don’t call __init__ or read_line() on a café’s u32 — ΟΔΟΣ; x__y _ 2021 Borrowing"
    enc = Bm25Encoder()
    assert enc.terms(text) == ["don", "t", "call", "init", "read_line", "café", "s", "u32", "οδος", "x", "y", "2021",
                               "borrow"]
    expected = _ids_of_terms(text)
    assert enc.term_ids(text) == expected
    assert enc.term_ids(text) == expected  # the second time from the encoder's memo alone
    assert enc.term_ids("") == [] and enc.term_ids("the of _ — ’") == []


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.text(alphabet="aZé_Σ’İK 0.\n\t-—日\udcff", max_size=24), min_size=1, max_size=4))
def test_term_ids_are_the_index_of_every_term_whatever_the_text(texts: list[str]) -> None:
    enc = Bm25Encoder()  # one encoder for several texts: its memo must not carry one text's words into another's
    for text in texts:
        assert enc.term_ids(text) == _ids_of_terms(text)


@pytest.mark.corpus
def test_term_ids_of_every_rust_book_page_are_the_index_of_its_terms(corpus: Path) -> None:
    enc = Bm25Encoder()
    for page in sorted(corpus.glob("*.md")):
        text = page.read_text(encoding="utf-8")
        assert enc.term_ids(text) == _ids_of_terms(text), page.name
