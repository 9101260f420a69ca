"""The Docusaurus site model: number prefixes, sidebar order, routes, page URLs, and book numbering.

Docusaurus turns a docs folder into a site: it strips number prefixes from file and folder names, orders the
sidebar by ``sidebar_position``/``_category_`` positions and those prefixes, and routes each page from its path,
``id`` and ``slug``. Chunk citations link into that site, so this module is where chunkscope models it; the
textbook numbering (chapter, section, module, week) read from the same paths and titles lives here too.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from .structure import outline

if TYPE_CHECKING:
    from .chunk import Chunk
    from .docs import Document

# Docusaurus strips "01-", "1_", "1." style prefixes from file and folder names when it builds routes and ids.
_NUMBER_PREFIX = re.compile(r"^(\d+(?:\.\d+)*)\s*[-_.]+\s*(?=[^-_.\s])")


# --- number prefixes and sidebar order ----------------------------------------------------------------------

def number_prefix(name: str) -> tuple[tuple[int, ...] | None, str]:
    """Split a Docusaurus number prefix off a file or folder name: ``"01-intro"`` → ``((1,), "intro")``."""
    m = _NUMBER_PREFIX.match(name)
    if not m:
        return None, name
    return tuple(int(x) for x in m.group(1).split(".")), name[m.end():]


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
    """Docusaurus' sidebar order: explicit positions first, then number prefixes, then by name."""
    if position is not None:
        return (0, (position,), name)
    num, _ = number_prefix(name)
    if num is not None:
        return (1, tuple(float(n) for n in num), name)
    return (2, (), name)


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
_WEEK_SEGMENT = re.compile(r"^week[-_ ]?(\d+)", re.I)


def _numbers_of(name: str) -> tuple[int, ...]:
    m = _FILE_NUMBERS.match(name)
    if not m:
        return ()
    return tuple(int(x) for x in re.split(r"[-_.]", m.group(1)) if x)


@dataclass(frozen=True, slots=True)
class Numbering:
    """Where a document sits in the book, from its front matter, path and title."""

    chapter: int | None
    section: str | None
    chapter_id: str
    chapter_title: str
    module: str | None
    module_number: int | None
    week: int | None


def _as_int(v: Any) -> int | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, str) and v.strip().isdigit():
        return int(v)
    return None


def doc_numbering(doc: "Document") -> Numbering:
    """Chapter and section numbers, chapter id, module and week of a document.

    Sources, first found wins: front matter (``chapter``, ``section``, ``week``/``week_number``, ``module``),
    the file name (``ch03-02-data-types.md`` → chapter 3, section 3.2; ``02-forward.md`` → chapter 2), folder
    names (``module-4/4.1-humanoid/…``), then the H1 title (``# Chapter 3: Kinematics``).
    """
    cached = doc.cache.get("numbering")
    if cached is not None:
        return cached
    fm = doc.front_matter
    parts = PurePosixPath(doc.path).parts
    stem = PurePosixPath(doc.path).stem
    if stem.lower() in ("index", "readme") and len(parts) > 1:
        stem = parts[-2]
    # A module's or a week's overview page (module-2-motion/index.md) is numbered by its module or week, which
    # the folder loop below reads: its number is no chapter number.
    nums = () if _MODULE_SEGMENT.match(stem) or _WEEK_SEGMENT.match(stem) else _numbers_of(stem)
    folder_nums: tuple[int, ...] = ()
    module = None
    module_number = None
    week = _as_int(fm.get("week_number", fm.get("week")))
    for seg in parts[:-1]:
        mm = _MODULE_SEGMENT.match(seg)
        if mm:
            module, module_number = seg, int(mm.group(1))
            continue
        wm = _WEEK_SEGMENT.match(seg)
        if wm and week is None:
            week = int(wm.group(1))
            continue
        n = _numbers_of(seg)
        if n:
            folder_nums = n
    if isinstance(fm.get("module"), (str, int)):
        module = str(fm["module"])
    heads = outline(doc).headings
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
    section = fm.get("section")
    section = str(section) if section is not None else None
    if section is None:
        if len(nums) > 1:
            section = ".".join(str(n) for n in nums)
        elif len(folder_nums) > 1:
            section = ".".join(str(n) for n in folder_nums)
    chapter_id = f"ch{chapter:02d}" if chapter is not None else stem
    result = Numbering(chapter, section, chapter_id, title, module, module_number, week)
    doc.cache["numbering"] = result
    return result



# --- routes ------------------------------------------------------------------------------------------------

def _strip_prefix(segment: str) -> str:
    return number_prefix(segment)[1]


def doc_route(doc: "Document") -> str:
    """The page's route as Docusaurus computes it (number prefixes stripped, index pages, ``slug``/``id``)."""
    fm = doc.front_matter
    path = PurePosixPath(doc.path)
    folders = [_strip_prefix(p) for p in path.parts[:-1]]
    stem = path.stem
    slug = fm.get("slug")
    if isinstance(slug, str) and slug.strip():
        slug = slug.strip()
        if slug.startswith("/"):
            return slug if slug != "/" else "/"
        return "/" + "/".join([*folders, slug])
    doc_id = fm.get("id")
    if isinstance(doc_id, str) and doc_id.strip():
        last = doc_id.strip()
    else:
        last = _strip_prefix(stem)
        if stem.lower() in ("index", "readme") or (folders and last == folders[-1]):
            return "/" + "/".join(folders) if folders else "/"
    return "/" + "/".join([*folders, last])


# --- page URLs ---------------------------------------------------------------------------------------------

def _first_content(text: str, start: int, end: int) -> int:
    i = start
    while i < end and text[i].isspace():
        i += 1
    return i if i < end else start


def chunk_url(site_url: str | None, doc: "Document", chunk: "Chunk") -> str:
    """The published page of ``doc`` + ``#anchor`` of the heading the chunk's content starts under."""
    route = doc_route(doc)
    base = (site_url or "").rstrip("/")
    h = doc.structure.heading_before(_first_content(doc.text, chunk.start, chunk.end))
    anchor = f"#{h.anchor}" if h is not None and h.anchor else ""
    return f"{base}{route}{anchor}"
