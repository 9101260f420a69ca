"""Book numbering read from headings, paths, titles and front matter: chapter, section, subsection, chapter id, week.

The fixture `tests/fixtures/textbook` is shaped like the Docusaurus textbook these rules were found on:
``module-N/N.M-topic/…`` folders, module overview and intro pages, an assessment page with list-style numbered
headings, week pages, and ``1.1.1`` headings.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from chunkscope import get_strategy
from chunkscope.document.loader import Document, load_docs, split_front_matter
from chunkscope.site.numbering import doc_numbering
from chunkscope.site.numbering import heading_number

TEXTBOOK = Path(__file__).parent / "fixtures" / "textbook" / "docs"


def doc_of(text: str, path: str) -> Document:
    fm, body, _ = split_front_matter(text)
    return Document(path=path, text=text, front_matter=fm, body_start=body)


@pytest.fixture(scope="module")
def book():
    return load_docs(TEXTBOOK)


def section_rows(doc: Document) -> list[tuple[str, str | None, str | None]]:
    """(first line, section, subsection) of every section-sentence chunk."""
    chunks = get_strategy("section-sentence").chunk(doc)
    return [(c.text.split("\n", 1)[0], c.metadata["section"], c.metadata["subsection"]) for c in chunks]


# --- section and subsection from the heading's own number -----------------------------------------------------


def test_a_three_part_heading_number_is_a_subsection_whatever_its_level(book) -> None:
    rows = section_rows(book.get("module-1/1.1-basics/overview.md"))
    assert rows == [
        ("# Basics Overview", "1.1", None),
        ("## 1.1.1 Frames", "1.1", "1.1.1"),
        ("## 1.1.2 Rotations", "1.1", "1.1.2"),
        ("### Rotation matrices", "1.1", "1.1.2"),
    ]


def test_list_style_numbers_on_a_page_without_chapter_numbering_are_no_section_numbers(book) -> None:
    doc = book.get("module-1/assessment.md")
    assert doc_numbering(doc).chapter is None
    assert all(sec is None and sub is None for _, sec, sub in section_rows(doc)), section_rows(doc)


def test_a_single_number_on_a_numbered_chapter_page_is_its_section_number() -> None:
    doc = doc_of("# Chapter 3: Kinematics\n\nIntro.\n\n## 1. Frames\n\nText.\n\n### 1.1 Axes\n\nMore.\n", "ch03-kinematics.md")
    assert section_rows(doc) == [("# Chapter 3: Kinematics", None, None), ("## 1. Frames", "1", None),
                                 ("### 1.1 Axes", "1.1", None)]


def test_a_single_number_is_no_section_where_the_path_already_numbers_the_section() -> None:
    # The page is section 3.2 by its file name: "## 1. Setup" numbers a step of it, not section 1.
    doc = doc_of("## 1. Setup\n\nText.\n", "ch03-02-data-types.md")
    assert section_rows(doc) == [("## 1. Setup", "3.2", None)]


def test_an_explicit_section_keyword_is_a_section_number_anywhere() -> None:
    doc = doc_of("# Notes\n\nIntro.\n\n## Section 2: Loops\n\nText.\n", "notes.md")
    assert section_rows(doc)[1] == ("## Section 2: Loops", "2", None)


def test_heading_number_keeps_the_number_as_written() -> None:
    assert heading_number("1.1.1 Frames") == "1.1.1"
    assert heading_number("1. Technical Implementation (40%)") == "1"
    assert heading_number("Section 2: Loops") == "2"
    assert heading_number("Week 1 Exercises: Frames") is None


def test_a_three_part_folder_number_is_a_subsection() -> None:
    n = doc_numbering(doc_of("# T\n", "module-1/1.2.3-details/page.md"))
    assert (n.chapter, n.section, n.subsection) == (1, "1.2", "1.2.3")
    doc = doc_of("# T\n\nText.\n", "module-1/1.2.3-details/page.md")
    assert section_rows(doc) == [("# T", "1.2", "1.2.3")]


# --- chapters, chapter ids ------------------------------------------------------------------------------------


def test_a_module_overview_takes_the_module_number_when_the_module_numbers_its_topics_by_it(book) -> None:
    one = doc_numbering(book.get("module-1/index.md"))
    assert (one.chapter, one.module_number) == (1, 1)
    assert one.chapter_id == doc_numbering(book.get("module-1/1.1-basics/overview.md")).chapter_id


def test_a_module_overview_whose_chapters_are_numbered_across_the_book_takes_no_chapter(sample_docs: Path) -> None:
    # sample_docs' module 2 holds chapters 3 and 4: calling its overview "chapter 2" would mislead a citation.
    tree = load_docs(sample_docs)
    assert doc_numbering(tree.get("module-2-motion/index.md")).chapter is None


def test_chapter_ids_are_unique_across_modules(book) -> None:
    ids = {d.path: doc_numbering(d).chapter_id for d in book}
    assert ids["module-1/intro.md"] != ids["module-2/intro.md"]
    assert ids["module-1/capstone-project.md"] != ids["module-2/capstone-project.md"]
    assert ids["intro.md"] == "intro"
    assert ids["module-1/intro.md"] == "module-1/intro"
    assert ids["module-2/2.1-kinematics/forward-kinematics.md"] == "module-2/ch02"
    # One chapter, one id: every page of module 1's chapter shares it.
    assert ids["module-1/1.1-basics/forward-kinematics.md"] == ids["module-1/1.2-motion/exercises.md"] == "module-1/ch01"
    # Chapter ids of different chapters never meet.
    by_id: dict[str, set] = {}
    for d in book:
        by_id.setdefault(ids[d.path], set()).add((doc_numbering(d).module, doc_numbering(d).chapter))
    assert all(len(v) == 1 for v in by_id.values()), by_id


def test_chapter_id_filter_keeps_to_one_module(book) -> None:
    chunks = [c for d in book for c in get_strategy("recursive").chunk(d)]
    picked = {c.path for c in chunks if c.metadata["chapter_id"] == "module-1/intro"}
    assert picked == {"module-1/intro.md"}


# --- weeks ------------------------------------------------------------------------------------------------------


def test_week_from_front_matter_title_and_path(book) -> None:
    weeks = {d.path: doc_numbering(d).week for d in book}
    assert weeks["module-1/week-1-exercises.md"] == 1          # file name
    assert weeks["module-1/1.2-motion/exercises.md"] == 2      # front matter title "Week 2 Exercises: Motion"
    assert weeks["module-2/week3/practice.md"] == 3            # folder "week3"
    assert weeks["module-2/intro.md"] == 4                      # front matter week_number
    assert weeks["module-1/intro.md"] is None


@pytest.mark.parametrize(("path", "text", "week"), [
    ("Week 5/notes.md", "# Notes\n", 5),
    ("module-1/exercises-week-6.md", "# Exercises\n", 6),
    ("module-1/labs.md", "# Week 7 Lab: Sensors\n", 7),
    ("module-1/labs.md", "---\nweek: 8\n---\n# Week 7 Lab\n", 8),
    ("module-1/weekend.md", "# Weekend reading\n", None),
    ("module-1/labs.md", "# Labs for every week\n", None),
])
def test_week_number_forms(path: str, text: str, week: int | None) -> None:
    assert doc_numbering(doc_of(text, path)).week == week


def test_week_number_reaches_the_recursive_metadata(book) -> None:
    chunks = get_strategy("recursive").chunk(book.get("module-1/1.2-motion/exercises.md"))
    assert {c.metadata["week_number"] for c in chunks} == {2}


# --- what numbers and what only orders ---------------------------------------------------------------------------


@pytest.mark.parametrize(("path", "text", "chapter", "section"), [
    ("03-setup.md", "# Setup\n", None, None),                        # a sidebar prefix orders, it numbers nothing
    ("01-basics/02-setup.md", "# Setup\n", None, None),
    ("1.basics.md", "# Basics\n", None, None),                       # "1." is a Docusaurus prefix too
    ("2021-01-31-changelog.md", "# Changelog\n", None, None),        # a date is no chapter
    ("ch03-02-data-types.md", "# Data Types\n", 3, "3.2"),           # chNN names declare
    ("chapter-4.md", "# Motion\n", 4, None),
    ("02-forward.md", "# Chapter 2: Forward Kinematics\n", 2, None),  # the title declares
    ("02-forward.md", "---\ntitle: 'Chapter 5: Legs'\n---\nText.\n", 5, None),
    ("02-forward.md", "---\nchapter: 7\n---\n# Legs\n", 7, None),      # front matter declares
    ("guides/1.2-motion/page.md", "# Page\n", 1, "1.2"),            # a dotted topic number declares
    ("02-intro.md", "# 1. Introduction\n", None, None),              # a list-style H1 number is no chapter
])
def test_numbers_come_only_from_what_declares_them(path: str, text: str, chapter: int | None,
                                                    section: str | None) -> None:
    n = doc_numbering(doc_of(text, path))
    assert (n.chapter, n.section) == (chapter, section)


def test_a_page_without_a_chapter_is_named_by_its_folder_never_shared_across_sections() -> None:
    pages = {p: doc_numbering(doc_of("# T\n", p)).chapter_id for p in (
        "01-basics/03-limits.md", "01-basics/04-more.md", "02-advanced/03-limits.md",
        "02-advanced/tuning/01-cache.md", "03-faq.md")}
    assert pages == {"01-basics/03-limits.md": "01-basics", "01-basics/04-more.md": "01-basics",
                     "02-advanced/03-limits.md": "02-advanced", "02-advanced/tuning/01-cache.md": "02-advanced/tuning",
                     "03-faq.md": "03-faq"}
