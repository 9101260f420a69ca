"""Chunk ids are unique within a tree: ``chunk_id`` (seed 000) and ``(path, index)`` for every strategy.

On generated trees shaped like textbooks (modules, ``N.M`` topic folders, week folders, pages sharing names and
numbers, headings with repeated or list-style numbers), on the sample docs, the fixture textbook and the Rust book.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chunkscope import get_strategy
from chunkscope.document.loader import Document, load_docs, split_front_matter

TEXTBOOK = Path(__file__).parent / "fixtures" / "textbook" / "docs"
STRATEGIES = ("section-sentence", "header-window", "section", "content-type", "recursive", "fixed")

# Path pieces that make numbering collide: the same stems and numbers in many folders.
_FOLDERS = st.sampled_from(["module-1", "module-2", "module-1/1.1-basics", "module-1/1.2-motion",
                            "module-2/2.1-chains", "week-3", "week3", "guide", "", "module-1/week-2",
                            "guide/03-frames", "ch03"])
_STEMS = st.sampled_from(["index", "intro", "capstone-project", "ch03-02-data-types", "01-frames", "overview",
                          "week-1-exercises", "assessment", "README", "a#b", "a-b"])
_HEADINGS = st.sampled_from(["# Chapter 3: Kinematics", "## 1.1.1 Frames", "## 1.1.1 Frames", "### 1.1.2 Axes",
                             "## 1. Technical Implementation (40%)", "### 2. Navigation", "## Section 2: Loops",
                             "## Joints", "#### Details", "## 3.2 Inverse", "# Week 1 Exercises: Frames",
                             "## 2.1 DH", "## Section #1"])
_FRONT = st.sampled_from(["", "---\nweek: 2\n---\n", "---\nsection: '3#2'\n---\n", "---\nchapter: 3\n---\n",
                          "---\ntitle: Week 4 Lab\n---\n", "---\nmodule: module-9\n---\n"])


@st.composite
def trees(draw) -> list[Document]:
    """Documents with distinct paths; many share stems, folders, chapters and sections."""
    paths = draw(st.lists(st.tuples(_FOLDERS, _STEMS, st.sampled_from([".md", ".mdx"])), min_size=1, max_size=8,
                          unique_by=lambda t: "/".join(p for p in (t[0], t[1] + t[2]) if p)))
    docs = []
    for folder, stem, ext in paths:
        heads = draw(st.lists(_HEADINGS, min_size=0, max_size=6))
        body = "".join(f"{h}\n\nSome text about {h.lstrip('# ')}.\n\n" for h in heads) or "Only text.\n"
        text = draw(_FRONT) + body
        fm, start, _ = split_front_matter(text)
        path = "/".join(p for p in (folder, stem + ext) if p)
        docs.append(Document(path=path, text=text, front_matter=fm, body_start=start))
    return docs


def ids_of(docs, name: str, **params) -> tuple[list[str], list[tuple[str, int]]]:
    strat = get_strategy(name, **params)
    chunks = [c for d in docs for c in strat.chunk(d)]
    return [c.metadata.get("chunk_id") for c in chunks], [(c.path, c.index) for c in chunks]


def repeated(items) -> list:
    return [x for x, n in Counter(items).items() if n > 1]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(trees(), st.sampled_from([2, 3, 4]), st.sampled_from([8, 40, 512]))
def test_chunk_ids_are_unique_on_generated_trees(docs, levels, budget) -> None:
    chunk_ids, keys = ids_of(docs, "section-sentence", boundary_levels=levels, max_tokens=budget)
    assert not repeated(chunk_ids)
    assert not repeated(keys)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(trees())
def test_path_and_index_are_unique_for_every_strategy(docs) -> None:
    for name in STRATEGIES:
        assert not repeated(ids_of(docs, name)[1]), name


def test_a_chunk_id_does_not_depend_on_the_other_files_loaded() -> None:
    whole = load_docs(TEXTBOOK)
    alone = load_docs(TEXTBOOK / "module-1" / "1.1-basics" / "forward-kinematics.md")
    strat = get_strategy("section-sentence")
    assert ([c.metadata["chunk_id"] for c in strat.chunk(alone.documents[0])]
            == [c.metadata["chunk_id"] for c in strat.chunk(whole.get("module-1/1.1-basics/forward-kinematics.md"))])


def test_chunk_id_keeps_the_seed_form_after_the_page(sample_docs: Path) -> None:
    tree = load_docs(sample_docs)
    chunks = get_strategy("section-sentence").chunk(tree.get("module-1-foundations/02-forward-kinematics.md"))
    assert chunks[0].metadata["chunk_id"] == "module-1-foundations/02-forward-kinematics.md#ch2-s0-001"


def test_ids_are_unique_on_the_fixture_textbook_and_the_sample_docs(sample_docs: Path) -> None:
    for root in (TEXTBOOK, sample_docs):
        docs = load_docs(root).documents
        for name in STRATEGIES:
            chunk_ids, keys = ids_of(docs, name)
            assert not repeated(keys), (root, name)
            if name == "section-sentence":
                assert not repeated(chunk_ids), root


def test_ids_are_unique_on_the_rust_book(corpus: Path) -> None:
    docs = load_docs(corpus).documents
    for name in ("section-sentence", "recursive"):
        chunk_ids, keys = ids_of(docs, name)
        assert not repeated(keys), name
        if name == "section-sentence":
            assert len(chunk_ids) > 500 and not repeated(chunk_ids)
