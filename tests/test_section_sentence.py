"""Seed 000 ("Hybrid Section-Aware Chunking"): golden tests for each rule, properties, and the real corpus."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chunkscope.chunking.model import Chunk
from chunkscope.chunking.params import ParamError
from chunkscope.chunking.registry import get_strategy
from chunkscope.chunking.strategy import Limits
from chunkscope.document.loader import Document, decode_document, load_docs
from chunkscope.document.sentences import sentence_spans
from chunkscope.chunking.strategies._common import word_cut
from chunkscope.chunking.strategies.section_sentence import SectionSentenceStrategy
from chunkscope.tokens import get_tokenizer

SAMPLE_DOCS = Path(__file__).resolve().parents[1] / "sample_docs"


def mkdoc(text: str, path: str = "docs/chapter-03-kinematics.md") -> Document:
    doc, problems = decode_document(text.encode("utf-8"), path)
    assert doc is not None and not problems
    return doc


def cut(text: str, path: str = "docs/chapter-03-kinematics.md", **params) -> list[Chunk]:
    return get_strategy("section-sentence", **params).chunk(mkdoc(text, path))


def count(text: str) -> int:
    return get_tokenizer("cl100k_base").count(text)


# --- invariants shared by golden, property and corpus tests ---------------------------------------------------


def check_invariants(doc: Document, chunks: list[Chunk], max_tokens: int) -> None:
    text = doc.text
    prev_end = doc.body_start
    ids = set()
    covered = bytearray(len(text))
    for i, c in enumerate(chunks):
        assert c.index == i
        assert c.text == text[c.start:c.end], "a chunk is an exact slice"
        assert c.text and c.text == c.text.strip(), "chunks never start or end with whitespace"
        assert c.start >= prev_end, "chunks are in order and never overlap (seed 000: no overlap)"
        assert c.overlap is None
        prev_end = c.end
        assert c.tokens == count(c.text) == c.metadata["token_count"]
        assert c.tokens <= max_tokens or "oversize" in c.warnings
        assert c.metadata["chunk_id"] not in ids
        ids.add(c.metadata["chunk_id"])
        assert set(c.metadata) == {"chunk_id", "chapter", "section", "subsection", "url_anchor", "token_count",
                                   "chunk_index", "source_file"}
        assert c.metadata["source_file"] == doc.path
        covered[c.start:c.end] = b"\x01" * (c.end - c.start)
        _check_no_trailing_heading(doc, c)
    for i in range(doc.body_start, len(text)):
        assert covered[i] or text[i].isspace(), f"uncovered {text[i]!r} at {i}"


def _check_no_trailing_heading(doc: Document, c: Chunk) -> None:
    """A heading never ends a chunk, unless the chunk is only headings or the heading has no text of its own."""
    heads = [h for h in doc.structure.headings if c.start <= h.start < c.end]
    if not heads:
        return
    last = heads[-1]
    if doc.text[last.start:last.end].rstrip() != doc.text[last.start:c.end]:
        return
    after = doc.text[c.end:].lstrip()
    if not after or any(h.start == len(doc.text) - len(after) for h in doc.structure.headings):
        return  # an empty heading: nothing of its own to stay with
    rest = doc.text[c.start:c.end]
    for h in heads:
        rest = rest.replace(doc.text[h.start:h.end].rstrip(), "", 1)
    assert not rest.strip(), f"chunk {c.index} ends with heading {last.text!r}"


def assert_deterministic(text: str, path: str, **params) -> list[Chunk]:
    a = cut(text, path, **params)
    b = cut(text, path, **params)
    assert [(c.start, c.end, c.metadata, c.warnings) for c in a] == [(c.start, c.end, c.metadata, c.warnings) for c in b]
    return a


# --- sections and metadata ------------------------------------------------------------------------------------

DOC = """---
title: Kinematics
sidebar_position: 3
---
# Chapter 3: Kinematics

Intro paragraph.

## 3.1 Forward Kinematics

Text about forward.

### 3.1.1 Joints

Joint text.

#### Details

Detail text.

##### Deep

Deep text stays in Details.

