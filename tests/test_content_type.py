"""content-type (seed 003): type classification, per-type token budgets, sliding windows, seed metadata."""

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
from chunkscope.chunking.strategies.content_type import TYPES, ContentTypeStrategy, cuts_fence
from chunkscope.chunking.strategies.header_window import FENCE_KINDS
from chunkscope.tokens import get_tokenizer
from tests.invariants import assert_deterministic, assert_trimmed_slices_cover_body
from tests.markdown_strategies import decoded_doc, markdown, sample_documents

#: Small budgets so fixtures stay readable.
SMALL = dict(theoretical_tokens=40, code_tokens=80, mixed_tokens=60, overlap_tokens=10)
PATH = "module-01-ros2/01-fundamentals.md"

SENTENCE = "The robot reads its sensors and moves."  # 8 cl100k tokens
SMALL_FENCE = "```python\nimport rclpy\nnode = rclpy.create_node('talker')\n```"  # 20 tokens
BIG_FENCE = "```python\n" + "\n".join(f"# step {i}\nvalue_{i} = compute({i})" for i in range(12)) + "\n```"  # 160


def doc(text: str, path: str = PATH):
    return decoded_doc(text, path)


def chunk(text: str, path: str = PATH, **params):
    """Chunk with the small budgets; every golden test also holds the general invariants."""
    strategy = ContentTypeStrategy(**(SMALL | params))
    d = doc(text, path)
    chunks = strategy.chunk(d)
    check_invariants(d, strategy, chunks)
    return chunks


def ntok(text: str) -> int:
    return get_tokenizer("cl100k_base").count(text)


# --- declared behaviour -----------------------------------------------------------------------------------------


def test_registry_defaults_and_limits() -> None:
    s = get_strategy("content-type")
    assert isinstance(s, ContentTypeStrategy) and s.seed == "003"
    p = s.params
    assert (p["theoretical_tokens"], p["code_tokens"], p["mixed_tokens"], p["overlap_tokens"]) == (800, 1200, 1000, 200)
    assert (p["code_ratio"], p["split_level"], p["encoding"]) == (0.5, 2, "cl100k_base")
    assert p["framework_keywords"]["ros2"][0] == "rclpy"
    assert s.limits() == Limits("cl100k_base", 1200)
    assert s.required_metadata == ("module", "chapter", "section", "type")
    assert get_strategy("content-type", encoding="o200k_base").limits().tokenizer == "o200k_base"


@pytest.mark.parametrize(
    "params, message",
    [
        ({"overlap_tokens": 800}, "overlap_tokens"),
        ({"theoretical_tokens": 100, "overlap_tokens": 100}, "overlap_tokens"),
        ({"encoding": "words"}, "encoding"),
        ({"code_ratio": 1.5}, "code_ratio"),
        ({"split_level": 0}, "split_level"),
        ({"framework_keywords": {"ros2": [""]}}, "framework_keywords"),
        ({"framework_keywords": {"ros2": 3}}, "framework_keywords"),
        ({"framework_keywords": "ros2"}, "framework_keywords"),
    ],
)
def test_bad_parameters_are_refused(params: dict, message: str) -> None:
    with pytest.raises(ParamError, match=message):
        ContentTypeStrategy(**params)


def test_framework_keywords_from_text_parameter() -> None:
    s = ContentTypeStrategy(framework_keywords='{"mujoco": ["mjcf", "mujoco"]}')
    assert s.framework("Load the MJCF model into MuJoCo.") == "mujoco"
    assert s.framework("rclpy") is None


# --- classification and budgets ---------------------------------------------------------------------------------


def test_region_types() -> None:
    text = (
        "## Concepts\n\n" + SENTENCE + "\n\n"
        "## Listing\n\nRun this:\n\n" + SMALL_FENCE + "\n\n"
        "## Tutorial\n\n" + " ".join([SENTENCE] * 4) + "\n\n" + SMALL_FENCE + "\n"
    )
    chunks = chunk(text)
    assert [(c.metadata["section"], c.metadata["type"]) for c in chunks] == [
        ("concepts", "theoretical"), ("listing", "code"), ("tutorial", "mixed")]


