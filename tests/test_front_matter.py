"""Front matter is metadata, never chunk text: no chunk of any built-in strategy holds a character of it.

`custom` is left out: its chunks are wherever the user's own function puts them. `semantic` reads sentence vectors
from the deterministic stand-in of its own tests (where it cuts is not the point here; what it may cut is).
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from chunkscope.chunking.registry import _BUILTIN, get_strategy
from chunkscope.chunking.strategy import Strategy
from chunkscope.chunking.vectors import UsesSentenceVectors
from chunkscope.document.loader import decode_document

from tests.invariants import assert_slices_cover_body
from tests.markdown_strategies import markdown, sample_documents
from tests.test_semantic import BagOfWords

#: Every built-in strategy that decides its own cuts, with sizes small enough to cut a generated page many times.
SMALL = {
    "section-sentence": {"max_tokens": 40, "min_tokens": 5},
    "header-window": {"max_words": 60, "target_words": 40, "overlap_words": 10, "min_words": 10},
    "section": {"level": 3, "max_tokens": 40, "min_tokens": 5},
    "content-type": {"theoretical_tokens": 32, "code_tokens": 48, "mixed_tokens": 40, "overlap_tokens": 8},
    "recursive": {"chunk_size": 40, "chunk_overlap": 10},
    "fixed": {"chunk_size": 40, "chunk_overlap": 10},
    "semantic": {"max_tokens": 48, "min_tokens": 8},
}


def strategy_named(name: str, params: dict[str, object]) -> Strategy:
    strategy = get_strategy(name, **params)
    if isinstance(strategy, UsesSentenceVectors):
        strategy.use_vectors(BagOfWords())
    return strategy

FRONT_MATTERS = [
    "---\ntitle: Coordinate Frames\nslug: /frames\nsidebar_position: 3\n---\n",
    "---\r\ntitle: CRLF page\r\nslug: /crlf\r\n---\r\n\r\n",
    "---\n---\n",  # empty: still a block Docusaurus strips
    "---\ntitle: [unclosed\nsidebar_position: 1\n---\n",  # malformed: reported, and still not prose
]
WORDS = st.sampled_from(["frame", "joint", "the", "θ₁", "日本語", "naïve", "😀", "`code`", "end.", "slug:", "---",
                         "title:", "a,b"])
FENCE_LINES = ["# comment", "x = 1", "", "fn main() {}", "---", "title: in code"]


def test_the_list_covers_every_builtin_but_custom() -> None:
    assert set(SMALL) == set(_BUILTIN) - {"custom"}


@pytest.mark.parametrize("name", sorted(SMALL))
@pytest.mark.parametrize("small", [False, True], ids=["defaults", "small"])
def test_no_chunk_of_sample_docs_holds_front_matter(name: str, small: bool) -> None:
    docs = sample_documents().documents
    assert sum(d.body_start > 0 for d in docs) >= 3
    strategy = strategy_named(name, SMALL[name] if small else {})
    for d in docs:
        chunks = strategy.chunk(d)
        assert chunks
        assert_slices_cover_body(d, chunks)


@pytest.mark.parametrize("name", sorted(SMALL))
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(front=st.sampled_from(FRONT_MATTERS), page=markdown(WORDS, "", FENCE_LINES, 8))
def test_no_chunk_of_a_generated_page_holds_front_matter(name: str, front: str, page: str) -> None:
    d = decoded_doc_allowing_problems(front + page)
    assert d.body_start >= len(front.rstrip())
    assert_slices_cover_body(d, strategy_named(name, SMALL[name]).chunk(d))


def decoded_doc_allowing_problems(text: str):
    """The page as the loader reads it; a malformed front matter is a problem of the page, not of this test."""
    d, _ = decode_document(text.encode("utf-8"), "module-1/02-frames.md")
    assert d is not None
    return d
