"""The Docusaurus site model: number prefixes, sidebar order, routes, page URLs, and book numbering.

Docusaurus turns a docs folder into a site: it strips number prefixes from file and folder names, orders the
sidebar by ``sidebar_position``/``_category_`` positions and those prefixes, and routes each page from its path,
``id`` and ``slug``. Chunk citations link into that site, so this module is where chunkscope models it; the
textbook numbering (chapter, section, module, week) read from the same paths and titles lives here too.
"""

from __future__ import annotations

import json
import os
import re
import string
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from chunkscope.document.structure import first_content, heading_keyword

if TYPE_CHECKING:
    from chunkscope.chunking.chunk import Chunk
    from chunkscope.document.loader import Document
    from chunkscope.document.structure import Heading

# Docusaurus' default number-prefix parser strips one number and its separators ("01-", "1_", "1.", "02 - ") from
# file and folder names when it builds routes, ids and sidebar positions...
_NUMBER_PREFIX = re.compile(r"^(\d+)\s*[-_.]+\s*")
# ...except from a name that starts like a version or a date ("4.1-", "10.2.3-", "2021-01-31-", "01-02-"): that
# name is kept whole and has no position. (Docusaurus tests a date pattern too, but every date it matches starts
# with two numbers joined by a separator, so this one pattern covers both.)
_KEPT_PREFIX = re.compile(r"^\d+[-_.]\d+")
# A page's file name is read without its extension: "1.md" is a page named "1", not one named "md".
_DOC_EXTENSION = re.compile(r"\.mdx?$", re.I)


# --- number prefixes and sidebar order ----------------------------------------------------------------------

def number_prefix(name: str) -> tuple[tuple[int, ...] | None, str]:
    """Split a Docusaurus number prefix off a file or folder name: ``"01-intro"`` → ``((1,), "intro")``.

    A name that starts like a version or a date keeps its prefix: ``"4.1-humanoid"`` → ``(None, "4.1-humanoid")``.
    Give a file's name without its extension.
    """
    if _KEPT_PREFIX.match(name):
        return None, name
    m = _NUMBER_PREFIX.match(name)
    if not m:
        return None, name
    return (int(m.group(1)),), name[m.end():]


def category_position(folder: Path) -> float | None:
    """The ``position`` from a Docusaurus ``_category_.json``/``.yml`` file, if any."""
    for fname in ("_category_.json", "_category_.yml", "_category_.yaml"):
        f = folder / fname
        if not f.is_file():
            continue
        import yaml  # only for this file kind: PyYAML costs start-up time and many trees have none

        try:
            raw = f.read_text(encoding="utf-8")
            data = json.loads(raw) if fname.endswith(".json") else yaml.safe_load(raw)
        except (OSError, ValueError, yaml.YAMLError):
            return None
        pos = data.get("position") if isinstance(data, dict) else None
        return float(pos) if isinstance(pos, (int, float)) else None
    return None


def sidebar_order_key(name: str, position: float | None) -> tuple:
    """Docusaurus' sidebar order of a file (named with its extension) or folder among its siblings.

    A sibling's position is its ``sidebar_position`` or ``_category_`` position when given, else its number
    prefix; both count on one scale (a folder at position 3 comes before ``04-page.md``). Positioned siblings
    come first, by position; ties and the rest (kept prefixes like ``4.1-`` included) go by name.
    """
    if position is None:
        num, _ = number_prefix(_DOC_EXTENSION.sub("", name))
        position = float(num[0]) if num is not None else None
    if position is not None:
        return (0, (position,), name)
    return (1, (), name)


def front_matter_position(file: Path) -> float | None:
    """Read only the head of a file to find ``sidebar_position`` without decoding the whole tree twice."""
    try:
        with file.open("rb") as fh:
            head = fh.read(4096)
    except OSError:
        return None
    m = re.search(rb"^sidebar_position:\s*([0-9.]+)\s*$", head, re.M)
    if not m or not head.lstrip(b"\xef\xbb\xbf").startswith(b"---"):
        return None
    try:
        return float(m.group(1))
    except ValueError:
        return None


# --- numbering ---------------------------------------------------------------------------------------------