def test_code_ratio_decides_between_code_and_mixed() -> None:
    text = "## Listing\n\nRun this program to start the node:\n\n" + SMALL_FENCE + "\n"
    d = doc(text)
    s, e = d.body_start, len(text.rstrip())
    share = len(SMALL_FENCE) / (e - s)
    assert 0.5 < share < 0.9
    assert ContentTypeStrategy(**SMALL).classify(d, s, e) == "code"
    assert ContentTypeStrategy(**SMALL, code_ratio=0.9).classify(d, s, e) == "mixed"
    assert ContentTypeStrategy(**SMALL, code_ratio=0.0).classify(d, s, e) == "code"
    assert ContentTypeStrategy(**SMALL).classify(doc("## P\n\nno code here\n"), 0, 20) == "theoretical"


def test_indented_code_counts_as_code() -> None:
    text = "## Indented\n\nSee:\n\n    let x = 5;\n    let y = x + 1;\n    println!(\"{y}\");\n"
    assert chunk(text)[0].metadata["type"] == "code"


def test_each_type_gets_its_own_budget() -> None:
    prose = " ".join([SENTENCE] * 7)  # 56 tokens: over the theoretical budget (40)
    code = "```rust\n" + "\n".join(f"let v{i} = f({i});" for i in range(8)) + "\n```"
    assert 40 < ntok("## Code\n\n" + code) <= 80
    chunks = chunk("## Theory\n\n" + prose + "\n\n## Code\n\n" + code + "\n")
    theory = [c for c in chunks if c.metadata["section"] == "theory"]
    code_chunks = [c for c in chunks if c.metadata["section"] == "code"]
    assert len(theory) == 2 and all(c.tokens <= 40 for c in theory)
    assert len(code_chunks) == 1 and code_chunks[0].tokens > 40
    s = ContentTypeStrategy(**SMALL)
    assert [s.budget_for(c) for c in chunks] == [40, 40, 80]
    assert s.limits().max == 80


def test_region_that_fits_is_one_chunk() -> None:
    chunks = chunk("# Title\n\n" + SENTENCE + "\n\n## One\n\n" + " ".join([SENTENCE] * 3) + "\n")
    assert [c.text.split("\n", 1)[0] for c in chunks] == ["# Title", "## One"]
    assert [c.metadata["section"] for c in chunks] == ["title", "one"]


def test_split_level_three_cuts_at_h3() -> None:
    text = "## Top\n\n" + SENTENCE + "\n\n### Inner Part\n\n" + SENTENCE + "\n"
    assert [c.metadata["section"] for c in chunk(text)] == ["top"]
    assert [c.metadata["section"] for c in chunk(text, split_level=3)] == ["top", "inner-part"]


# --- windows and boundaries -------------------------------------------------------------------------------------


def test_windows_overlap_by_at_most_overlap_tokens() -> None:
    words = " ".join(f"item{i}" for i in range(120))
    chunks = chunk("## Long\n\n" + words + "\n")
    assert len(chunks) > 3
    for a, b in zip(chunks, chunks[1:]):
        assert b.overlap is not None and b.overlap == (b.start, a.end)
        shared = a.text[b.start - a.start:]
        assert 0 < ntok(shared) <= 10
        assert b.text.startswith(shared)
    assert all(c.tokens <= 40 for c in chunks)


def test_cut_moves_back_to_a_blank_line() -> None:
    p1 = " ".join(["The robot reads its sensors."] * 5)
    p2 = " ".join(["Then it moves its arm."] * 4)
    chunks = chunk("## Theory\n\n" + p1 + "\n\n" + p2 + "\n")
    assert chunks[0].text == "## Theory\n\n" + p1
    assert chunks[1].text.endswith(p2) and "\n\nThen" in chunks[1].text