## 3.2 Inverse Kinematics {#inverse-kinematics}

IK text.
"""


def test_sections_at_h2_h3_h4_with_exact_metadata() -> None:
    chunks = cut(DOC)
    got = [(c.text.split("\n", 1)[0], c.metadata) for c in chunks]
    src = "docs/chapter-03-kinematics.md"
    assert got == [
        ("# Chapter 3: Kinematics", {"chunk_id": f"{src}#ch3-s0-001", "chapter": 3, "section": None, "subsection": None,
                                     "url_anchor": "", "token_count": 11, "chunk_index": 0,
                                     "source_file": src}),
        ("## 3.1 Forward Kinematics", {"chunk_id": f"{src}#ch3-s3.1-001", "chapter": 3, "section": "3.1", "subsection": None,
                                       "url_anchor": "#31-forward-kinematics", "token_count": 13, "chunk_index": 0,
                                       "source_file": src}),
        ("### 3.1.1 Joints", {"chunk_id": f"{src}#ch3-s3.1-002", "chapter": 3, "section": "3.1", "subsection": "3.1.1",
                              "url_anchor": "#311-joints", "token_count": 13, "chunk_index": 0, "source_file": src}),
        ("#### Details", {"chunk_id": f"{src}#ch3-s3.1-003", "chapter": 3, "section": "3.1", "subsection": "3.1.1",
                          "url_anchor": "#details", "token_count": 15, "chunk_index": 0, "source_file": src}),
        ("## 3.2 Inverse Kinematics {#inverse-kinematics}",
         {"chunk_id": f"{src}#ch3-s3.2-001", "chapter": 3, "section": "3.2", "subsection": None,
          "url_anchor": "#inverse-kinematics", "token_count": 19, "chunk_index": 0, "source_file": src}),
    ]
    # ##### is below the default boundary: it stays inside the #### section.
    assert chunks[3].text.endswith("Deep text stays in Details.")
    assert chunks[0].start == DOC.index("# Chapter"), "front matter is never chunked"
    check_invariants(mkdoc(DOC), chunks, 512)


def test_boundary_levels_parameter() -> None:
    two = cut(DOC, boundary_levels=2)
    assert [c.metadata["chunk_id"] for c in two] == [f"docs/chapter-03-kinematics.md#{x}" for x in ("ch3-s0-001", "ch3-s3.1-001", "ch3-s3.2-001")]
    assert "#### Details" in two[1].text and two[1].metadata["subsection"] is None
    five = cut(DOC, boundary_levels=5)
    assert [c.text.split("\n", 1)[0] for c in five][3:5] == ["#### Details", "##### Deep"]
    assert five[4].metadata["url_anchor"] == "#deep"
    with pytest.raises(ParamError):
        get_strategy("section-sentence", boundary_levels=1)
    with pytest.raises(ParamError):
        get_strategy("section-sentence", boundary_levels=7)


def test_section_number_falls_back_to_the_file_numbering_and_ids_stay_unique() -> None:
    text = "## Data Types\n\nEvery value has a type.\n\n### Scalar Types\n\nA scalar is one value.\n"
    chunks = cut(text, "ch03-02-data-types.md")
    assert [(c.metadata["chunk_id"], c.metadata["section"], c.metadata["chunk_index"], c.metadata["url_anchor"])
            for c in chunks] == [
        ("ch03-02-data-types.md#ch3-s3.2-001", "3.2", 0, "#data-types"),
        ("ch03-02-data-types.md#ch3-s3.2-002", "3.2", 0, "#scalar-types"),
    ]


def test_unknown_chapter_uses_the_file_stem_in_the_id() -> None:
    chunks = cut("# Welcome\n\nHello there.\n", "intro.md")
    assert chunks[0].metadata == {"chunk_id": "intro.md#intro-s0-001", "chapter": None, "section": None, "subsection": None,
                                  "url_anchor": "", "token_count": 6, "chunk_index": 0,
                                  "source_file": "intro.md"}


def test_text_before_any_heading_is_its_own_section_without_anchor() -> None:
    chunks = cut("Loose intro line.\n\n## 1.1 First\n\nBody.\n", "ch01-intro.md")
    assert chunks[0].text == "Loose intro line."
    assert chunks[0].metadata["url_anchor"] is None and chunks[0].metadata["chunk_id"] == "ch01-intro.md#ch1-s0-001"
    assert chunks[1].metadata["chunk_id"] == "ch01-intro.md#ch1-s1.1-001"


def test_heading_only_section_joins_its_first_subsection_but_not_a_sibling() -> None:
    text = "## 2.3 The DH Convention\n### 2.3.1 Parameters\n\nFour numbers per link.\n\n## 2.4 Empty\n## 2.5 Next\n\nMore.\n"
    chunks = cut(text, "ch02-fk.md")
    assert [c.text for c in chunks] == [
        "## 2.3 The DH Convention\n### 2.3.1 Parameters\n\nFour numbers per link.",
        "## 2.4 Empty",
        "## 2.5 Next\n\nMore.",
    ]
    assert chunks[0].metadata["url_anchor"] == "#23-the-dh-convention"
    assert chunks[0].metadata["section"] == "2.3" and chunks[0].metadata["subsection"] is None


def test_a_fitting_section_is_one_chunk_whatever_it_holds() -> None:
    text = ("## 1.1 Mixed\n\nA paragraph. Another sentence.\n\n- one\n- two\n\n```python\ndef f():\n    return 1\n```\n\n"
            "$$\nx = y\n$$\n\n| a | b |\n|---|---|\n| 1 | 2 |\n")
    chunks = cut(text, "ch01-x.md")
    assert len(chunks) == 1 and chunks[0].text == text.strip() and chunks[0].warnings == []


# --- overflowing sections -------------------------------------------------------------------------------------

ABBREV_SENTENCES = [
    "Dr. Smith measured the arm with approx. 5 mm error.",
    "The result, e.g. the pose of the hand, follows from Fig. 3 directly.",
    "Version v1.2.3 of the solver runs at 3.2 kHz, i.e. fast enough.",
    "Compare frames vs. joints, etc. before you start.",
    "Call `chain.fk()` to get the pose.",
    "Is it unique? Yes! It always is.",
    "See No. 5 in the table for the limits.",
]


def test_overflowing_section_is_cut_only_at_sentence_ends() -> None:
    para = " ".join(ABBREV_SENTENCES * 3)
    text = f"## 4.1 Sentences\n\n{para}\n"
    ends = {text.index("## 4.1") + len("## 4.1 Sentences")}
    for s, e in sentence_spans(text, text.index(para), text.index(para) + len(para)):
        ends.add(e)
    for budget in (30, 45, 60, 90):
        chunks = assert_deterministic(text, "ch04-s.md", max_tokens=budget)
        assert len(chunks) > 1
        for c in chunks:
            assert c.end in ends, f"cut inside a sentence: …{c.text[-30:]!r}"
            assert c.tokens <= budget and not c.warnings
            assert not c.text.endswith(("Dr.", "approx.", "e.g.", "i.e.", "vs.", "etc.", "Fig.", "No."))
        assert [c.metadata["chunk_index"] for c in chunks] == list(range(len(chunks)))
        assert [c.metadata["chunk_id"] for c in chunks] == [f"ch04-s.md#ch4-s4.1-{i:03d}" for i in range(1, len(chunks) + 1)]
        assert all(c.metadata["url_anchor"] == "#41-sentences" for c in chunks)
        check_invariants(mkdoc(text, "ch04-s.md"), chunks, budget)


def test_greedy_packing_fills_chunks() -> None:
    para = " ".join(ABBREV_SENTENCES * 3)
    text = f"## 4.1 Sentences\n\n{para}\n"
    chunks = cut(text, "ch04-s.md", max_tokens=60)
    doc = mkdoc(text, "ch04-s.md")
    counter = get_tokenizer("cl100k_base").counter(doc)
    sentence_starts = [a for a, _ in sentence_spans(text, text.index(para), len(text))]
    for c, nxt in zip(chunks, chunks[1:]):
        # The next sentence would not have fitted: greedy packing never leaves room it could use.
        following = next(a for a in sentence_starts if a >= nxt.start)
        end_of_next = next(e for a, e in sentence_spans(text, following, len(text)))
        assert counter.count(c.start, end_of_next) > 60


# Items of two sentences wrapped over two lines: neither sentence nor line cuts match item boundaries.
LIST_ITEMS = [f"- Item {i} names a joint. It explains\n  why its limit matters for walking." for i in range(10)]


def test_long_list_is_split_at_item_boundaries() -> None:
    text = "## 5.1 Joints\n\nThe joints are:\n\n" + "\n".join(LIST_ITEMS) + "\n\nThat is all.\n"
    chunks = assert_deterministic(text, "ch05-j.md", max_tokens=70)
    assert len(chunks) > 2
    item_starts = {text.index(item) for item in LIST_ITEMS}
    item_ends = {text.index(item) + len(item) for item in LIST_ITEMS}
    first_list = text.index(LIST_ITEMS[0])
    last_list = text.index(LIST_ITEMS[-1]) + len(LIST_ITEMS[-1])
    for c in chunks:
        if first_list < c.start < last_list:
            assert c.start in item_starts, f"chunk starts inside an item: {c.text[:40]!r}"
        if first_list < c.end < last_list:
            assert c.end in item_ends, f"chunk ends inside an item: {c.text[-40:]!r}"
    # "The joints are:" introduces the list: it stays with the first item.
    assert any(c.text.startswith("## 5.1 Joints\n\nThe joints are:\n\n- Item 0") for c in chunks)
    check_invariants(mkdoc(text, "ch05-j.md"), chunks, 70)


def test_list_that_fits_stays_whole() -> None:
    filler = " ".join(f"Sentence {i} adds some words to make the section overflow its budget." for i in range(8))
    short_list = "- alpha\n- beta\n- gamma"
    text = f"## 5.2 Lists\n\n{filler}\n\n{short_list}\n\n{filler}\n"
    chunks = cut(text, "ch05-l.md", max_tokens=80)
    assert len(chunks) > 2
    assert sum(short_list in c.text for c in chunks) == 1


PY_DEFS = [
    "def rot_z(theta):\n    \"\"\"Rotation about z.\"\"\"\n    c, s = cos(theta), sin(theta)\n    return [[c, -s, 0], [s, c, 0], [0, 0, 1]]\n",
    "@dataclass\nclass Joint:\n    \"\"\"One revolute joint.\"\"\"\n    name: str\n    lower: float\n    upper: float\n",
    "# Forward kinematics of a chain of joints.\ndef chain_fk(joints, q):\n    pose = identity()\n    for j, qi in zip(joints, q):\n        pose = pose @ j.transform(qi)\n    return pose\n",
    "class SerialChain:\n    def __init__(self, joints):\n        self.joints = joints\n\n    def dof(self):\n        return len(self.joints)\n",
]


def test_code_is_split_at_top_level_def_and_class_with_their_decorators() -> None:
    # No blank lines between the definitions, one inside the class: blank-line cuts would go wrong.
    code = "```python\nimport math\n" + "".join(PY_DEFS) + "```"
    text = f"## 2.5 Module\n\nThe module:\n\n{code}\n\nThat is the module.\n"
    budget = max(count(d) for d in PY_DEFS) + 12
    assert count(code) > budget
    chunks = assert_deterministic(text, "ch02-m.md", max_tokens=budget)
    fence_start, fence_end = text.index("```python"), text.index("```", text.index("```python") + 3) + 3
    inside = [c for c in chunks if fence_start < c.start < fence_end]
    assert inside, "the fence was cut"
    for c in inside:
        assert c.text.startswith(("def ", "@dataclass", "# Forward", "class ")), c.text[:30]
        assert "split-fence" in c.warnings
        assert c.tokens <= budget
    # Methods inside the class are not top-level: the class stays whole.
    assert any("class SerialChain:" in c.text and "def dof(self):" in c.text for c in chunks)
    # The chunk holding the opening fence line is flagged too, and keeps the language tag with code.
    opener = next(c for c in chunks if c.start <= fence_start < c.end)
    assert "split-fence" in opener.warnings and "import math" in opener.text
    check_invariants(mkdoc(text, "ch02-m.md"), chunks, budget)


def test_code_block_that_fits_stays_whole() -> None:
    code = "```python\n" + PY_DEFS[0] + "```"
    filler = " ".join(f"Sentence {i} is prose that fills this section past its budget." for i in range(10))
    text = f"## 2.6 Small code\n\n{filler}\n\n{code}\n\n{filler}\n"
    budget = count(code) + 20
    chunks = cut(text, "ch02-c.md", max_tokens=budget)
    assert len(chunks) > 2
    assert sum(code in c.text for c in chunks) == 1
    assert not any(c.warnings for c in chunks)


def test_code_without_definitions_falls_back_to_blank_lines_then_lines() -> None:
    blocks = ["\n".join(f"let v{b}_{i} = compute({b}, {i});" for i in range(6)) for b in range(5)]
    code = "```rust\n" + "\n\n".join(blocks) + "\n```"
    text = f"## 3.3 Lets\n\n{code}\n"
    budget = count(blocks[0]) + 10
    chunks = cut(text, "ch03-l.md", max_tokens=budget)
    for c in chunks[1:]:
        assert c.text.startswith("let v") and c.text.split("\n")[0].endswith(";")
        assert c.tokens <= budget
    # Blank-line cuts come first: every chunk after the first starts a block of lets.
    assert all(re.match(r"let v\d_0 ", c.text) for c in chunks[1:])
    tiny = cut(text, "ch03-l.md", max_tokens=20)
    assert all(c.tokens <= 20 for c in tiny) and len(tiny) > len(chunks)
    # The heading stays with the opening fence line; every other chunk is whole lines of code.
    assert tiny[0].text == "## 3.3 Lets\n\n```rust"
    assert all(re.fullmatch(r"let v\d_\d = compute\(\d, \d\);(\n```)?", c.text) for c in tiny[1:])
    assert all("split-fence" in c.warnings for c in tiny)


EQUATION_SECTION = """## 3.4 Jacobian