_FILE_NUMBERS = re.compile(r"^(?:ch(?:apter)?|module|part|lesson|week|sec(?:tion)?)?[-_ ]?(\d+(?:[-_.]\d+)*)(?=$|[-_ .])", re.I)
_MODULE_SEGMENT = re.compile(r"^module[-_ ]?(\d+)", re.I)
# "week-3", "week3", "Week 3", "exercises-week-3": a week number in a file or folder name.
_WEEK_SEGMENT = re.compile(r"(?:^|[-_ ])week[-_ ]?(\d+)(?=$|[-_ .])", re.I)
# "Week 1 Exercises: Frames", "Homework for week 2": a week number in a title.
_WEEK_TITLE = re.compile(r"\bweek[-_ ]?(\d+)\b", re.I)


def _numbers_of(name: str) -> tuple[int, ...]:
    m = _FILE_NUMBERS.match(name)
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


def _module_numbers_its_topics(doc: "Document", module_number: int) -> bool:
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


def _chapter_id(chapter: int | None, stem: str, module_folder: str | None) -> str:
    """``ch03`` (seed 002's form) or the page's name, qualified by its module folder when it has one: modules often
    repeat page names (``intro``, ``capstone-project``) and number their chapters afresh, and an id that mixes two
    modules would make a ``chapter_id`` filter return pages of both."""
    base = f"ch{chapter:02d}" if chapter is not None else stem
    if module_folder is None or base == module_folder:
        return base  # a module's own overview page is named by the module folder already
    return f"{module_folder}/{base}"


def doc_numbering(doc: "Document") -> Numbering:
    """Chapter and section numbers, chapter id, module and week of a document, worked out once per document
    (`Analysis.numbering`) by `compute_numbering`'s rules."""
    return doc.analysis.numbering