def test_cut_moves_back_to_a_line_end() -> None:
    lines = "\n".join([SENTENCE] * 8)
    d = doc("## Lines\n\n" + lines + "\n")
    chunks = chunk(d.text)
    assert len(chunks) == 3
    for c in chunks[:-1]:
        assert d.text[c.end] == "\n" and c.text.endswith("moves.")


def test_cut_moves_back_to_a_sentence_end() -> None:
    d = doc("## Sentences\n\n" + " ".join([SENTENCE] * 8) + "\n")
    chunks = chunk(d.text)
    assert len(chunks) == 3
    for c in chunks[:-1]:
        assert c.text.endswith("moves.") and d.text[c.end] == " "


def test_cut_moves_back_to_a_space_and_overlap_starts_on_a_word() -> None:
    d = doc("## Words\n\n" + " ".join(f"alpha{i}" for i in range(60)) + "\n")
    chunks = chunk(d.text)
    for c in chunks:
        assert d.text[c.start - 1].isspace() and (c.end == len(d.text.rstrip()) or d.text[c.end] == " ")


def test_window_never_ends_on_a_heading() -> None:
    head = "## Region\n\n" + " ".join([SENTENCE] * 4)
    text = head + "\n\n### Next Part\n\n" + " ".join([SENTENCE] * 3) + "\n"
    assert ntok(head + "\n\n### Next Part") <= 40  # the blank line after the heading is inside the window
    chunks = chunk(text)
    assert chunks[0].text == head
    assert "### Next Part\n\nThe robot" in chunks[1].text


def test_text_without_any_boundary_is_still_cut_within_budget() -> None:
    blob = "".join(chr(0x4E00 + (i * 7919) % 2000) for i in range(200))  # CJK, no spaces or punctuation
    chunks = chunk("## Blob\n\n" + blob + "\n")
    assert len(chunks) > 1 and all(c.tokens <= 40 for c in chunks)


def test_window_ends_before_a_fence_whose_start_is_near() -> None:
    prose = " ".join([SENTENCE] * 5)
    text = "## Near Fence\n\n" + prose + "\n\n" + SMALL_FENCE + "\n\nAfter the code we explain it. Then we run it again.\n"
    chunks = chunk(text)
    assert len(chunks) == 2
    assert chunks[0].text == "## Near Fence\n\n" + prose
    assert SMALL_FENCE in chunks[1].text
    assert chunks[1].overlap is not None  # the fence fits after the overlap, so the overlap is kept
    assert not any(c.warnings for c in chunks)
    assert chunks[0].metadata["language"] == "" and chunks[1].metadata["language"] == "python"


def test_fence_longer_than_the_budget_is_cut_at_line_ends_and_flagged() -> None:
    d = doc("## Code Only\n\n" + BIG_FENCE + "\n")
    chunks = chunk(d.text)
    assert len(chunks) == 3
    assert all(c.warnings == [SPLIT_FENCE] for c in chunks)
    assert all(c.tokens <= 80 for c in chunks)
    for a, b in zip(chunks, chunks[1:]):
        assert d.text[a.end] == "\n"  # cut at a line end inside the code
        assert d.text[b.start - 1] == "\n"  # the overlap starts on a line of its own
        assert b.start < a.end  # and there is one


def test_fence_that_does_not_fit_and_starts_early_is_filled_then_cut() -> None:
    d = doc("## Big Fence\n\nShort intro.\n\n" + BIG_FENCE + "\n\nDone.\n")
    chunks = chunk(d.text)
    assert chunks[0].text.startswith("## Big Fence\n\nShort intro.\n\n```python")
    assert SPLIT_FENCE in chunks[0].warnings and chunks[0].tokens > 60
    assert chunks[-1].text.endswith("```\n\nDone.")


