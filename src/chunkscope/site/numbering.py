"""Book numbering: chapter, section, subsection, module and week of a page, and the section under each heading.

Numbers come only from what declares them: front matter, ``chNN``-style names (the Rust book's ``ch03-02-…``),
dotted ``N.M`` topic names (``module-1/1.2-motion/``), ``Chapter N`` and ``Week N`` titles, ``module-N`` and
``week-N`` folders. A bare ``NN-`` prefix only orders Docusaurus' sidebar (`chunkscope.site.order`): it numbers
nothing, and a page without a chapter is named by its folder (`Numbering.chapter_id`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, Protocol


# What numbering reads of a document, as protocols: the site layer sits below the documents (the loader sorts
# files by `chunkscope.site.order`, the analysis caches this module's results), so it names no document type.

class NumberedHeading(Protocol):
    """A heading as numbering reads it (`chunkscope.document.structure.Heading` is one)."""

    @property
    def level(self) -> int: ...

    @property
    def text(self) -> str: ...

    @property
    def number(self) -> str | None: ...

    @property
    def index(self) -> int: ...


class _Outline(Protocol):
    @property
    def headings(self) -> Sequence[NumberedHeading]: ...


class _Analysis(Protocol):
    @property
    def numbering(self) -> "Numbering": ...

    @property
    def section_numbers(self) -> "SectionNumbers": ...


class Page(Protocol):
    """A document as numbering reads it (`chunkscope.document.loader.Document` is one)."""

    @property
    def path(self) -> str: ...

    @property
    def front_matter(self) -> Mapping[str, Any]: ...

    @property
    def source(self) -> Path | None: ...

    @property
    def outline(self) -> _Outline: ...

    @property
    def analysis(self) -> _Analysis: ...


# --- numbering ---------------------------------------------------------------------------------------------

# A heading's number as written: "3.2 Forward Kinematics", "Chapter 3: Motion", "1. Setup", "Section 2 - Loops".
_HEADING_NUMBER = re.compile(r"^(?:(chapter|section|part)\s+)?(\d+(?:\.\d+)*)\.?(?:\s*[:\-–—]\s*|\s+)(?=\S)", re.I)
# A name that declares its numbers: a keyword ("ch03-02-data-types", "chapter-3", "part2", "lesson-4")...
_NAMED_NUMBERS = re.compile(r"^(?:ch(?:apter)?|part|lesson|sec(?:tion)?)[-_ ]?(\d+(?:[-_.]\d+)*)(?=$|[-_ .])", re.I)
# ...or a dotted number ("1.2-motion", "10.2.3-deep-dive"), which Docusaurus keeps in the route: a book's own
# numbering. A bare "03-" is no number of either kind: it orders the sidebar and is stripped from the route.
_DOTTED_NUMBERS = re.compile(r"^(\d+(?:\.\d+)+)(?=$|[-_ ])")
# "Chapter 3: Kinematics" as a page's title (front matter or H1).
_CHAPTER_TITLE = re.compile(r"^\s*chapter[-_ ]?(\d+)\b", re.I)
_MODULE_SEGMENT = re.compile(r"^module[-_ ]?(\d+)", re.I)
# "week-3", "week3", "Week 3", "exercises-week-3": a week number in a file or folder name.
_WEEK_SEGMENT = re.compile(r"(?:^|[-_ ])week[-_ ]?(\d+)(?=$|[-_ .])", re.I)
# "Week 1 Exercises: Frames", "Homework for week 2": a week number in a title.
_WEEK_TITLE = re.compile(r"\bweek[-_ ]?(\d+)\b", re.I)


def heading_number(text: str) -> str | None:
    """``"3.2 Forward Kinematics"`` → ``"3.2"``; ``"Chapter 3: Motion"`` → ``"3"``; ``"1. Setup"`` → ``"1"``.

    The number as written (the parse keeps it as ``Heading.number``): what it numbers (a chapter, a section, a
    step of a list) is `section_numbers`' call, which also reads the keyword from `heading_keyword`.
    """
    m = _HEADING_NUMBER.match(text)
    return m.group(2) if m else None


def heading_keyword(text: str) -> str | None:
    """The word that names a heading's number: ``"Section 2: Loops"`` → ``"section"`` (chapter, section, part)."""
    m = _HEADING_NUMBER.match(text)
    return m.group(1).lower() if m and m.group(1) else None


def _numbers_of(name: str) -> tuple[int, ...]:
    """The numbers a file or folder name declares (`_NAMED_NUMBERS`, `_DOTTED_NUMBERS`); none for ``03-setup``."""
    m = _NAMED_NUMBERS.match(name) or _DOTTED_NUMBERS.match(name)
    if not m:
        return ()
    return tuple(int(x) for x in re.split(r"[-_.]", m.group(1)) if x)