The Jacobian maps joint velocities to the velocity of the hand. It is a matrix with one column per joint. \
Each column says how the hand moves when one joint turns. For a planar arm the matrix is small. \
Its entries are sines and cosines of the joint angles. The hand velocity is obtained by a product:

$$
\\dot{x} = J(\\theta)\\,\\dot{\\theta}
$$

Here J depends on the current angles, so it changes as the arm moves. When J loses rank the arm is singular. \
Near a singularity small hand motions need huge joint speeds. Controllers watch the determinant to avoid this. \
They slow down or change posture when it gets close to zero.
"""


def test_equation_stays_with_the_sentences_that_explain_it() -> None:
    text = EQUATION_SECTION
    m0 = text.index("$$")
    m1 = text.index("$$", m0 + 2) + 2
    before = "The hand velocity is obtained by a product:"
    after = "Here J depends on the current angles, so it changes as the arm moves."
    trio = count(text[text.index(before):text.index(after) + len(after)])
    fresh_starts = 0
    for budget in range(trio, trio + 80, 3):
        chunks = cut(text, "ch03-j.md", max_tokens=budget)
        holder = next(c for c in chunks if c.start <= m0 and m1 <= c.end)
        assert before in holder.text and after in holder.text, budget
        fresh_starts += holder.text.startswith(before)
        check_invariants(mkdoc(text, "ch03-j.md"), chunks, budget)
    # The bond did real work: for some budgets plain greedy packing would have cut right before the $$.
    assert fresh_starts > 0


def test_sentence_longer_than_the_limit_is_cut_at_words_and_flagged() -> None:
    words = " ".join(f"word{i}" for i in range(300))
    text = f"## 6.1 Long\n\nShort one. {words}. Short two.\n"
    chunks = cut(text, "ch06-x.md", max_tokens=50)
    flagged = [c for c in chunks if "oversize" in c.warnings]
    assert len(flagged) >= 5
    for c in chunks:
        assert c.tokens <= 50
        assert c.end == len(text) or text[c.end].isspace(), "cut between words"
    assert not any("oversize" in c.warnings for c in chunks if c.text == "Short two." or c.text.startswith("## 6.1"))
    check_invariants(mkdoc(text, "ch06-x.md"), chunks, 50)


def test_a_cut_too_long_for_its_budget_backs_off_to_a_space() -> None:
    """The step section-sentence and semantic share when a line alone is over the limit (`word_cut`)."""
    text = "alpha beta gamma\tdelta"
    end = len(text)
    assert word_cut(text, 0, 8, end) == 6  # inside "beta": back to its start
    assert word_cut(text, 0, 5, end) == 5  # on the space after "alpha": already a boundary
    assert word_cut(text, 6, 14, end) == 11  # a tab is a space too
    assert word_cut(text, 0, 3, end) == 3  # inside the first word: nothing to back off to, mid-word
    assert word_cut(text, 17, 20, end) == 20  # inside the last word, which starts the piece: mid-word
    assert word_cut(text, 17, 17, end) == 18  # nothing fits: one character, so the cutting moves on
    assert word_cut(text, 11, end, end) == end  # the piece's end is a boundary


def test_heading_inside_an_overflowing_section_never_ends_a_chunk() -> None:
    para = " ".join(f"Sentence number {i} keeps the section growing well past the small limit." for i in range(12))
    text = f"## 7.1 Outer\n\n{para}\n\n##### Deep heading\n\n{para}\n"
    for budget in range(40, 120, 7):
        chunks = cut(text, "ch07-h.md", max_tokens=budget)
        check_invariants(mkdoc(text, "ch07-h.md"), chunks, budget)
        holder = next(c for c in chunks if "##### Deep heading" in c.text)
        assert holder.text.rstrip().endswith("##### Deep heading") is False
        later = [c for c in chunks if c.start > text.index("##### Deep")]
        assert all(c.metadata["url_anchor"] == "#deep-heading" for c in later)


def test_link_reference_definitions_are_kept() -> None:
    para = " ".join(f"Sentence {i} refers to [the book][book] again and again." for i in range(12))
    text = f"## 8.1 Links\n\n{para}\n\n[book]: https://doc.rust-lang.org/book/\n[ref]: https://example.com/ref\n"
    chunks = cut(text, "ch08-l.md", max_tokens=60)
    assert chunks[-1].text.endswith("[ref]: https://example.com/ref")
    check_invariants(mkdoc(text, "ch08-l.md"), chunks, 60)


def test_admonition_and_blockquote_split_at_their_children() -> None:
    inner = "\n\n".join(f"Paragraph {i} of the note explains one more detail of the convention." for i in range(8))
    text = f"## 9.1 Notes\n\n:::note Conventions\n{inner}\n:::\n\n> " + "\n>\n> ".join(
        f"Quoted line {i} says something worth keeping." for i in range(8)) + "\n"
    chunks = cut(text, "ch09-n.md", max_tokens=60)
    check_invariants(mkdoc(text, "ch09-n.md"), chunks, 60)
    starts = {c.text.split("\n")[0] for c in chunks}
    assert any(s.startswith("Paragraph ") for s in starts)
    assert any(s.startswith("> Quoted line") for s in starts)
    assert not any("split-fence" in c.warnings for c in chunks)


def test_a_container_with_one_child_is_cut_the_child_s_way() -> None:
    quote = "> Note: " + "\n> ".join(f"Quoted sentence {i} wraps over a line break. It ends here." for i in range(10))
    text = f"## 9.2 Quote\n\n{quote}\n"
    chunks = cut(text, "ch09-q.md", max_tokens=50)
    assert len(chunks) > 2
    assert all(c.text.endswith("here.") for c in chunks), "cut at sentences, not at the quote's lines"
    code = "```python\n" + "\n\n".join(PY_DEFS) + "```"
    item = "- The module:\n\n" + "\n".join("  " + line if line else "" for line in code.split("\n"))
    text = f"## 9.3 Listed code\n\n{item}\n"
    budget = max(count(d) for d in PY_DEFS) + 12
    chunks = cut(text, "ch09-c.md", max_tokens=budget)
    check_invariants(mkdoc(text, "ch09-c.md"), chunks, budget)
    # list → its one item → the item's paragraph and fence → the fence at its top-level definitions.
    assert [c.text.split("\n")[0] for c in chunks] == [
        "## 9.3 Listed code", "```python", "@dataclass", "# Forward kinematics of a chain of joints.",
        "class SerialChain:"]
    assert chunks[1].text.split("\n")[1] == "  def rot_z(theta):"


def test_an_unclosed_fence_at_the_end_is_not_reported_as_split() -> None:
    para = " ".join(f"Sentence {i} fills the section up." for i in range(30))
    text = f"## 1.1 Open fence\n\n{para}\n\n```python\nx = 1\ny = 2\n\n\n\n"
    chunks = cut(text, "ch01-u.md", max_tokens=60)
    assert chunks[-1].text.endswith("```python\nx = 1\ny = 2")
    assert not any(c.warnings for c in chunks)


def test_crlf_documents() -> None:
    para = " ".join(f"Line {i} of a Windows file." for i in range(30))
    text = f"# Title\r\n\r\nIntro.\r\n\r\n## 1.1 Part\r\n\r\n{para}\r\n\r\n- a\r\n- b\r\n"
    chunks = cut(text, "ch01-crlf.md", max_tokens=40)
    check_invariants(mkdoc(text, "ch01-crlf.md"), chunks, 40)
    assert chunks[0].text == "# Title\r\n\r\nIntro."


def test_limits_params_and_registry() -> None:
    s = get_strategy("section-sentence")
    assert isinstance(s, SectionSentenceStrategy) and s.seed == "000"
    assert s.limits() == Limits("cl100k_base", 512, 50)
    assert get_strategy("section-sentence", max_tokens=256, min_tokens=20, encoding="o200k_base").limits() == \
        Limits("o200k_base", 256, 20)
    assert s.required_metadata == ("chapter", "section", "url_anchor")
    assert s.citation_template.format(**cut(DOC)[1].metadata) == "Chapter 3, Section 3.1"
    # A minimum above the maximum cannot be met: lint gets it capped.
    assert get_strategy("section-sentence", max_tokens=40).limits() == Limits("cl100k_base", 40, 40)
    with pytest.raises(ParamError):
        get_strategy("section-sentence", encoding="words")


def test_o200k_budget_is_held_in_its_own_tokenizer() -> None:
    para = " ".join(ABBREV_SENTENCES * 4)
    chunks = get_strategy("section-sentence", max_tokens=40, encoding="o200k_base").chunk(
        mkdoc(f"## 1.1 X\n\n{para}\n", "ch01-o.md"))
    o200k = get_tokenizer("o200k_base")
    assert all(o200k.count(c.text) == c.tokens <= 40 for c in chunks)


# --- properties on generated Markdown -------------------------------------------------------------------------

_WORD = st.sampled_from(
    ["joint", "arm", "Dr.", "e.g.", "3.2", "v1.2.3", "`a.b()`", "θ₁", "ℓ", "naïve", "日本語", "Ω", "x", "pose",
     "https://ex.com/a?b=1", "(see", "it)", "etc.", "No.", "5", "*bold*", "Fig."]
)
_SENTENCE = st.builds(lambda ws, end: " ".join(ws).capitalize() + end,
                      st.lists(_WORD, min_size=1, max_size=14), st.sampled_from([".", "?", "!", ":", "..."]))
_PARAGRAPH = st.builds(lambda ss, sep: sep.join(ss), st.lists(_SENTENCE, min_size=1, max_size=7),
                       st.sampled_from([" ", "\n"]))
_HEADING = st.builds(lambda lvl, ws: "#" * lvl + " " + " ".join(ws), st.integers(1, 4),
                     st.lists(_WORD, min_size=1, max_size=5))
_CODE_LINE = st.sampled_from(
    ["def f(x):", "    return x", "# a comment, not a heading", "## also a comment", "", "class A:", "    pass",
     "@decorator", "fn main() {", "}", "impl Foo {", "    let y = 1;", "x = [1, 2, 3]", "#[derive(Debug)]"]
)
_FENCE = st.builds(lambda lines, lang: f"```{lang}\n" + "\n".join(lines) + "\n```",
                   st.lists(_CODE_LINE, min_size=1, max_size=30), st.sampled_from(["python", "rust", ""]))
_LIST = st.builds(lambda items: "\n".join(f"- {s}" for s in items), st.lists(_SENTENCE, min_size=1, max_size=8))
_MATH = st.builds(lambda ws: "$$\n" + " + ".join(ws) + "\n$$", st.lists(st.sampled_from(["x", "y^2", "\\theta"]),
                                                                      min_size=1, max_size=6))
# Quotes and list items may hold headings: a section boundary then falls inside a block.
_QUOTE = st.builds(lambda ss: "> " + "\n> ".join(ss), st.lists(st.one_of(_SENTENCE, _HEADING), min_size=1, max_size=4))
_ITEM_HEADING = st.builds(lambda h, ss: f"- {h}\n\n  " + "\n  ".join(ss), _HEADING, st.lists(_SENTENCE, max_size=4))
_BLOCK = st.one_of(_HEADING, _PARAGRAPH, _PARAGRAPH, _FENCE, _LIST, _MATH, _QUOTE, _ITEM_HEADING)

#: Generated Markdown documents (also used by tests/test_section.py).
MARKDOWN_DOCS = st.builds(
    lambda fm, blocks, seps: (fm + "".join(b + s for b, s in zip(blocks, seps))),
    st.sampled_from(["", "---\ntitle: Generated\n---\n"]),
    st.lists(_BLOCK, min_size=1, max_size=14),
    st.lists(st.sampled_from(["\n\n", "\n\n\n", "\n \n"]), min_size=14, max_size=14),
)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(MARKDOWN_DOCS, st.integers(8, 300), st.integers(2, 6))
def test_properties_on_generated_markdown(text: str, budget: int, levels: int) -> None:
    path = "ch07-03-generated.md"
    chunks = assert_deterministic(text, path, max_tokens=budget, boundary_levels=levels)
    doc = mkdoc(text, path)
    check_invariants(doc, chunks, budget)
    # The per-section index restarts at 0 and counts up by one.
    for prev, c in zip(chunks, chunks[1:]):
        assert c.metadata["chunk_index"] in (0, prev.metadata["chunk_index"] + 1)
    for c in chunks:
        assert c.metadata["chapter"] == 7


# --- real documents -------------------------------------------------------------------------------------------


def _check_tree(root: Path) -> int:
    tree = load_docs(root)
    strategy = get_strategy("section-sentence")
    n = 0
    for doc in tree:
        chunks = strategy.chunk(doc)
        check_invariants(doc, chunks, 512)
        n += len(chunks)
    return n


@pytest.mark.corpus
def test_rust_book_corpus(corpus: Path) -> None:
    """Every file of the Rust book (the conftest fixture skips with the reason when the corpus is absent)."""
    assert _check_tree(corpus) > 500


def test_sample_docs() -> None:
    if not SAMPLE_DOCS.is_dir():
        pytest.skip("sample_docs/ is not in this checkout")
    assert _check_tree(SAMPLE_DOCS) > 0
    long_py = SAMPLE_DOCS / "module-1-foundations" / "02-forward-kinematics.md"
    if long_py.is_file():
        # README-FEATURES: one Python block of ~1500 tokens with ten top-level defs/classes. Every chunk that
        # starts inside it starts at a top-level definition (or the comment/decorator right above one).
        doc = load_docs(long_py).documents[0]
        fence = max((b for b in doc.structure.blocks if b.kind == "fence" and b.language == "python"),
                    key=lambda b: b.end - b.start)
        inside = [c for c in get_strategy("section-sentence").chunk(doc) if fence.start < c.start < fence.end]
        assert inside
        for c in inside:
            assert re.match(r"(def |class |@|if __name__|#)", c.text), c.text[:40]
            assert "split-fence" in c.warnings and c.tokens <= 512
