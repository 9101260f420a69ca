"""Seed 002 ("Section-Based Data Model"): one chunk per ## section, metadata, overlap, limits, real corpus."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chunkscope.chunking.model import Chunk
from chunkscope.chunking.params import ParamError
from chunkscope.chunking.registry import get_strategy
from chunkscope.chunking.strategy import Limits
from chunkscope.document.loader import Document, decode_document, load_docs
from chunkscope.chunking.strategies.section import SectionStrategy, overlap_end
from chunkscope.tokens import get_tokenizer

# Generated Markdown shared with the seed 000 tests.
from .test_section_sentence import MARKDOWN_DOCS

SAMPLE_DOCS = Path(__file__).resolve().parents[1] / "sample_docs"


def mkdoc(text: str, path: str = "docs/ch03-kinematics.md") -> Document:
    doc, problems = decode_document(text.encode("utf-8"), path)
    assert doc is not None and not problems
    return doc


def cut(text: str, path: str = "docs/ch03-kinematics.md", **params) -> list[Chunk]:
    return get_strategy("section", **params).chunk(mkdoc(text, path))


def count(text: str) -> int:
    return get_tokenizer("cl100k_base").count(text)


def check_invariants(doc: Document, chunks: list[Chunk], max_tokens: int, overlap_tokens: int) -> None:
    """Exact, ordered, trimmed slices covering the body; overlap only into the next chunk and within budget."""
    text = doc.text
    covered = bytearray(len(text))
    for i, c in enumerate(chunks):
        assert c.text == text[c.start:c.end]
        assert c.text and c.text == c.text.strip()
        assert c.tokens == count(c.text) == c.metadata["token_count"]
        assert c.metadata["section_number"] == i
        assert ("oversize" in c.warnings) == (c.tokens > max_tokens)
        covered[c.start:c.end] = b"\x01" * (c.end - c.start)
        if i:
            prev = chunks[i - 1]
            assert c.start > prev.start and c.end > prev.end
            # Overlap is the previous chunk reaching into this one, never further than this chunk.
            assert c.overlap == ((c.start, prev.end) if prev.end > c.start else None)
            if prev.end > c.start:
                assert count(text[c.start:prev.end]) <= overlap_tokens
                assert prev.metadata["overlap_tokens"] == count(text[c.start:prev.end])
                assert prev.end == len(text) or text[prev.end].isspace(), "overlap ends after a whole word"
        if i + 1 == len(chunks):
            assert c.metadata["overlap_tokens"] == 0
    assert chunks == [] or chunks[0].start >= doc.body_start
    for i in range(doc.body_start, len(text)):
        assert covered[i] or text[i].isspace(), f"uncovered {text[i]!r} at {i}"


DOC = """---
title: Kinematics (front matter)
---
import Tabs from '@theme/Tabs';

# Chapter 3: Kinematics

Intro paragraph about the chapter and its goals.

## Forward Kinematics

Forward kinematics computes the pose of the hand from the joint angles of the arm.

### Joints

Joints are revolute or prismatic, and each one adds a degree of freedom.

## Inverse Kinematics

