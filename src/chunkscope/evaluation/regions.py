"""Answer regions: where in the tree the answer to a question lies, and which chunks share text with it.

The expectation becomes a *region* of one file: the heading's section (to the next heading of the same or a
higher level), the anchor's section, the verbatim passage, or the whole file. A retrieved chunk is relevant when
it lies in that file and shares a non-space character with the region (`overlaps`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from chunkscope.document.structure import trim
from chunkscope.evaluation.passages import section_body
from chunkscope.evaluation.queries import QueriesError, QueryCase

if TYPE_CHECKING:
    from chunkscope.document.loader import DocsTree

#: "3.2 ", "Chapter 3: ", "Section 1.4 - " before a heading's words.
NUMBER_PREFIX = re.compile(r"^\s*(?:appendix\s+[a-z]|(?:(?:chapter|section|part)\s+)?\d+(?:\.\d+)*)\.?(?:\s*[:\-–—]\s*|\s+)", re.I)


@dataclass(frozen=True)
class Region:
    """Where the answer to a query is: ``[start, end)`` of one document.

    ``passage`` is the span passage-level metrics measure: the section's body without its heading line, the
    verbatim text, the file's body. None: the region itself, trimmed.
    """

    path: str
    start: int
    end: int
    label: str = ""
    passage: tuple[int, int] | None = None
    #: Where the heading line of a section-body region starts (the probe's questions ask a heading for its
    #: body); None for any other region.
    heading: int | None = None

    def passage_span(self, text: str) -> tuple[int, int]:
        """The passage as ``[start, end)`` of ``text`` (the region's document)."""
        return self.passage if self.passage is not None else trim(text, self.start, self.end)


def _heading_key(text: str) -> str:
    return " ".join(text.split()).casefold()


def resolve_region(tree: "DocsTree", case: QueryCase) -> Region:
    """Turn an expectation into a region of a document; an expectation that names nothing raises."""
    from chunkscope.document.structure import slugify

    exp = case.expect
    path = exp.path.removeprefix("./")
    doc = tree.get(path)
    if doc is None:
        raise QueriesError(f"{case.where}: expected file {exp.path!r} is not in the docs tree")
    st = doc.structure
    start, end, label = doc.body_start, len(doc.text), path
    passage = trim(doc.text, start, end)
    if exp.anchor is not None:
        h = next((h for h in st.headings if h.anchor == exp.anchor), None)
        if h is None:
            raise QueriesError(f"{case.where}: no heading with anchor #{exp.anchor} in {path}")
        start, end, label = h.start, st.section_end(h), f"{path}#{h.anchor}"
        passage = section_body(doc.text, h.end, end, h.start)
    elif exp.heading is not None:
        want = _heading_key(exp.heading)
        h = next((h for h in st.headings if _heading_key(h.text) == want), None)
        if h is None:  # "Forward Kinematics" for "## 3.2 Forward Kinematics" or "Chapter 3: …", or a slug
            def bare(t: str) -> str:
                return _heading_key(NUMBER_PREFIX.sub("", t, count=1))

            h = next((h for h in st.headings if bare(h.text) == bare(exp.heading) or h.anchor == slugify(exp.heading)), None)
        if h is None:
            raise QueriesError(f"{case.where}: no heading {exp.heading!r} in {path}")
        start, end, label = h.start, st.section_end(h), f"{path} › {h.text}"
        passage = section_body(doc.text, h.end, end, h.start)
    if exp.text is not None:
        found = _find_text(doc.text, exp.text, start, end)
        if found is None:
            raise QueriesError(f"{case.where}: expected text {_short(exp.text)!r} not found in {label}")
        start, end = found
        passage = trim(doc.text, *found)
        label = f"{label} “{_short(exp.text)}”"
    return Region(path, start, end, label, passage)


def _short(text: str, n: int = 40) -> str:
    t = " ".join(text.split())
    return t if len(t) <= n else t[: n - 1] + "…"


def _find_text(text: str, needle: str, lo: int, hi: int) -> tuple[int, int] | None:
    """Verbatim first; then the same words with any whitespace between them (a passage copied across a wrap)."""
    i = text.find(needle, lo, hi)
    if i != -1:
        return i, i + len(needle)
    words = needle.split()
    if not words:
        return None
    m = re.compile(r"\s+".join(map(re.escape, words))).search(text, lo, hi)
    return (m.start(), m.end()) if m else None


def overlaps(text: str, a: int, b: int, region: Region) -> bool:
    """Whether ``[a, b)`` shares a non-space character with the region."""
    lo, hi = max(a, region.start), min(b, region.end)
    return lo < hi and not text[lo:hi].isspace()