def test_fence_that_does_not_fit_and_starts_in_the_last_fifth_starts_a_window() -> None:
    prose = " ".join([SENTENCE] * 4)  # 32 tokens: the fence starts near the end of a 40-token window
    d = doc("## Late Fence\n\n" + prose + "\n\n" + BIG_FENCE + "\n")
    s = ContentTypeStrategy(**(SMALL | dict(mixed_tokens=40, code_tokens=40)))
    chunks = s.chunk(d)
    check_invariants(d, s, chunks)
    assert chunks[0].text == "## Late Fence\n\n" + prose and not chunks[0].warnings
    assert chunks[1].text.startswith("```python") and chunks[1].warnings == [SPLIT_FENCE]


# --- metadata ---------------------------------------------------------------------------------------------------


def test_seed_metadata_from_path_and_front_matter() -> None:
    text = (
        "---\ntitle: Fundamentals\ncomplexity: beginner\nprerequisites: [basic-python, linux-basics]\n"
        "related_sections: [services]\n---\n\n"
        "## Publisher Subscriber\n\nPublish with rclpy:\n\n" + SMALL_FENCE + "\n"
    )
    (c,) = chunk(text)
    assert c.metadata == {
        "module": "module-01-ros2",
        "chapter": "01-fundamentals",
        "section": "publisher-subscriber",
        "type": "code",
        "language": "python",
        "framework": "ros2",
        "complexity": "beginner",
        "prerequisites": ["basic-python", "linux-basics"],
        "related_sections": ["services"],
    }


def test_metadata_defaults_without_front_matter_or_module() -> None:
    (c,) = chunk("## Plain {#custom-id}\n\nJust prose.\n", "guide/02-setup.md")
    m = c.metadata
    assert (m["module"], m["chapter"], m["section"], m["type"]) == (None, "02-setup", "custom-id", "theoretical")
    assert (m["language"], m["framework"], m["complexity"], m["prerequisites"], m["related_sections"]) == ("", None, None, [], [])


def test_index_page_chapter_is_its_folder() -> None:
    (c,) = chunk("## Overview\n\nText.\n", "module-02-sim/03-gazebo/index.md")
    assert c.metadata["chapter"] == "03-gazebo" and c.metadata["module"] == "module-02-sim"


def test_text_before_the_first_heading_has_no_section() -> None:
    chunks = chunk("import Tabs from '@theme/Tabs';\n\n# Title\n\nText.\n", "x/page.mdx")
    assert [c.metadata["section"] for c in chunks] == ["", "title"]


def test_dominant_language_is_the_one_with_most_code() -> None:
    text = "## Two\n\n```bash\nls\n```\n\n```python\nprint('a much longer line of python')\n```\n\n```\nplain\n```\n"
    assert chunk(text)[0].metadata["language"] == "python"


@pytest.mark.parametrize(
    "text, expected",
    [
        ("We launch Gazebo with an SDF world, then ROS2 nodes.", "gazebo"),
        ("ROS2 and rclpy; later Gazebo.", "ros2"),
        ("Gazebo or Unity, both once.", "gazebo"),  # a tie goes to the first framework in the map
        ("unityfoo and isaacs are not keywords", None),
        ("Isaac Sim.", "isaac"),
        ("We use ROS 2 here.", "ros2"),
    ],
)
def test_framework_detection(text: str, expected: str | None) -> None:
    assert ContentTypeStrategy().framework(text) == expected
    (c,) = chunk("## S\n\n" + text + "\n")
    assert c.metadata["framework"] == expected


def test_framework_is_judged_per_chunk_with_its_own_edges() -> None:
    chunks = chunk("## A\n\nWe use rclpy here.\n\n## B\n\nGazebo only.\n")
    assert [c.metadata["framework"] for c in chunks] == ["ros2", "gazebo"]


def test_front_matter_framework_wins() -> None:
    (c,) = chunk("---\nframework: unity\n---\n## S\n\nrclpy rclpy\n")
    assert c.metadata["framework"] == "unity"