def compute_numbering(doc: "Document") -> Numbering:
    """Chapter and section numbers, chapter id, module and week of a document (uncached: see `doc_numbering`).

    Sources, first found wins: front matter (``chapter``, ``section``, ``week``/``week_number``, ``module``),
    the file name (``ch03-02-data-types.md`` → chapter 3, section 3.2; ``02-forward.md`` → chapter 2), folder
    names (``module-4/4.1-humanoid/…``; a three-part number such as ``1.2.3-x`` is a subsection), then the H1
    title (``# Chapter 3: Kinematics``). A module's overview page (``module-1/index.md``) takes the module's
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
    if chapter is None and h1 and h1.number:
        chapter = int(h1.number.split(".")[0])
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
    chapter_id = _chapter_id(chapter, stem, module_folder)
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

    def of(self, heading: "Heading | None") -> tuple[str | None, str | None]:
        """(section, subsection) under ``heading`` (the page's own for text before any heading)."""
        return self.page if heading is None else self.by_heading[heading.index]


def _own_numbers(h: "Heading", single_is_section: bool) -> tuple[str | None, str | None] | None:
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


def section_numbers(doc: "Document") -> SectionNumbers:
    """Each heading's (section, subsection) by the rule in `SectionNumbers`; computed once per document
    (`Analysis.section_numbers`)."""
    return doc.analysis.section_numbers


def compute_section_numbers(doc: "Document") -> SectionNumbers:
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



# --- routes ------------------------------------------------------------------------------------------------

def _strip_prefix(segment: str) -> str:
    return number_prefix(segment)[1]


def _is_category_index(path: PurePosixPath) -> bool:
    """Whether Docusaurus makes the page its folder's index: ``index``, ``README`` or the folder's own name.

    Names are compared as written, number prefixes and all (``07-safety/07-safety.md`` is an index page,
    ``05-actuators/actuators.md`` is not), and case aside.
    """
    stem = path.stem.lower()
    return stem in ("index", "readme") or (len(path.parts) > 1 and stem == path.parent.name.lower())


def _resolve(slug: str, folder_route: str) -> str:
    """A relative slug resolved against its folder's route, as a URL path is (``./``, ``../``, a trailing ``/``)."""
    parts = [p for p in folder_route.split("/") if p]
    segments = slug.split("/")
    for seg in segments:
        if seg == "..":
            if parts:
                parts.pop()
        elif seg not in ("", "."):
            parts.append(seg)
    route = "/" + "/".join(parts)
    trailing = segments[-1] in ("", ".", "..")
    return route + "/" if trailing and route != "/" else route


def doc_route(doc: "Document") -> str:
    """The page's route as Docusaurus computes it: its permalink under the docs plugin's route base.

    An absolute ``slug`` is the route. Else an index page (`_is_category_index`) routes to its folder, with a
    trailing slash; else the ``slug``, the ``id`` or the file name (number prefix stripped) is resolved under
    the folder's route, whose folder names lose their number prefixes. ``parse_number_prefixes: false`` keeps
    every prefix of the page's path.
    """
    fm = doc.front_matter
    path = PurePosixPath(doc.path)
    strip = fm.get("parse_number_prefixes") is not False
    folders = [_strip_prefix(p) if strip else p for p in path.parts[:-1]]
    folder_route = "/" + "".join(f"{f}/" for f in folders)
    slug = fm.get("slug")
    slug = slug.strip() if isinstance(slug, str) and slug.strip() else None
    if slug is not None and slug.startswith("/"):
        return slug
    if slug is None and _is_category_index(path):
        # An id does not change an index page's route: Docusaurus checks the file's name, not its id.
        return folder_route
    if slug is None:
        doc_id = fm.get("id")
        if isinstance(doc_id, str) and doc_id.strip():
            slug = doc_id.strip()
        else:
            slug = _strip_prefix(path.stem) if strip else path.stem
    return _resolve(slug, folder_route)


# --- page URLs ---------------------------------------------------------------------------------------------

# A route and an id are what Docusaurus writes raw (``/with space/a page``, ``id="my setup"``); a citation URL must
# carry them the way a browser sends them, or the link is no valid URL and some tools cut it at the space. The
# printable ASCII a browser leaves raw (WHATWG URL standard), everything else (controls, non-ASCII as UTF-8) is
# percent-encoded; `quote` keeps letters, digits and "_.-~" itself.
_PRINTABLE = frozenset(string.punctuation)
# In a path: the browser's path percent-encode set is space " # < > ? ` { }; Docusaurus' sitemap writes each page's
# URL exactly so (``/fixture/with%20space/a%20page``, ``caf%C3%A9``, ``it's%20(odd)%20&%20+=,;@~`` kept raw).
# "%" and "\\" are encoded too: a raw "%" would be read as an escape (Docusaurus cannot build such a page
# anyway) and a browser turns "\\" into "/".
_PATH_SAFE = "".join(sorted(_PRINTABLE - set('"#<>?`{}%\\')))
# In a fragment: the browser's fragment percent-encode set (space " < > `), plus "#" and "%" so the fragment is
# one valid, unambiguous URL part; a browser percent-decodes a fragment to find the id ("#c%23sharp" finds
# id="c#sharp", "#my%20setup" finds id="my setup").
_FRAGMENT_SAFE = "".join(sorted(_PRINTABLE - set('"<>`#%')))


def url_path(route: str) -> str:
    """A route (`doc_route`) as a URL path: each segment percent-encoded as a browser requests it, which is how
    Docusaurus' sitemap writes it (``/with space/a page`` → ``/with%20space/a%20page``)."""
    return quote(route, safe=_PATH_SAFE)


def url_fragment(anchor: str) -> str:
    """A heading id as a URL fragment (no ``#``): ``"my setup"`` → ``"my%20setup"``, ``"über"`` → ``"%C3%BCber"``."""
    return quote(anchor, safe=_FRAGMENT_SAFE)


def heading_fragment(heading: "Heading | None") -> str | None:
    """The URL fragment that links to ``heading`` on its published page: ``"#anchor"`` (percent-encoded,
    `url_fragment`); ``""`` for the page's H1, which Docusaurus renders as the title with no id (the page itself
    is the link); None with no heading."""
    if heading is None:
        return None
    if heading.level <= 1:
        return ""
    return f"#{url_fragment(heading.anchor)}" if heading.anchor else None


def chunk_url(site_url: str | None, doc: "Document", chunk: "Chunk") -> str:
    """The published page of ``doc`` + the fragment of the heading the chunk's content starts under, both
    percent-encoded as a browser sends them (`url_path`, `url_fragment`)."""
    route = url_path(doc_route(doc))
    base = (site_url or "").rstrip("/")
    h = doc.structure.heading_before(first_content(doc.text, chunk.start, chunk.end))
    return f"{base}{route}{heading_fragment(h) or ''}"
