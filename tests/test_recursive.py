"""The recursive strategy (seed 004): the same chunks as LangChain's splitter on the page body, as exact slices,
fast to redo."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings, strategies as st

from chunkscope.chunking.model import OVERSIZE, SPLIT_FENCE
from chunkscope.chunking.params import ParamError
from chunkscope.chunking.registry import get_strategy
from chunkscope.chunking.strategy import Limits
from chunkscope.document.loader import Document, decode_document, load_docs
from chunkscope.chunking.strategies.recursive import DEFAULT_SEPARATORS, RecursiveStrategy
from chunkscope.tokens import get_tokenizer, populate_tiktoken_cache

from tests.invariants import assert_slices_cover_body
from tests.markdown_strategies import sample_documents

CORPUS = Path(__file__).resolve().parents[1].parent / "shared" / "corpus" / "rust-book"
SEPS = list(DEFAULT_SEPARATORS)


# --- LangChain, offline -----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def langchain(tmp_path_factory: pytest.TempPathFactory):
    """A function running LangChain's splitter as seed 004 configures it, with tiktoken's files from disk."""
    splitters = pytest.importorskip("langchain_text_splitters", reason="langchain-text-splitters is a test dependency")
    cache = tmp_path_factory.mktemp("tiktoken-cache")
    populate_tiktoken_cache(cache)
    with pytest.MonkeyPatch.context() as mp:
        # tiktoken reads this when get_encoding runs, i.e. when a splitter is built below.
        mp.setenv("TIKTOKEN_CACHE_DIR", str(cache))
        built: dict[tuple, object] = {}

        def split(text: str, chunk_size: int = 512, chunk_overlap: int = 50, separators=SEPS, encoding: str = "cl100k_base") -> list[str]:
            key = (chunk_size, chunk_overlap, tuple(separators), encoding)
            sp = built.get(key)
            if sp is None:
                sp = built[key] = splitters.RecursiveCharacterTextSplitter.from_tiktoken_encoder(
                    encoding_name=encoding, chunk_size=chunk_size, chunk_overlap=chunk_overlap, separators=list(separators)
                )
            return sp.split_text(text)

        yield split


@pytest.fixture(scope="module")
def corpus_docs():
    if not CORPUS.is_dir():
        pytest.skip(f"the Rust book corpus is not at {CORPUS} (it lives in ../shared/corpus beside the repo)")
    tree = load_docs(CORPUS)
    assert len(tree.documents) > 100
    return tree.documents


def doc_of(text: str, path: str = "ch03-02-kinematics.md") -> Document:
    d, _ = decode_document(text.encode("utf-8"), path)
    assert d is not None
    return d


def on_body(d: Document, chunks) -> list[str]:
    """The chunks read at their offsets shifted into the page body: what LangChain, given the body, returns."""
    body = d.text[d.body_start:]
    assert all(c.start >= d.body_start for c in chunks)
    return [body[c.start - d.body_start:c.end - d.body_start] for c in chunks]


def mismatches(docs, langchain, **params) -> list[str]:
    strategy = get_strategy("recursive", **params)
    lc_params = {k: v for k, v in params.items() if k in ("chunk_size", "chunk_overlap", "encoding")}
    bad = []
    for d in docs:
        ours = on_body(d, strategy.chunk(d))
        theirs = langchain(d.text[d.body_start:], **lc_params)
        if ours != theirs:
            at = next((i for i, (a, b) in enumerate(zip(ours, theirs)) if a != b), min(len(ours), len(theirs)))
            bad.append(f"{d.path}: first difference at chunk {at} ({len(ours)} vs {len(theirs)} chunks)")
    return bad


# --- differential tests on the real corpus ----------------------------------------------------------------------


@pytest.mark.corpus
def test_every_corpus_file_matches_langchain(corpus_docs, langchain) -> None:
    assert mismatches(corpus_docs, langchain) == []


@pytest.mark.corpus
def test_corpus_matches_langchain_with_other_sizes(corpus_docs, langchain) -> None:
    subset = corpus_docs[::4]
    assert mismatches(subset, langchain, chunk_size=256, chunk_overlap=0) == []
    assert mismatches(subset[:8], langchain, chunk_size=64, chunk_overlap=63) == []


@pytest.mark.corpus
def test_corpus_matches_langchain_in_o200k(corpus_docs, langchain) -> None:
    assert mismatches(corpus_docs[::10], langchain, encoding="o200k_base", chunk_size=300, chunk_overlap=30) == []


@pytest.mark.corpus
def test_corpus_chunks_carry_exact_counts_and_metadata(corpus_docs) -> None:
    tok = get_tokenizer("cl100k_base")
    strategy = get_strategy("recursive")
    seen_heading = False
    for d in corpus_docs[::7]:
        chunks = strategy.chunk(d)
        assert [c.metadata["chunk_index"] for c in chunks] == list(range(len(chunks)))
        for c in chunks:
            assert c.text == d.text[c.start:c.end]
            assert c.tokens == c.metadata["token_count"] == tok.count(c.text)
            if d.path.startswith("ch"):  # ch04-01-what-is-ownership.md → ch04
                assert c.metadata["chapter_id"] == d.path.split("-")[0]
            first = c.start + len(c.text) - len(c.text.lstrip())
            # The heading in force where the content starts; before the first heading, the first one inside.
            h = d.structure.heading_before(first) or next(iter(d.structure.headings_in(first, c.end)), None)
            assert c.metadata["heading"] == (h.text if h else "")
            assert c.heading_path == (list(h.path) if h else [])
            seen_heading |= bool(c.metadata["heading"])
    assert seen_heading


@pytest.mark.corpus
def test_rechunking_a_corpus_file_equals_a_fresh_copy(corpus_docs) -> None:
    doc = max(corpus_docs, key=lambda d: len(d.text))
    get_strategy("recursive").chunk(doc)
    again = get_strategy("recursive", chunk_size=300).chunk(doc)
    fresh_doc = load_docs(doc.source).documents[0]
    fresh = get_strategy("recursive", chunk_size=300).chunk(fresh_doc)
    assert len(again) > 10
    assert [c.to_dict() for c in again] == [c.to_dict() for c in fresh]


# --- parameters -------------------------------------------------------------------------------------------------


def test_parameters_are_declared_and_validated() -> None:
    s = RecursiveStrategy()
    assert s.params == {"chunk_size": 512, "chunk_overlap": 50, "encoding": "cl100k_base", "separators": SEPS,
                        "include_front_matter": False, "embed_prefix": "none"}
    assert s.limits() == Limits("cl100k_base", 512)
    assert RecursiveStrategy.required_metadata == ("chapter_id", "heading")
    with pytest.raises(ParamError, match="chunk_overlap"):
        get_strategy("recursive", chunk_size=100, chunk_overlap=100)
    with pytest.raises(ParamError):
        get_strategy("recursive", chunk_size=0)
    with pytest.raises(ParamError):
        get_strategy("recursive", encoding="gpt2")
    with pytest.raises(ParamError, match="separators"):
        get_strategy("recursive", separators=[])
    # Strings from --param are parsed; JSON keeps escapes.
    assert get_strategy("recursive", chunk_size="300", separators='["\\n\\n", " "]').params["separators"] == ["\n\n", " "]
    # The declared default list is never shared with a configured strategy.
    a = RecursiveStrategy()
    a.params["separators"].append("x")
    assert RecursiveStrategy().params["separators"] == SEPS


# --- behaviour on small documents -------------------------------------------------------------------------------

LONG_FENCE_DOC = """---
title: Frames
week: 2
---
# Chapter 3: Frames