Inverse kinematics solves for the joint angles that put the hand at a target pose.
"""


def test_one_chunk_per_h2_section_with_exact_metadata() -> None:
    chunks = cut(DOC, overlap_tokens=0)
    assert [c.text.split("\n")[0] for c in chunks] == [
        "import Tabs from '@theme/Tabs';", "## Forward Kinematics", "## Inverse Kinematics"]
    base = {"chapter_id": "ch03", "chapter_number": 3, "chapter_title": "Chapter 3: Kinematics",
            "source_file": "docs/ch03-kinematics.md", "overlap_tokens": 0}
    assert [c.metadata for c in chunks] == [
        {**base, "section_number": 0, "section_title": "Chapter 3: Kinematics", "url_anchor": "",
         "token_count": 25},
        {**base, "section_number": 1, "section_title": "Forward Kinematics", "url_anchor": "#forward-kinematics",
         "token_count": 44},
        {**base, "section_number": 2, "section_title": "Inverse Kinematics", "url_anchor": "#inverse-kinematics",
         "token_count": 23},
    ]
    # ### stays inside its ## section; the lead-in before the # title joins the title's chunk.
    assert "### Joints" in chunks[1].text
    assert chunks[0].text.endswith("Intro paragraph about the chapter and its goals.")
    check_invariants(mkdoc(DOC), chunks, 512, 0)


def test_citation_template_renders_the_seed_format() -> None:
    chunks = cut(DOC, overlap_tokens=0)
    s = get_strategy("section")
    assert s.citation_template.format(**chunks[1].metadata) == "Source: Chapter 3, Section 1 - Forward Kinematics"
    assert s.required_metadata == ("chapter_id", "chapter_title", "section_title")


def test_a_chapter_without_introduction_numbers_its_first_section_zero() -> None:
    chunks = cut("## Alpha\n\nFirst section text.\n\n## Beta\n\nSecond section text.\n", "ch07-x.md")
    assert [(c.metadata["section_number"], c.metadata["section_title"]) for c in chunks] == [(0, "Alpha"), (1, "Beta")]
    # No # heading: the chapter title falls back to the first heading (via the document's numbering).
    assert chunks[0].metadata["chapter_title"] == "Alpha" and chunks[0].metadata["chapter_id"] == "ch07"


def test_chapter_title_falls_back_to_front_matter_title() -> None:
    chunks = cut("---\ntitle: Motion Planning\n---\n## Alpha\n\nText.\n", "ch04-plan.md")
    assert chunks[0].metadata["chapter_title"] == "Motion Planning"
    assert chunks[0].metadata["chapter_id"] == "ch04"


def test_unnumbered_file_keeps_its_stem_as_chapter_id() -> None:
    chunks = cut("# Welcome\n\nHello.\n", "intro.md")
    assert chunks[0].metadata["chapter_id"] == "intro" and chunks[0].metadata["chapter_number"] is None


def test_sections_are_never_split_and_oversize_is_flagged() -> None:
    long = " ".join(f"Sentence {i} makes this section long." for i in range(40))
    text = f"# T\n\nIntro.\n\n## Long\n\n{long}\n\n## Short\n\nShort text here.\n"
    chunks = cut(text, "ch01-l.md", max_tokens=100, min_tokens=5)
    assert [c.metadata["section_title"] for c in chunks] == ["T", "Long", "Short"]
    assert chunks[1].text == f"## Long\n\n{long}"
    assert chunks[1].warnings == ["oversize"] and chunks[1].tokens > 100
    assert chunks[1].metadata["overlap_tokens"] == 0, "an oversize section gets no overlap"
    assert chunks[0].warnings == [] and chunks[2].warnings == []
    check_invariants(mkdoc(text, "ch01-l.md"), chunks, 100, 50)


OVERLAP_DOC = "# Title\n\nIntro words here.\n\n" + "\n\n".join(
    f"## Part {k}\n\n" + " ".join(f"Part {k} sentence {i} has several plain words." for i in range(6))
    for k in range(4)) + "\n"


def test_overlap_reaches_into_the_next_section_by_at_most_overlap_tokens() -> None:
    doc = mkdoc(OVERLAP_DOC, "ch02-o.md")
    chunks = get_strategy("section", overlap_tokens=12).chunk(doc)
    plain = cut(OVERLAP_DOC, "ch02-o.md", overlap_tokens=0)
    assert [c.start for c in chunks] == [c.start for c in plain]
    for c, p, nxt in zip(chunks, plain, plain[1:]):
        assert c.end > nxt.start, "each chunk but the last reaches into the next section"
        tail = OVERLAP_DOC[nxt.start:c.end]
        assert tail.startswith("## Part") and "\n\n" in tail, "past the heading into the text"
        assert 0 < count(tail) <= 12
        assert c.metadata["overlap_tokens"] == count(tail)
        assert OVERLAP_DOC[c.end].isspace()
        assert c.text.startswith(p.text)
    assert chunks[-1].end == plain[-1].end and chunks[-1].metadata["overlap_tokens"] == 0
    assert chunks[2].overlap == (chunks[2].start, chunks[1].end)
    check_invariants(doc, chunks, 512, 12)
    assert all(c.overlap is None for c in plain)


def test_default_overlap_is_50_tokens() -> None:
    chunks = cut(OVERLAP_DOC, "ch02-o.md")
    assert get_strategy("section").params["overlap_tokens"] == 50
    assert all(40 <= c.metadata["overlap_tokens"] <= 50 for c in chunks[:-1])


def test_overlap_that_would_be_only_the_next_heading_is_dropped() -> None:
    chunks = cut(OVERLAP_DOC, "ch02-o.md", overlap_tokens=3)
    assert all(c.metadata["overlap_tokens"] == 0 and c.overlap is None for c in chunks)


def test_overlap_stops_before_a_code_fence() -> None:
    code = "```python\n" + "\n".join(f"x{i} = compute({i}) + offset" for i in range(30)) + "\n```"
    text = f"## A\n\nText of section A.\n\n## B\n\nB starts here.\n\n{code}\n\nB ends.\n"
    chunks = cut(text, "ch01-f.md", overlap_tokens=50)
    assert chunks[0].text == "## A\n\nText of section A.\n\n## B\n\nB starts here."
    assert chunks[1].overlap == (chunks[1].start, chunks[0].end)


def test_overlap_never_ends_on_a_bare_marker() -> None:
    words = " ".join(f"w{i}" for i in range(20))
    text = f"## A\n\nSection A.\n\n## B\n\n{words}\n\n### Sub\n\n- item one\n- item two\n\nEnd of B here.\n"
    b = text.index("## B")
    for overlap in range(1, 60):
        end = cut(text, "ch01-m.md", overlap_tokens=overlap)[0].end
        last_word = text[:end].split()[-1]
        assert last_word not in ("###", "-", "##"), (overlap, last_word)
        assert end <= b or end > b + len("## B")


def test_overlap_never_covers_the_whole_next_section() -> None:
    text = "## A\n\nText of section A goes on.\n\n## B\n\nTiny last section.\n"
    chunks = cut(text, "ch01-t.md", overlap_tokens=50)
    assert chunks[0].text.endswith("## B\n\nTiny last")
    assert chunks[0].end < chunks[1].end


def test_overlap_never_pushes_a_fitting_section_over_max_tokens() -> None:
    sec_a = "## A\n\n" + " ".join(f"word{i}" for i in range(30))
    budget = count(sec_a) + 6
    text = f"{sec_a}\n\n## B\n\n" + " ".join(f"more{i}" for i in range(40)) + "\n"
    chunks = cut(text, "ch01-m.md", overlap_tokens=50, max_tokens=budget, min_tokens=1)
    assert chunks[0].end > text.index("## B") and chunks[0].tokens <= budget
    assert not chunks[0].warnings


def test_level_parameter_and_chapter_headings_always_cut() -> None:
    text = "# One\n\nA.\n\n## Two\n\nB.\n\n### Three\n\nC.\n\n# Second chapter\n\nD.\n\n## Four\n\nE.\n"
    assert [c.metadata["section_title"] for c in cut(text, "ch01-l.md", overlap_tokens=0)] == [
        "One", "Two", "Second chapter", "Four"]
    three = cut(text, "ch01-l.md", overlap_tokens=0, level=3)
    assert [c.metadata["section_title"] for c in three] == ["One", "Two", "Three", "Second chapter", "Four"]
    assert [c.metadata["chapter_title"] for c in three] == ["One", "One", "One", "Second chapter", "Second chapter"]
    one = cut(text, "ch01-l.md", overlap_tokens=0, level=1)
    assert [c.metadata["section_title"] for c in one] == ["One", "Second chapter"]
    with pytest.raises(ParamError):
        get_strategy("section", level=0)
    with pytest.raises(ParamError):
        get_strategy("section", level=7)


def test_limits_and_params() -> None:
    s = get_strategy("section")
    assert isinstance(s, SectionStrategy) and s.seed == "002" and s.name == "section"
    assert s.limits() == Limits("cl100k_base", 512, 50)
    assert get_strategy("section", max_tokens=300, min_tokens=80, encoding="o200k_base").limits() == \
        Limits("o200k_base", 300, 80)
    assert get_strategy("section", max_tokens=30).limits() == Limits("cl100k_base", 30, 30)
    with pytest.raises(ParamError):
        get_strategy("section", overlap_tokens=-1)
    with pytest.raises(ParamError):
        get_strategy("section", chunk_size=3)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(MARKDOWN_DOCS, st.integers(8, 400), st.integers(0, 60), st.integers(1, 4))
def test_properties_on_generated_markdown(text: str, budget: int, overlap: int, level: int) -> None:
    path = "ch05-01-generated.md"
    params = dict(max_tokens=budget, min_tokens=0, overlap_tokens=overlap, level=level)
    a = cut(text, path, **params)
    b = cut(text, path, **params)
    assert [(c.start, c.end, c.metadata, c.warnings) for c in a] == [(c.start, c.end, c.metadata, c.warnings) for c in b]
    doc = mkdoc(text, path)
    check_invariants(doc, a, budget, overlap)
    for c in a:
        assert c.metadata["chapter_id"] == "ch05" and c.metadata["chapter_title"] and c.metadata["section_title"]
    # One chunk per section: as many chunks as cut headings (plus a chapter opening without one).
    cuts = [h for h in doc.structure.headings if h.level <= level and h.start >= doc.body_start]
    assert len(a) in (len(cuts), len(cuts) + 1) or not cuts


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(MARKDOWN_DOCS, st.integers(1, 60))
def test_overlap_end_is_the_same_from_the_outline_and_from_the_full_parse(text: str, overlap: int) -> None:
    """Without a parse the overlap is bounded by the outline's fences; it must agree with the parsed blocks."""
    fresh, parsed = mkdoc(text), mkdoc(text)
    assert parsed.structure is not None and not fresh.analysis.structure_parsed
    heads = [h for h in parsed.structure.headings if h.start >= parsed.body_start]
    bounds = [*(h.start for h in heads), len(text)]
    for i in range(len(bounds) - 2):
        a, b, c = bounds[i], bounds[i + 1], bounds[i + 2]
        args = (a, b, b, c, overlap, None, heads[i + 1] if i + 1 < len(heads) else None)
        got = overlap_end(fresh, get_tokenizer("cl100k_base").counter(fresh), *args)
        want = overlap_end(parsed, get_tokenizer("cl100k_base").counter(parsed), *args)
        assert got == want