def _week_named(name: str) -> int | None:
    m = _WEEK_SEGMENT.search(name)
    return int(m.group(1)) if m else None


def _is_week_name(name: str) -> bool:
    """A name that starts with its week (``week-3``, ``week3-labs``): a week's folder or page, not a chapter."""
    m = _WEEK_SEGMENT.search(name)
    return m is not None and m.start() == 0


@dataclass(frozen=True, slots=True)
class Numbering:
    """Where a document sits in the book, from its front matter, path and title.

    ``section`` and ``subsection`` are the page's own (from front matter or its path); a heading's number refines
    them for the text under it (`section_numbers`). ``chapter_id`` names the chapter across the whole tree: inside
    a ``module-N`` folder it is qualified by that folder (``module-1/intro``, ``module-2/ch02``).
    """

    chapter: int | None
    section: str | None
    chapter_id: str
    chapter_title: str
    module: str | None
    module_number: int | None
    week: int | None
    subsection: str | None = None


def _as_int(v: Any) -> int | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, str) and v.strip().isdigit():
        return int(v)
    return None


def _dotted(nums: tuple[int, ...]) -> tuple[str | None, str | None]:
    """(section, subsection) of a path number: ``(3, 2)`` → ``("3.2", None)``, ``(1, 2, 3)`` → ``("1.2", "1.2.3")``."""
    if len(nums) < 2:
        return None, None
    joined = ".".join(str(n) for n in nums)
    if len(nums) == 2:
        return joined, None
    return ".".join(str(n) for n in nums[:2]), joined


def _module_numbers_its_topics(doc: Page, module_number: int) -> bool:
    """Whether the module folder holding ``doc`` numbers its entries ``N.M`` by its own number N (the
    ``module-1/1.1-topic`` scheme): then its overview page belongs to chapter N.

    Read from the folder on disk, never from the documents loaded, so a single file and the whole tree agree; a
    document that came from no file (``Document.from_text``) has no folder to read and gets no chapter this way.
    """
    if doc.source is None:
        return False
    try:
        names = [e.name for e in os.scandir(doc.source.parent)]
    except OSError:
        return False
    return any(len(n) >= 2 and n[0] == module_number for n in map(_numbers_of, names))


def _chapter_id(chapter: int | None, stem: str, module_folder: str | None, folder: str) -> str:
    """``ch03`` (seed 002's form) or the page's name, qualified by its module folder when it has one: modules often
    repeat page names (``intro``, ``capstone-project``) and number their chapters afresh, and an id that mixes two
    modules would make a ``chapter_id`` filter return pages of both. Outside a module, a page with no chapter is
    named by its folder path (``03-sensors``, ``guides/setup``): the pages of one folder share it, pages of two
    folders never do; a page at the root is named by itself."""
    if chapter is None and module_folder is None:
        return folder or stem
    base = f"ch{chapter:02d}" if chapter is not None else stem
    if module_folder is None or base == module_folder:
        return base  # a module's own overview page is named by the module folder already
    return f"{module_folder}/{base}"


def doc_numbering(doc: Page) -> Numbering:
    """Chapter and section numbers, chapter id, module and week of a document, worked out once per document
    (`Analysis.numbering`) by `compute_numbering`'s rules."""
    return doc.analysis.numbering


