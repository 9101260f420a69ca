"""The fixed-window baseline: token windows over the whole document, exact slices, counts that always fit."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from chunkscope.chunking.model import OVERSIZE, SPLIT_FENCE
from chunkscope.chunking.params import ParamError
from chunkscope.chunking.registry import get_strategy
from chunkscope.chunking.strategy import Limits
from chunkscope.document.loader import Document, decode_document, load_docs
from chunkscope.chunking.strategies.fixed import FixedStrategy
from chunkscope.tokens import get_tokenizer

from tests.invariants import assert_slices_cover_body

CORPUS = Path(__file__).resolve().parents[1].parent / "shared" / "corpus" / "rust-book"


def doc_of(text: str, path: str = "ch05-structs.md") -> Document:
    d, _ = decode_document(text.encode("utf-8"), path)
    assert d is not None
    return d


def check_chunks(doc: Document, chunks, size: int, encoding: str = "cl100k_base") -> None:
    text = doc.text
    tok = get_tokenizer(encoding)
    prev_start, prev_end = doc.body_start, doc.body_start
    for i, c in enumerate(chunks):
        assert c.text == text[c.start:c.end] and c.end > c.start
        assert c.start >= prev_start and c.end > prev_end  # in order, always moving on
        assert not text[prev_end:c.start].strip()  # windows leave no gap but skipped blank windows
        prev_start, prev_end = c.start, c.end
        assert c.tokens == tok.count(c.text) == c.metadata["token_count"]
        assert c.metadata["chunk_index"] == i
        # Within the window, except a single character that alone is more tokens than a window holds.
        assert c.tokens <= size or (len(c.text) == 1 and OVERSIZE in c.warnings)
        assert (OVERSIZE in c.warnings) == (c.tokens > size)
    assert_slices_cover_body(doc, chunks)


def test_parameters() -> None:
    s = FixedStrategy()
    assert s.params == {"chunk_size": 512, "chunk_overlap": 50, "encoding": "cl100k_base", "embed_prefix": "none"}
    assert s.limits() == Limits("cl100k_base", 512)
    with pytest.raises(ParamError, match="chunk_overlap"):
        get_strategy("fixed", chunk_size=10, chunk_overlap=10)
    with pytest.raises(ParamError):
        get_strategy("fixed", encoding="words")
    with pytest.raises(ParamError):
        get_strategy("fixed", chunk_size=0)


def test_windows_follow_the_whole_document_tokens() -> None:
    # Plain ASCII prose: every window is exactly chunk_size whole-document tokens, step size - overlap.
    text = " ".join(f"word{i} and more text here." for i in range(400))
    doc = doc_of(text)
    size, overlap = 100, 20
    chunks = get_strategy("fixed", chunk_size=size, chunk_overlap=overlap).chunk(doc)
    starts = get_tokenizer("cl100k_base").counter(doc).starts
    ntok = len(starts) - 1
    step = size - overlap
    # Windows until one reaches the end of the text.
    expected = -(-max(ntok - overlap, 1) // step)
    assert len(chunks) == expected
    for i, c in enumerate(chunks):
        assert c.start == starts[i * step]
        assert c.end <= starts[min(i * step + size, ntok)]
        assert c.tokens <= size
    assert chunks[-1].end == len(text)
    # Overlapping windows share text with the previous chunk.
    assert all(c.overlap is not None for c in chunks[1:])
    check_chunks(doc, chunks, size)


def test_windows_start_at_the_body_and_follow_its_tokens() -> None:
    # The front matter is metadata: the first window starts where the body does, and counts the body's tokens.
    front = "---\ntitle: Structs\nslug: /structs\nsidebar_position: 3\n---\n"
    body = " ".join(f"word{i} and more text here." for i in range(300))
    doc = doc_of(front + body)
    assert doc.body_start == len(front)
    chunks = get_strategy("fixed", chunk_size=100, chunk_overlap=20).chunk(doc)
    alone = get_strategy("fixed", chunk_size=100, chunk_overlap=20).chunk(doc_of(body))
    assert [(c.start - len(front), c.text) for c in chunks] == [(c.start, c.text) for c in alone]
    assert chunks[0].start == doc.body_start and "slug" not in chunks[0].text
    check_chunks(doc, chunks, 100)


def test_multibyte_text_stays_within_the_window() -> None:
    # Emoji and CJK: tokens start inside characters, and slices re-encode differently at their edges.
    text = "🦀👍🏽中文字符串的所有权" * 200 + "\n\n" + "naïve “quotes” – dashes " * 100
    doc = doc_of(text)
    for size, overlap in ((7, 0), (8, 3), (64, 10), (1, 0), (2, 1)):
        chunks = get_strategy("fixed", chunk_size=size, chunk_overlap=overlap).chunk(doc)
        check_chunks(doc, chunks, size)
    # A window of one token cannot hold a character that needs several: it is kept whole and flagged.
    assert any(OVERSIZE in c.warnings for c in get_strategy("fixed", chunk_size=1, chunk_overlap=0).chunk(doc))


def test_split_fence_and_metadata() -> None:
    code = "\n".join(f"let value_{i} = compute({i});" for i in range(120))
    text = f"# Chapter 5: Structs\n\nIntro words.\n\n## Example\n\n```rust\n{code}\n```\n\n## After\n\nMore words.\n"
    doc = doc_of(text)
    chunks = get_strategy("fixed", chunk_size=150, chunk_overlap=10).chunk(doc)
    fence = next(b for b in doc.structure.blocks if b.kind == "fence")
    assert any(SPLIT_FENCE in c.warnings for c in chunks)
    for c in chunks:
        inside = fence.start < c.start < fence.end or fence.start < c.end < fence.end
        assert (SPLIT_FENCE in c.warnings) == inside
        assert c.metadata["chapter_id"] == "ch05"
        first = c.start + len(c.text) - len(c.text.lstrip())
        assert c.metadata["heading"] == doc.structure.heading_before(first).text
    assert chunks[0].metadata["heading"] == "Chapter 5: Structs"


def test_empty_and_blank_documents() -> None:
    assert get_strategy("fixed").chunk(doc_of("")) == []
    assert get_strategy("fixed").chunk(doc_of("\n\n   \n")) == []


def test_rechunk_equals_fresh() -> None:
    text = "Some prose about lifetimes’ rules. " * 500
    doc = doc_of(text)
    get_strategy("fixed").chunk(doc)
    again = get_strategy("fixed", chunk_size=384, chunk_overlap=0).chunk(doc)
    fresh = get_strategy("fixed", chunk_size=384, chunk_overlap=0).chunk(doc_of(text))
    assert [c.to_dict() for c in again] == [c.to_dict() for c in fresh]


@pytest.mark.corpus
def test_corpus() -> None:
    if not CORPUS.is_dir():
        pytest.skip(f"the Rust book corpus is not at {CORPUS} (it lives in ../shared/corpus beside the repo)")
    docs = load_docs(CORPUS).documents
    for size, overlap in ((512, 50), (100, 0)):
        s = get_strategy("fixed", chunk_size=size, chunk_overlap=overlap)
        for d in docs[::3]:
            check_chunks(d, s.chunk(d), size)


WORDS = ["the", "Rust", "`Vec<T>`", "it’s", "“quoted”", "中文", "🦀", "👍🏽", "1234567", "—", "fn", "```", "#"]
word = st.one_of(st.sampled_from(WORDS), st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), min_size=1, max_size=6))
texts = st.tuples(
    st.sampled_from(["", "---\ntitle: Structs\nslug: /structs\nsidebar_position: 3\n---\n", "---\n---\n"]),
    st.lists(st.tuples(word, st.sampled_from([" ", "\n", "\n\n", "\r\n", ""])), max_size=200),
).map(lambda fm_pairs: fm_pairs[0] + "".join(w + s for w, s in fm_pairs[1]))


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=texts, size=st.integers(1, 80), data=st.data())
def test_generated_text_properties(text: str, size: int, data) -> None:
    overlap = data.draw(st.integers(0, size - 1))
    encoding = data.draw(st.sampled_from(["cl100k_base", "o200k_base"]))
    doc = doc_of(text)
    chunks = get_strategy("fixed", chunk_size=size, chunk_overlap=overlap, encoding=encoding).chunk(doc)
    check_chunks(doc, chunks, size, encoding)
    again = get_strategy("fixed", chunk_size=size, chunk_overlap=overlap, encoding=encoding).chunk(doc_of(text))
    assert [c.to_dict() for c in again] == [c.to_dict() for c in chunks]
