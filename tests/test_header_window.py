"""header-window (seed 001): H2 split, H3 fallback, word windows with overlap around fences, small-chunk merges."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from chunkscope.chunking.model import OVERSIZE, SPLIT_FENCE
from chunkscope.chunking.params import ParamError
from chunkscope.chunking.registry import get_strategy
from chunkscope.chunking.strategy import Limits
from chunkscope.document.loader import load_docs
from chunkscope.chunking.strategies._common import Protected
from chunkscope.chunking.strategies._common import FENCE_KINDS
from chunkscope.chunking.strategies.header_window import HeaderWindowStrategy, chapter_title
from tests.invariants import assert_deterministic, assert_trimmed_slices_cover_body
from tests.markdown_strategies import decoded_doc, markdown, sample_documents

#: Small limits so fixtures stay readable: sections over 50 words split, windows of 30 with 5 overlap.
SMALL = dict(max_words=50, target_words=30, overlap_words=5, min_words=10, hard_max_words=60, lint_min_words=5)


def doc(text: str, path: str = "docs/ch01-basics.md"):
    return decoded_doc(text, path)


def words(n: int, tag: str) -> str:
    return " ".join(f"{tag}{i}" for i in range(1, n + 1))


def chunk(text: str, path: str = "docs/ch01-basics.md", **params):
    """Chunk with the small limits; every golden test also holds the general invariants."""
    strategy = HeaderWindowStrategy(**(SMALL | params))
    d = doc(text, path)
    chunks = strategy.chunk(d)
    check_invariants(d, strategy, chunks)
    return chunks


# --- declared behaviour -----------------------------------------------------------------------------------------


def test_registry_defaults_and_limits() -> None:
    s = get_strategy("header-window")
    assert isinstance(s, HeaderWindowStrategy)
    assert s.seed == "001"
    assert s.params == {"max_words": 800, "target_words": 600, "overlap_words": 100, "min_words": 200,
                        "hard_max_words": 900, "lint_min_words": 100, "embed_prefix": "none"}
    assert s.length_tokenizer == "words"
    assert s.limits() == Limits("words", 900, 100, last_may_be_short=True)
    assert s.required_metadata == ("chapter", "section")


@pytest.mark.parametrize(
    "params, message",
    [
        ({"target_words": 900}, "target_words"),
        ({"overlap_words": 600}, "overlap_words"),
        ({"lint_min_words": 1000}, "lint_min_words"),
        ({"max_words": 0}, "max_words"),
        ({"window": 3}, "unknown parameter"),
    ],
)
def test_bad_parameters_are_refused(params: dict, message: str) -> None:
    with pytest.raises(ParamError, match=message):
        HeaderWindowStrategy(**params)


# --- H2 split and metadata ------------------------------------------------------------------------------------


def test_body_splits_at_h2_with_seed_metadata() -> None:
    text = (
        "---\ntitle: Getting Started\n---\n\n# Ignored For Chapter\n\n" + words(12, "i") + "\n\n"
        "## Alpha\n\n" + words(20, "a") + "\n\n"
        "## Beta\n\n" + words(25, "b") + "\n\n\n"
        "## Gamma\n\n" + words(30, "g") + "\n"
    )
    d = doc(text)
    chunks = HeaderWindowStrategy(**SMALL).chunk(d)
    assert [c.text.split("\n", 1)[0] for c in chunks] == ["# Ignored For Chapter", "## Alpha", "## Beta", "## Gamma"]
    assert [c.metadata["section"] for c in chunks] == ["Ignored For Chapter", "Alpha", "Beta", "Gamma"]
    assert {c.metadata["chapter"] for c in chunks} == {"Getting Started"}
    assert [c.metadata["chunk_index"] for c in chunks] == [0, 1, 2, 3]
    assert {c.metadata["file_path"] for c in chunks} == {"docs/ch01-basics.md"}
    for c in chunks:
        assert c.text == d.text[c.start:c.end] == c.text.strip()
        assert not c.warnings
    assert chunks[1].text == "## Alpha\n\n" + words(20, "a")
    assert chunks[3].tokens == 32  # "## Gamma" is two words


def test_chapter_falls_back_to_h1_then_file_stem() -> None:
    assert chapter_title(doc("# The Title\n\ntext\n")) == "The Title"
    assert chapter_title(doc("---\ntitle: FM Title\n---\n# The Title\n")) == "FM Title"
    assert chapter_title(doc("## Only H2\n\ntext\n", "guide/03-setup.md")) == "03-setup"
    c = chunk("## Only H2\n\n" + words(20, "x") + "\n", "guide/03-setup.md")
    assert c[0].metadata["chapter"] == "03-setup"


def test_h1_also_ends_a_section() -> None:
    text = "## One\n\n" + words(20, "a") + "\n\n# Second Part\n\n" + words(20, "b") + "\n"
    chunks = chunk(text)
    assert [c.metadata["section"] for c in chunks] == ["One", "Second Part"]
    assert chunks[1].text.startswith("# Second Part")


def test_hash_lines_inside_fences_are_not_headings() -> None:
    code = "```bash\n# install\n## not a heading\ncargo build\n```"
    text = "## Build\n\n" + words(15, "a") + "\n\n" + code + "\n\n" + words(15, "b") + "\n"
    chunks = chunk(text)
    assert len(chunks) == 1
    assert chunks[0].metadata["section"] == "Build"
    assert code in chunks[0].text


# --- H3 fallback ----------------------------------------------------------------------------------------------


def test_long_section_splits_at_h3_with_seed_section_names() -> None:
    text = (
        "## Big\n\n" + words(20, "p") + "\n\n"
        "### First Sub\n\n" + words(25, "f") + "\n\n"
        "### Second Sub\n\n" + words(25, "s") + "\n\n"
        "## After\n\n" + words(20, "z") + "\n"
    )
    chunks = chunk(text)
    assert [c.text.split("\n", 1)[0] for c in chunks] == ["## Big", "### First Sub", "### Second Sub", "## After"]
    # Seed: section = extract_header(subsection) or section_name.
    assert [c.metadata["section"] for c in chunks] == ["Big", "First Sub", "Second Sub", "After"]
    assert [c.metadata["subsection"] for c in chunks] == ["", "First Sub", "Second Sub", ""]


def test_section_within_max_words_is_not_split_at_h3() -> None:
    text = "## Small\n\n" + words(15, "p") + "\n\n### Sub\n\n" + words(15, "q") + "\n"
    chunks = chunk(text)
    assert len(chunks) == 1 and chunks[0].metadata["section"] == "Small"


# --- fixed windows ----------------------------------------------------------------------------------------------


def test_windows_of_target_words_with_overlap() -> None:
    text = "## Long\n\n" + words(98, "w") + "\n"  # 100 words with the heading
    chunks = chunk(text)
    assert [c.tokens for c in chunks] == [30, 30, 30, 25]
    assert chunks[0].text == "## Long\n\n" + " ".join(f"w{i}" for i in range(1, 29))
    assert chunks[1].text == " ".join(f"w{i}" for i in range(24, 54))
    assert chunks[2].text == " ".join(f"w{i}" for i in range(49, 79))
    assert chunks[3].text == " ".join(f"w{i}" for i in range(74, 99))
    for a, b in zip(chunks, chunks[1:]):
        assert b.overlap == (b.start, a.end)
        assert len(a.text[b.start - a.start:].split()) == 5  # exactly overlap_words shared
    # Seed: windows keep the H2 section's name.
    assert {c.metadata["section"] for c in chunks} == {"Long"}


def test_windows_of_an_oversized_h3_keep_the_h2_name() -> None:
    text = "## Parent\n\n" + words(20, "p") + "\n\n### Huge\n\n" + words(70, "h") + "\n"
    chunks = chunk(text)
    assert chunks[0].metadata["section"] == "Parent" and chunks[0].metadata["subsection"] == ""
    assert len(chunks) >= 3
    for c in chunks[1:]:
        assert c.metadata["section"] == "Parent"
        assert c.metadata["subsection"] == "Huge"
        assert c.tokens <= 30 or c is chunks[-1]


def test_window_cut_moves_to_fence_end_when_within_max() -> None:
    code = "```python\n" + "\n".join(f"# step {i}\nx = {i}" for i in range(4)) + "\n```"  # 26 words
    text = "## Code\n\n" + words(20, "a") + "\n\n" + code + "\n\n" + words(40, "b") + "\n"
    chunks = chunk(text)
    # From the heading, 30 words end inside the fence; the fence end is 48 words away (<= 50): cut there.
    assert chunks[0].text.endswith(code)
    assert chunks[0].tokens == 22 + 26
    assert chunks[1].text.startswith("b1 ")  # the overlap would start inside the fence: it starts after it


def test_window_ends_before_a_fence_that_does_not_fit_and_the_fence_starts_the_next() -> None:
    code = "```python\n" + "\n".join(f"# step {i}\nx{i} = {i}" for i in range(5)) + "\n```"  # 32 words: 22 + 32 > 50
    text = "## Code\n\n" + words(20, "a") + "\n\n" + code + "\n\n" + words(30, "b") + "\n"
    chunks = chunk(text)
    assert [c.text for c in chunks] == ["## Code\n\n" + words(20, "a"), code, words(30, "b")]
    assert not any(c.warnings for c in chunks)


def test_fence_longer_than_max_is_its_own_flagged_chunk() -> None:
    code = "```rust\n" + "\n".join(f"// line {i} of the example" for i in range(14)) + "\n```"  # 84 words
    text = "## Big Code\n\n" + words(20, "a") + "\n\n" + code + "\n\n" + words(30, "b") + "\n"
    chunks = chunk(text)
    fence_chunks = [c for c in chunks if c.text == code]
    assert len(fence_chunks) == 1
    assert fence_chunks[0].warnings == [OVERSIZE]
    assert fence_chunks[0].tokens > SMALL["max_words"]
    assert all(not c.warnings for c in chunks if c.text != code)
    assert all(SPLIT_FENCE not in c.warnings for c in chunks)


def test_fence_between_max_and_hard_max_is_flagged_by_the_lower_ceiling() -> None:
    code = "```text\n" + " ".join(f"t{i}" for i in range(53)) + "\n```"  # 55 words: over max 50, under hard 60
    text = "## S\n\n" + words(20, "a") + "\n\n" + code + "\n"
    chunks = chunk(text, min_words=0)
    fence = next(c for c in chunks if c.text == code)
    assert fence.tokens == 55 and fence.warnings == [OVERSIZE]


# --- merging small chunks ---------------------------------------------------------------------------------------


def test_small_section_merges_into_the_previous_one() -> None:
    text = "## A\n\n" + words(30, "a") + "\n\n## B\n\n" + words(3, "b") + "\n\n## C\n\n" + words(30, "c") + "\n"
    chunks = chunk(text)
    assert len(chunks) == 2
    assert chunks[0].text.startswith("## A") and chunks[0].text.endswith(words(3, "b"))
    assert chunks[0].metadata["section"] == "A"
    assert chunks[0].metadata["sections"] == ["A", "B"]
    assert chunks[1].metadata["sections"] == ["C"]
    assert [c.metadata["chunk_index"] for c in chunks] == [0, 1]


def test_small_first_chunk_merges_into_the_next() -> None:
    text = "# Title\n\nshort intro\n\n## A\n\n" + words(30, "a") + "\n"
    chunks = chunk(text)
    assert len(chunks) == 1
    assert chunks[0].text.startswith("# Title") and chunks[0].text.endswith("a30")
    assert chunks[0].metadata["section"] == "Title"
    assert chunks[0].metadata["sections"] == ["Title", "A"]


def test_merge_prefers_a_neighbour_of_the_same_section() -> None:
    text = (
        "## A\n\n" + words(30, "a") + "\n\n"
        "## Big\n\n" + words(3, "i") + "\n\n"  # 5 words: small, its previous neighbour is another section
        "### S1\n\n" + words(28, "s") + "\n\n"
        "### S2\n\n" + words(28, "t") + "\n"
    )
    chunks = chunk(text)
    assert [c.text.split("\n", 1)[0] for c in chunks] == ["## A", "## Big", "### S2"]
    assert chunks[0].metadata["sections"] == ["A"]
    assert chunks[1].text.endswith(words(28, "s"))
    assert chunks[1].metadata["section"] == "Big"
    assert chunks[1].metadata["sections"] == ["Big", "S1"]


def test_merge_never_exceeds_max_words() -> None:
    text = "## A\n\n" + words(46, "a") + "\n\n## B\n\n" + words(3, "b") + "\n\n## C\n\n" + words(46, "c") + "\n"
    chunks = chunk(text)
    assert [c.tokens for c in chunks] == [48, 5, 48]
    assert chunks[1].metadata["section"] == "B"


def test_small_window_tail_merges_into_the_previous_window() -> None:
    text = "## Long\n\n" + words(63, "w") + "\n"  # windows of 30 leave a tail of 10 words (5 of them overlap)
    chunks = chunk(text, min_words=12)
    assert all(c.tokens >= 12 for c in chunks)
    assert chunks[-1].text.endswith("w63")
    assert chunks[-1].tokens <= SMALL["max_words"]


def test_min_words_zero_never_merges() -> None:
    text = "## A\n\n" + words(30, "a") + "\n\n## B\n\nb\n"
    assert len(chunk(text, min_words=0)) == 2


def test_default_parameters_on_a_long_section() -> None:
    code = "```python\n" + "\n".join(f"# comment {i}\nvalue_{i} = compute({i})" for i in range(60)) + "\n```"
    text = "# Book\n\n## Long\n\n" + words(700, "p") + "\n\n" + code + "\n\n" + words(900, "q") + "\n"
    strategy = get_strategy("header-window")
    d = doc(text)
    chunks = strategy.chunk(d)
    check_invariants(d, strategy, chunks)
    assert len(chunks) >= 3
    for c in chunks:
        assert c.tokens <= 800
        assert not c.warnings
    assert sum(code in c.text for c in chunks) >= 1


def test_start_within_finds_the_overlap_start_exactly() -> None:
    d = doc(words(50, "w"))
    counter = HeaderWindowStrategy().counter(d)
    end = len(d.text)
    s = counter.start_within(end, 7, 0)
    assert d.text[s:].split() == [f"w{i}" for i in range(44, 51)]
    assert counter.start_within(end, 0, 0) == end
    assert counter.start_within(end, 1000, 10) == 10


# --- invariants -----------------------------------------------------------------------------------------------


def cuts_fence(text: str, fences: Protected, pos: int) -> bool:
    """A cut at ``pos`` leaves code of one fence on both sides (trailing blank lines of an unclosed fence aside)."""
    f = fences.containing(pos)
    return f is not None and bool(text[f[0]:pos].strip()) and bool(text[pos:f[1]].strip())


def check_invariants(d, strategy: HeaderWindowStrategy, chunks) -> None:
    """The rules every chunk list obeys: exact, trimmed, ordered slices covering the body; limits; fences whole."""
    assert_trimmed_slices_cover_body(d, chunks)
    text = d.text
    limits = strategy.limits()
    ceiling = min(strategy.params["max_words"], strategy.params["hard_max_words"])
    fences = Protected.of(d, FENCE_KINDS)
    for i, c in enumerate(chunks):
        assert c.metadata["chunk_index"] == i
        assert c.tokens == len(c.text.split())
        if OVERSIZE not in c.warnings:
            assert c.tokens <= ceiling <= limits.max
        assert SPLIT_FENCE not in c.warnings
        assert not cuts_fence(text, fences, c.start) and not cuts_fence(text, fences, c.end), (c.start, c.end)
        assert c.metadata["chapter"] and c.metadata["section"]
        assert c.metadata["file_path"] == d.path


# --- generated Markdown -----------------------------------------------------------------------------------------

WORDS = st.sampled_from(["robot", "joint", "the", "frame", "θ₁", "Größe", "日本語", "naïve", "x", "—", "😀",
                         "`code`", "**bold**", "a.b", "end.", "#hash", "C++"])


FENCE_LINES = ["# comment", "## not a heading", "x = 1", "", "fn main() {}", "  # indented"]
GENERATED = markdown(WORDS, "---\ntitle: Generated Ü\n---\n", FENCE_LINES, 12)


PARAM_SETS = [
    SMALL,
    dict(max_words=12, target_words=8, overlap_words=2, min_words=4, hard_max_words=12, lint_min_words=1),
    dict(max_words=20, target_words=5, overlap_words=0, min_words=0, hard_max_words=40, lint_min_words=0),
]


@pytest.mark.parametrize("params", PARAM_SETS)
@given(text=GENERATED)
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_invariants_on_generated_markdown(params: dict, text: str) -> None:
    strategy = HeaderWindowStrategy(**params)
    d = doc(text, "gen/01-page.md")
    chunks = strategy.chunk(d)
    check_invariants(d, strategy, chunks)
    assert_deterministic(lambda: HeaderWindowStrategy(**params), lambda: doc(text, "gen/01-page.md"), chunks)


# --- real documents ---------------------------------------------------------------------------------------------


@pytest.mark.corpus
def test_invariants_on_the_rust_book(corpus: Path) -> None:
    """Every file of the real corpus (the ``corpus`` fixture skips, saying where it looked, when it is absent)."""
    tree = load_docs(corpus)
    assert len(tree) > 100
    for params in ({}, SMALL):
        strategy = HeaderWindowStrategy(**params)
        for d in tree:
            check_invariants(d, strategy, strategy.chunk(d))


def test_invariants_on_sample_docs() -> None:
    strategy = HeaderWindowStrategy()
    for d in sample_documents():
        chunks = strategy.chunk(d)
        check_invariants(d, strategy, chunks)
        assert chunks or not d.text[d.body_start:].strip()