def test_overlap_end_needs_no_parse_when_only_fences_can_be_cut() -> None:
    code = "```python\n" + "\n".join(f"x{i} = compute({i})" for i in range(30)) + "\n```"
    text = f"## A\n\nText of A.\n\n## B\n\nB starts here.\n\n{code}\n"
    fresh = mkdoc(text)
    heads = fresh.outline.headings
    end = overlap_end(fresh, get_tokenizer("cl100k_base").counter(fresh), 0, heads[1].start - 2, heads[1].start,
                      len(text), 50, None, heads[1])
    assert text[:end].endswith("B starts here.")
    assert not fresh.analysis.structure_parsed, "the outline's fences were enough"


def _check_tree(root: Path) -> int:
    strategy = get_strategy("section")
    n = 0
    for doc in load_docs(root):
        chunks = strategy.chunk(doc)
        check_invariants(doc, chunks, 512, 50)
        for c in chunks:
            assert all(c.metadata[k] not in (None, "") for k in strategy.required_metadata)
        n += len(chunks)
    return n


@pytest.mark.corpus
def test_rust_book_corpus(corpus: Path) -> None:
    """Every file of the Rust book (the conftest fixture skips with the reason when the corpus is absent)."""
    assert _check_tree(corpus) > 100


def test_sample_docs() -> None:
    if not SAMPLE_DOCS.is_dir():
        pytest.skip("sample_docs/ is not in this checkout")
    assert _check_tree(SAMPLE_DOCS) > 0