def test_framework_on_text_whose_lowercase_changes_length() -> None:
    # "İ" lowercases to two characters, so offsets from str.lower() would drift: the regex fallback is used.
    (c,) = chunk("## S\n\nİİİ then rclpy and colcon, plus Gazebo.\n")
    assert c.metadata["framework"] == "ros2"


# --- invariants -------------------------------------------------------------------------------------------------


def check_invariants(d, strategy: ContentTypeStrategy, chunks) -> None:
    """Exact, trimmed, ordered slices covering the body; per-type budgets; split-fence exactly where a fence is cut."""
    assert_trimmed_slices_cover_body(d, chunks)
    text = d.text
    fences = Protected.of(d, FENCE_KINDS)
    counter = get_tokenizer(strategy.length_tokenizer)
    for c in chunks:
        assert c.tokens == counter.count(c.text)
        assert c.tokens <= strategy.budget_for(c) or OVERSIZE in c.warnings
        assert OVERSIZE not in c.warnings  # windows are cut to their budget: nothing is ever over
        assert (SPLIT_FENCE in c.warnings) == (cuts_fence(text, fences, c.start) or cuts_fence(text, fences, c.end))
        m = c.metadata
        assert set(strategy.required_metadata) <= set(m)
        assert m["type"] in TYPES and m["chapter"] and isinstance(m["section"], str)
        assert m["language"] == "" or any(
            b.kind == "fence" and b.language.lower() == m["language"] and b.start < c.end and b.end > c.start
            for b in d.structure.blocks
        )


WORDS = st.sampled_from(["robot", "joint", "the", "frame", "θ₁", "Größe", "日本語", "naïve", "x", "—", "😀",
                         "`code`", "**bold**", "a.b", "end.", "#hash", "rclpy", "Gazebo", "Why?", "a,b"])


#: What the generated fences hold: '#' comment lines among code, and a long line.
FENCE_LINES = ["# comment", "## not a heading", "x = 1", "", "fn main() {}", "  # indented",
               "let s = \"a long string literal with words\";"]
GENERATED = markdown(WORDS, "---\ntitle: Generated Ü\ncomplexity: advanced\n---\n", FENCE_LINES, 14)


PARAM_SETS = [
    SMALL,
    dict(theoretical_tokens=16, code_tokens=24, mixed_tokens=20, overlap_tokens=4, split_level=3),
    dict(theoretical_tokens=30, code_tokens=30, mixed_tokens=30, overlap_tokens=0, code_ratio=0.2, encoding="o200k_base"),
]


@pytest.mark.parametrize("params", PARAM_SETS)
@given(text=GENERATED)
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_invariants_on_generated_markdown(params: dict, text: str) -> None:
    strategy = ContentTypeStrategy(**params)
    d = doc(text, "module-3/04-gen.md")
    chunks = strategy.chunk(d)
    check_invariants(d, strategy, chunks)
    assert_deterministic(lambda: ContentTypeStrategy(**params), lambda: doc(text, "module-3/04-gen.md"), chunks)


# --- real documents ---------------------------------------------------------------------------------------------


@pytest.mark.corpus
def test_invariants_on_the_rust_book(corpus: Path) -> None:
    """Every file of the real corpus (the ``corpus`` fixture skips, saying where it looked, when it is absent)."""
    tree = load_docs(corpus)
    assert len(tree) > 100
    kinds: set[str] = set()
    for params in ({}, dict(theoretical_tokens=120, code_tokens=200, mixed_tokens=160, overlap_tokens=40)):
        strategy = ContentTypeStrategy(**params)
        for d in tree:
            chunks = strategy.chunk(d)
            check_invariants(d, strategy, chunks)
            kinds.update(c.metadata["type"] for c in chunks)
    assert {"theoretical", "mixed"} <= kinds


def test_invariants_on_sample_docs() -> None:
    strategy = ContentTypeStrategy()
    for d in sample_documents():
        chunks = strategy.chunk(d)
        check_invariants(d, strategy, chunks)
        assert chunks or not d.text[d.body_start:].strip()
