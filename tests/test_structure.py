"""Markdown structure: exact block offsets, outline, anchors, numbering and routes."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings, strategies as st

from chunkscope.document.loader import Document, decode_document, load_docs
from chunkscope.site.numbering import doc_numbering
from chunkscope.site.urls import doc_route
from chunkscope.document.structure import line_starts_of, slugify
from chunkscope.site.numbering import heading_number

DOC = """---
title: Kinematics
---
# 3 Kinematics

Intro text.

## 3.1 Frames {#frames}

:::note Remember
- one
- two
:::

The position is:

$$
x = l_1 \\cos\\theta
$$

```bash
# not a heading
echo hi
```

| a | b |
|---|---|
| 1 | 2 |

import Tabs from '@theme/Tabs';

<Tabs>
</Tabs>

## Example

### Example

## Example
"""


def doc_of(text: str, path: str = "ch03-02-kinematics.md") -> Document:
    d, problems = decode_document(text.encode(), path)
    assert d is not None and not problems
    return d


def test_blocks_have_exact_offsets_and_lines() -> None:
    d = doc_of(DOC)
    st_ = d.structure
    kinds = [b.kind for b in st_.blocks if b.depth == 0]
    assert kinds == ["front_matter", "heading", "paragraph", "heading", "admonition", "paragraph", "math", "fence",
                     "table", "mdx_esm", "jsx", "heading", "heading", "heading"]
    lines = d.text.split("\n")
    for b in st_.blocks:
        # A block's text is its lines (less indentation), and its line numbers match its offsets.
        assert st_.line_of(b.start) == b.start_line
        assert st_.line_of(b.end - 1) == b.end_line if b.end > b.start else True
        assert d.text[b.start:b.end] == "\n".join(lines[b.start_line - 1:b.end_line]).lstrip(" \t")
    adm = next(b for b in st_.blocks if b.kind == "admonition")
    assert d.text[adm.start:adm.end].endswith(":::") and adm.info == "note Remember"
    fence = next(b for b in st_.blocks if b.kind == "fence")
    assert fence.language == "bash"


def test_hash_in_fence_is_not_a_heading_and_outline_is_right() -> None:
    d = doc_of(DOC)
    hs = d.structure.headings
    assert [h.text for h in hs] == ["3 Kinematics", "3.1 Frames", "Example", "Example", "Example"]
    assert [h.anchor for h in hs] == ["3-kinematics", "frames", "example", "example-1", "example-2"]
    assert hs[1].number == "3.1" and hs[0].number == "3"
    assert hs[3].path == ("3 Kinematics", "Example", "Example")
    code_at = d.text.index("# not a heading")
    assert d.structure.heading_path_at(code_at) == ["3 Kinematics", "3.1 Frames"]
    assert d.structure.section_end(hs[1]) == hs[2].start


def test_corpus_extern_crate_lines_are_code(corpus: Path) -> None:
    tree = load_docs(corpus)
    seen = 0
    for d in tree.documents:
        for h in d.structure.headings:
            assert not h.text.startswith("extern crate"), (d.path, h.line)
        seen += d.text.count("# extern crate")
    assert seen > 0  # the corpus really has such lines


def test_slugger_matches_github() -> None:
    assert slugify("Hello, World!") == "hello-world"
    assert slugify("The `Option` Enum and Its Advantages") == "the-option-enum-and-its-advantages"
    assert slugify("What’s new in 2.0?") == "whats-new-in-20"
    assert slugify("Größe  und θ") == "größe--und-θ"


def test_heading_number_forms() -> None:
    assert heading_number("3.2 Forward Kinematics") == "3.2"
    assert heading_number("Chapter 3: Motion") == "3"
    assert heading_number("2024 Roadmap") is None or heading_number("2024 Roadmap") == "2024"
    assert heading_number("Forward Kinematics") is None


def test_numbering_and_routes() -> None:
    d = doc_of(DOC, "ch03-02-kinematics.md")
    n = doc_numbering(d)
    assert (n.chapter, n.section, n.chapter_id, n.chapter_title) == (3, "3.2", "ch03", "Kinematics")
    d2 = doc_of("---\nweek: 4\n---\n# T\n", "module-4/4.1-humanoid-fundamentals/intro.md")
    n2 = doc_numbering(d2)
    assert n2.module == "module-4" and n2.module_number == 4 and n2.chapter == 4 and n2.section == "4.1" and n2.week == 4
    # Docusaurus keeps the version-like "4.1-" (tests/test_site_routes.py, checked against a real build); an index
    # page's route is its folder's, with a trailing slash.
    assert doc_route(d2) == "/module-4/4.1-humanoid-fundamentals/intro"
    assert doc_route(doc_of("# x", "guide/01-basics/index.md")) == "/guide/basics/"
    # A bare "03-" prefix orders the sidebar and numbers no chapter: the page is named by its folder. A chapter
    # folder that says so ("ch03-frames") numbers its index page; a module's overview page takes no chapter (its
    # module number is no chapter number, and "Chapter 2" next to the real chapter 2 would mislead a citation).
    bare = doc_numbering(doc_of("# x", "guide/03-frames/index.md"))
    assert (bare.chapter, bare.chapter_id) == (None, "guide/03-frames")
    assert doc_numbering(doc_of("# x", "guide/ch03-frames/index.md")).chapter == 3
    overview = doc_numbering(doc_of("# Module 2: Motion\n", "module-2-motion/index.md"))
    assert (overview.chapter, overview.module_number, overview.chapter_id) == (None, 2, "module-2-motion")
    assert doc_route(doc_of("---\nslug: /custom\n---\n# x", "a/b.md")) == "/custom"
    assert doc_route(doc_of("---\nid: renamed\n---\n# x", "a/02-b.md")) == "/a/renamed"


def test_sample_docs_structure(sample_docs: Path) -> None:
    tree = load_docs(sample_docs)
    assert not tree.problems
    anchors = {h.anchor for d in tree.documents for h in d.structure.headings}
    assert "dh-params" in anchors
    kinds = {b.kind for d in tree.documents for b in d.structure.blocks}
    assert {"admonition", "math", "table", "fence", "mdx_esm", "jsx", "list"} <= kinds


@given(st.lists(st.sampled_from(["a", " ", "\n", "\r\n", "\r", "# ", "```", "- ", "$$", ":::"]), max_size=80).map("".join))
@settings(max_examples=200, deadline=None)
def test_line_table_agrees_with_markdown_line_breaks(text: str) -> None:
    starts = line_starts_of(text)
    assert len(starts) == len(text.replace("\r\n", "\n").replace("\r", "\n").split("\n"))
    d = doc_of(text, "x.md")
    for b in d.structure.blocks:
        assert 0 <= b.start <= b.end <= len(text)
        assert 1 <= b.start_line <= b.end_line <= len(starts)