Intro paragraph about frames.

## Code

```python
""" + "\n".join(f"value_{i} = compute_something({i}, other_argument_{i})" for i in range(80)) + """
```

## After

Closing words.
"""


def test_metadata_and_split_fence_warning() -> None:
    doc = doc_of(LONG_FENCE_DOC, "module-2/ch03-frames.md")
    chunks = get_strategy("recursive", chunk_size=200, chunk_overlap=20).chunk(doc)
    fence = next(b for b in doc.structure.blocks if b.kind == "fence")
    assert len(chunks) > 3
    for c in chunks:
        inside = fence.start < c.start < fence.end or fence.start < c.end < fence.end
        assert (SPLIT_FENCE in c.warnings) == inside
        assert c.metadata["chapter_id"] == "module-2/ch03"  # qualified by its module: chapters repeat across them
        assert c.metadata["module"] == "module-2"
        assert c.metadata["week_number"] == 2
    assert any(SPLIT_FENCE in c.warnings for c in chunks)
    # The front matter is metadata: chunk 0 starts at the body, under its H1.
    assert chunks[0].start == doc.body_start and chunks[0].text.startswith("# Chapter 3: Frames")
    assert chunks[0].metadata["heading"] == "Chapter 3: Frames" and chunks[0].heading_path == ["Chapter 3: Frames"]
    assert {c.metadata["heading"] for c in chunks} >= {"Code", "After"}
    # Seed 004's own pipeline chunked the whole file: the chunk holding the front matter and H1 has no heading
    # before its first character, so it takes the first heading inside it (a citation needs one).
    whole = get_strategy("recursive", chunk_size=200, chunk_overlap=20, include_front_matter=True).chunk(doc)
    assert whole[0].start == 0 and whole[0].text.startswith("---\ntitle: Frames")
    assert whole[0].metadata["heading"] == "Chapter 3: Frames" and whole[0].heading_path == ["Chapter 3: Frames"]


def test_front_matter_is_chunked_only_when_asked_as_seed_004_did(langchain) -> None:
    docs = sample_documents().documents
    with_front = [d for d in docs if d.body_start > 0]
    assert len(with_front) >= 3
    for d in docs:
        body = get_strategy("recursive").chunk(d)
        assert on_body(d, body) == langchain(d.text[d.body_start:])
        assert all(c.start >= d.body_start for c in body)
        # include_front_matter: LangChain on the whole file, as seed 004's split_text(chapter_markdown) ran.
        whole = get_strategy("recursive", include_front_matter=True).chunk(d)
        assert [c.text for c in whole] == langchain(d.text)
    assert all(get_strategy("recursive", include_front_matter=True).chunk(d)[0].start == 0 for d in with_front)


def test_unsplittable_piece_is_kept_whole_and_flagged() -> None:
    # Without "" the splitter cannot cut inside a long word run; LangChain keeps it whole, so do we.
    text = "Short intro.\n\n" + "x" * 4000 + "\n\nShort outro."
    doc = doc_of(text)
    chunks = get_strategy("recursive", chunk_size=50, chunk_overlap=0, separators=["\n\n", " "]).chunk(doc)
    big = [c for c in chunks if OVERSIZE in c.warnings]
    assert len(big) == 1 and big[0].text == "\n\n" + "x" * 4000  # not stripped: LangChain appends it as is
    assert all(c.tokens <= 50 for c in chunks if c is not big[0])
    # With "" it is cut between characters instead.
    chunks = get_strategy("recursive", chunk_size=50, chunk_overlap=0).chunk(doc)
    assert all(c.tokens <= 50 for c in chunks)


def test_whitespace_and_empty_documents_have_no_chunks() -> None:
    assert get_strategy("recursive").chunk(doc_of("")) == []
    assert get_strategy("recursive").chunk(doc_of(" \n\n \r\n\t ")) == []


def test_rechunking_reuses_the_documents_counts(langchain) -> None:
    text = "\n\n".join(
        f"## Part {i}\n\nParagraph {i} talks about “ownership”, borrowing and lifetimes; it’s long enough. " * 3
        + "\n\n```rust\nfn main() {\n    println!(\"hi\");\n}\n```"
        for i in range(60)
    )
    doc = doc_of(text)
    get_strategy("recursive").chunk(doc)
    assert doc.analysis.has_counter("cl100k_base")
    counter = get_tokenizer("cl100k_base").counter(doc)
    memo_before = len(counter._memo)
    again = get_strategy("recursive", chunk_size=300).chunk(doc)
    assert get_tokenizer("cl100k_base").counter(doc) is counter  # the same counter, encoding and memo
    assert len(counter._memo) >= memo_before
    fresh = get_strategy("recursive", chunk_size=300).chunk(doc_of(text))
    assert [c.to_dict() for c in again] == [c.to_dict() for c in fresh]
    assert [c.text for c in again] == langchain(text, chunk_size=300)


# --- properties on generated Markdown ---------------------------------------------------------------------------

WORDS = [
    "the", "Rust", "ownership", "borrow", "`Vec<T>`", "**bold**", "_em_", "it’s", "“quoted”", "naïve", "中文",
    "字符串的所有权", "🦀", "👍🏽", "e.g.", "end.", "fn", "x", "1234567", "—", "https://example.com/a_b?c=d",
    "Ünïcödé", "'s", "...", "a.b", "((", "::", "日本語のテキスト",
]
word = st.one_of(
    st.sampled_from(WORDS),
    st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="<|>\x00"), min_size=1, max_size=8),
)
sentence = st.lists(word, min_size=1, max_size=14).map(lambda ws: " ".join(ws) + ".")
paragraph = st.lists(sentence, min_size=1, max_size=6).flatmap(
    lambda ss: st.sampled_from([" ", "\n", ". "]).map(lambda j: j.join(ss))
)
heading = st.tuples(st.integers(1, 6), st.lists(word, min_size=1, max_size=5)).map(lambda t: "#" * t[0] + " " + " ".join(t[1]))
fence = st.tuples(st.sampled_from(["rust", "python", ""]), st.lists(st.lists(word, max_size=8), max_size=12)).map(
    lambda t: f"```{t[0]}\n" + "\n".join("    " * (i % 2) + " ".join(ln) for i, ln in enumerate(t[1])) + "\n```"
)
bullets = st.lists(sentence, min_size=1, max_size=5).map(lambda items: "\n".join(f"- {s}" for s in items))
block = st.one_of(heading, paragraph, paragraph, fence, bullets, st.just("    indented code"), st.just(""))


#: A page opens with front matter or not (Docusaurus pages mostly do).
FRONT_MATTERS = ["", "", "---\ntitle: Frames\nslug: /frames\nsidebar_position: 2\n---\n", "---\n---\n",
                 "---\ntitle: [unclosed\n---\n\n"]


@st.composite
def markdown(draw) -> str:
    blocks = draw(st.lists(block, max_size=14))
    gaps = draw(st.lists(st.sampled_from(["\n\n", "\n", "\n\n\n", "\n \n", "  \n\n"]), min_size=len(blocks), max_size=len(blocks)))
    text = draw(st.sampled_from(FRONT_MATTERS)) + "".join(b + g for b, g in zip(blocks, gaps))
    if draw(st.booleans()):
        text = text.replace("\n", "\r\n")
    return text


@st.composite
def params(draw) -> dict:
    size = draw(st.integers(1, 120))
    overlap = draw(st.integers(0, size - 1))
    seps = draw(st.sampled_from([SEPS, ["\n\n", "\n", " "], ["\n\n", "\n", " ", ""], [". ", ""], ["\n"]]))
    return {"chunk_size": size, "chunk_overlap": overlap, "separators": seps}


def check_chunks(doc: Document, chunks, size: int) -> None:
    text = doc.text
    tok = get_tokenizer("cl100k_base")
    prev_start = prev_end = 0
    for c in chunks:
        assert c.text == text[c.start:c.end] and c.end > c.start
        assert c.start >= prev_start and c.end >= prev_end  # in order
        prev_start, prev_end = c.start, c.end
        assert c.tokens == tok.count(c.text) == c.metadata["token_count"]
        assert (OVERSIZE in c.warnings) == (c.tokens > size)
    assert_slices_cover_body(doc, chunks)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(text=markdown(), p=params())
def test_generated_markdown_properties_and_langchain_equality(langchain, text: str, p: dict) -> None:
    doc = doc_of(text)
    strategy = get_strategy("recursive", **p)
    chunks = strategy.chunk(doc)
    check_chunks(doc, chunks, p["chunk_size"])
    assert on_body(doc, chunks) == langchain(doc.text[doc.body_start:], **p)
    # The splitter's own size (sum of the pieces' counts) stays within chunk_size whenever "" lets it cut
    # anywhere; the only exception is a single character that alone reaches the size.
    if "" in p["separators"]:
        for a, b, total in strategy.ranges(doc):
            assert total <= p["chunk_size"] or b - a == 1
    # Deterministic, and the same on a fresh copy of the document.
    again = get_strategy("recursive", **p).chunk(doc_of(text))
    assert [c.to_dict() for c in again] == [c.to_dict() for c in chunks]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=400), size=st.integers(1, 40))
def test_arbitrary_text_matches_langchain(langchain, text: str, size: int) -> None:
    assume("<|" not in text)  # LangChain's length function refuses special-token text; documents are data
    doc = doc_of(text)
    chunks = get_strategy("recursive", chunk_size=size, chunk_overlap=size // 3).chunk(doc)
    check_chunks(doc, chunks, size)
    assert on_body(doc, chunks) == langchain(doc.text[doc.body_start:], chunk_size=size, chunk_overlap=size // 3)