def compute_numbering(doc: Page) -> Numbering:
    """Chapter and section numbers, chapter id, module and week of a document (uncached: see `doc_numbering`).

    Sources, first found wins: front matter (``chapter``, ``section``, ``week``/``week_number``, ``module``),
    the file name (``ch03-02-data-types.md`` → chapter 3, section 3.2; ``02-forward.md`` numbers nothing: its
    prefix only orders the sidebar), folder names (``module-4/4.1-humanoid/…``; a three-part number such as
    ``1.2.3-x`` is a subsection), then the title (``# Chapter 3: Kinematics``, front matter or H1). A module's overview page (``module-1/index.md``) takes the module's
    number as its chapter only when the module numbers its topics by it (``module-1/1.1-…``). The week comes from
    front matter, then the file and folder names (``week-3``, ``week3``, ``Week 3``), then the title
    (``Week 1 Exercises: …``).
    """
    fm = doc.front_matter
    parts = PurePosixPath(doc.path).parts
    stem = PurePosixPath(doc.path).stem
    overview = stem.lower() in ("index", "readme") and len(parts) > 1
    if overview:
        stem = parts[-2]
    # A module's or a week's overview page (module-2-motion/index.md) is numbered by its module or week, which
    # the folder loop below reads: its number is no chapter number.
    nums = () if _MODULE_SEGMENT.match(stem) or _is_week_name(stem) else _numbers_of(stem)
    folder_nums: tuple[int, ...] = ()
    module_folder = None
    module_number = None
    for seg in parts[:-1]:
        mm = _MODULE_SEGMENT.match(seg)
        if mm:
            module_folder, module_number = seg, int(mm.group(1))
            continue
        if _is_week_name(seg):
            continue
        n = _numbers_of(seg)
        if n:
            folder_nums = n
    module = str(fm["module"]) if isinstance(fm.get("module"), (str, int)) else module_folder
    heads = doc.outline.headings
    h1 = next((h for h in heads if h.level == 1), None)
    first = heads[0] if heads else None
    title = str(fm.get("title") or (h1.text if h1 else "") or (first.text if first else "") or stem)
    chapter = _as_int(fm.get("chapter"))
    if chapter is None and nums:
        chapter = nums[0]
    if chapter is None and folder_nums:
        chapter = folder_nums[0]
    if chapter is None and h1 and h1.number and heading_keyword(h1.text) == "chapter":
        chapter = int(h1.number.split(".")[0])
    if chapter is None and (m := _CHAPTER_TITLE.match(title)):
        chapter = int(m.group(1))
    if (chapter is None and overview and module_number is not None and stem == module_folder
            and _module_numbers_its_topics(doc, module_number)):
        chapter = module_number
    section = fm.get("section")
    section = str(section) if section is not None else None
    subsection = None
    if section is None:
        section, subsection = _dotted(nums) if len(nums) > 1 else _dotted(folder_nums)
    week = _as_int(fm.get("week_number", fm.get("week")))
    if week is None:
        # The file's own name first, then its folders from the innermost out, then the title.
        week = next((w for w in map(_week_named, (PurePosixPath(doc.path).stem, *reversed(parts[:-1])))
                     if w is not None), None)
    if week is None and (m := _WEEK_TITLE.search(title)):
        week = int(m.group(1))
    chapter_id = _chapter_id(chapter, stem, module_folder, "/".join(parts[:-1]))
    return Numbering(chapter, section, chapter_id, title, module, module_number, week, subsection)


@dataclass(frozen=True, slots=True)
class SectionNumbers:
    """The (section, subsection) the text under each heading of a document belongs to.

    The rule, from the heading's own number (``heading_number``), else inherited from the enclosing heading,
    else the page's own (`Numbering`):

    * three parts or more (``1.1.1 Frames``) is a subsection, its first two parts the section, whatever the
      heading's level (a book may number ``## 1.1.1``);
    * two parts (``3.2 Inverse Kinematics``) is a section (and ends the subsection above it);
    * ``Section 2: …`` is section 2;
    * a single number (``1. Technical Implementation (40%)``) is list-style and numbers nothing, except on a
      ``##`` heading of a page numbered as a chapter that has no section number of its own (``ch03-x.md`` with
      ``## 1. Frames`` is "Chapter 3, Section 1"); a ``Chapter 3``/``Part 3`` number is never a section number.
    """

    page: tuple[str | None, str | None]
    by_heading: tuple[tuple[str | None, str | None], ...]

    def of(self, heading: NumberedHeading | None) -> tuple[str | None, str | None]:
        """(section, subsection) under ``heading`` (the page's own for text before any heading)."""
        return self.page if heading is None else self.by_heading[heading.index]


def _own_numbers(h: NumberedHeading, single_is_section: bool) -> tuple[str | None, str | None] | None:
    """The (section, subsection) a heading's own number gives, or None when it numbers no section."""
    if h.number is None:
        return None
    keyword = heading_keyword(h.text)
    if keyword in ("chapter", "part"):
        return None
    parts = h.number.split(".")
    if len(parts) >= 3:
        return ".".join(parts[:2]), h.number
    if len(parts) == 2 or keyword == "section" or (single_is_section and h.level == 2):
        return h.number, None
    return None


def section_numbers(doc: Page) -> SectionNumbers:
    """Each heading's (section, subsection) by the rule in `SectionNumbers`; computed once per document
    (`Analysis.section_numbers`)."""
    return doc.analysis.section_numbers


def compute_section_numbers(doc: Page) -> SectionNumbers:
    """Each heading's (section, subsection) by the rule in `SectionNumbers` (uncached: see `section_numbers`)."""
    n = doc_numbering(doc)
    page = (n.section, n.subsection)
    single_is_section = n.chapter is not None and n.section is None
    stack: dict[int, tuple[str | None, str | None]] = {}  # level → numbers in force under that heading
    out: list[tuple[str | None, str | None]] = []
    for h in doc.outline.headings:
        for lvl in [k for k in stack if k >= h.level]:
            del stack[lvl]
        inherited = stack[max(stack)] if stack else page
        own = _own_numbers(h, single_is_section)
        stack[h.level] = own if own is not None else inherited
        out.append(stack[h.level])
    return SectionNumbers(page, tuple(out))
