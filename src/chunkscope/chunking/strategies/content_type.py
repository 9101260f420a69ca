"""content-type (seed 003): size each region by its content type, then slide a token window with overlap.

Seed 003 (ADR-010, "variable-size chunking") classifies content as *theoretical* (prose, no code), *code*
(code fences, or a high code-to-text ratio) or *mixed*, gives each type its own chunk size in tokens (800 /
1200 / 1000) and applies a sliding window with 200 tokens of overlap. Metadata comes from the file path and the
front matter: module, chapter, section, type, language, framework, complexity, prerequisites, related sections.

Here a *region* is a section at ``split_level`` (an H2 by default; a heading of a higher level also ends one).
A region that fits its budget is one chunk; a longer one is windowed, each cut moved back to the best boundary
(blank line, line end, sentence end, space) in the window's last fifth, and kept out of code fences when a
fence edge is near. A fence longer than the budget has to be cut: those chunks carry ``split-fence``.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any, ClassVar

from chunkscope.document.analysis import MemoSlot
from chunkscope.chunking.model import OVERSIZE, SPLIT_FENCE, Span
from chunkscope.chunking.params import Constraint, Param, ParamError
from chunkscope.chunking.strategies._common import keep_split_fences_no_chunk_holds
from chunkscope.chunking.strategy import Limits, SearchSpace, Strategy
from chunkscope.site.numbering import doc_numbering
from chunkscope.tokens import TIKTOKEN_NAMES
from chunkscope.chunking.strategies._common import FENCE_KINDS, Protected, sections, trim

if TYPE_CHECKING:
    from chunkscope.chunking.model import Chunk
    from chunkscope.document.loader import Document
    from chunkscope.tokens import SliceCounter

TYPES = ("theoretical", "code", "mixed")

DEFAULT_FRAMEWORKS: dict[str, list[str]] = {
    "ros2": ["rclpy", "rclcpp", "ros2", "ros 2", "colcon"],
    "gazebo": ["gazebo", "sdf"],
    "unity": ["unity"],
    "isaac": ["isaac"],
}

#: Boundaries in order of preference, each with where the cut goes: the match's start or its end.
_BOUNDARIES = (
    (re.compile(r"(?:\r\n|\r|\n)[ \t]*(?:\r\n|\r|\n)"), "start"),  # blank line: end of a paragraph
    (re.compile(r"\r\n|\r|\n"), "start"),  # line end
    (re.compile(r"[.!?…。][\"'”’)\]]*(?=\s)"), "end"),  # sentence end (the punctuation stays in the chunk)
    (re.compile(r"\s+"), "start"),  # any space
)
#: Only boundaries in the last fifth of a window are worth moving a cut back to.
_ZONE = 0.2


class ContentTypeStrategy(Strategy):
    """Seed 003: theoretical / code / mixed regions, each with its own token budget and a 200-token overlap."""

    name: ClassVar[str] = "content-type"
    seed: ClassVar[str] = "003"
    parses_markdown: ClassVar[bool] = True
    description: ClassVar[str] = (
        "Classify each section as theoretical, code or mixed, give it that type's token budget (800/1200/1000) "
        "and slide a window with overlap; metadata from the path and front matter."
    )
    parameters: ClassVar[tuple[Param, ...]] = (
        Param("encoding", str, "cl100k_base", "tokenizer the budgets are counted in", choices=TIKTOKEN_NAMES),
        Param("theoretical_tokens", int, 800, "budget of a region without code", min=16),
        Param("code_tokens", int, 1200, "budget of a region that is mostly code", min=16),
        Param("mixed_tokens", int, 1000, "budget of a region of prose and code", min=16),
        Param("overlap_tokens", int, 200, "tokens shared by consecutive windows of one region", min=0),
        Param("code_ratio", float, 0.5, "a region whose code share (code chars / chars) is at least this is code", min=0.0, max=1.0),
        Param("split_level", int, 2, "regions are sections at this heading level (higher levels also cut)", min=1, max=6),
        Param("framework_keywords", dict, DEFAULT_FRAMEWORKS, "framework → keywords (case-insensitive, whole words)"),
    )
    constraints: ClassVar[tuple[Constraint, ...]] = tuple(
        Constraint("overlap_tokens", "<", f"{kind}_tokens") for kind in TYPES)
    #: The three budgets and the overlap move together (the overlap stays below each budget): one axis of settings.
    search_space: ClassVar[SearchSpace] = {
        ("theoretical_tokens", "code_tokens", "mixed_tokens", "overlap_tokens"): (
            {"theoretical_tokens": 256, "code_tokens": 384, "mixed_tokens": 320, "overlap_tokens": 64},
            {"theoretical_tokens": 512, "code_tokens": 768, "mixed_tokens": 640, "overlap_tokens": 128},
            {},
        ),
        "split_level": (2, 3),
    }
    required_metadata: ClassVar[tuple[str, ...]] = ("module", "chapter", "section", "type")
    metadata_fields: ClassVar[tuple[str, ...]] = ("language", "framework", "complexity", "prerequisites",
                                                  "related_sections")
    citation_template: ClassVar[str] = "{chapter} › {section}"

    def validate(self) -> None:
        p = self.params
        fw = p["framework_keywords"]
        clean: dict[str, tuple[str, ...]] = {}
        for key, words in fw.items():
            if isinstance(words, str):
                words = [words]
            if not isinstance(words, (list, tuple)) or not all(isinstance(w, str) and w.strip() for w in words):
                raise ParamError(f"{self.name}: framework_keywords[{key!r}] must be a list of non-empty strings, got {words!r}")
            clean[str(key)] = tuple(w.strip() for w in words)
        self._keywords = clean
        self._keyword_owner: dict[str, str] = {}
        for fw_name, words in clean.items():
            for w in words:
                self._keyword_owner.setdefault(w.lower(), fw_name)  # a keyword listed twice belongs to the first
        alts = sorted(self._keyword_owner, key=len, reverse=True)  # longest first: "ros 2" before "ros"
        # Used only for texts whose lowercase form changes length (see `_KeywordHits`).
        self._keyword_rx = re.compile("|".join(re.escape(w) for w in alts), re.I) if alts else None

    @property
    def length_tokenizer(self) -> str:
        return self.params["encoding"]

    def limits(self) -> Limits:
        """The largest budget; lint should compare each chunk with `budget_for` (its type's budget)."""
        p = self.params
        return Limits(self.length_tokenizer, max(p["theoretical_tokens"], p["code_tokens"], p["mixed_tokens"]))

    def budget(self, kind: str) -> int:
        return self.params[f"{kind}_tokens"]

    def budget_for(self, chunk: "Chunk") -> int:
        """The token budget a chunk was cut to: its type's size (the largest budget for an unknown type)."""
        kind = chunk.metadata.get("type") if chunk.metadata else None
        return self.budget(kind) if kind in TYPES else self.limits().max  # type: ignore[return-value]

    # --- classification -----------------------------------------------------------------------------------------

    def classify(self, doc: "Document", start: int, end: int) -> str:
        """theoretical (no code), code (code share >= code_ratio) or mixed, for the range ``[start, end)``."""
        code = _code_chars(Protected.of(doc, FENCE_KINDS), start, end)
        if code == 0:
            return "theoretical"
        return "code" if code / max(end - start, 1) >= self.params["code_ratio"] else "mixed"

    def framework(self, text: str) -> str | None:
        """The framework whose keywords occur most often in ``text`` (ties: the first in the map), or None."""
        return self._frameworks(text).best(0, len(text))

    def _frameworks(self, text: str) -> "_KeywordHits":
        return _KeywordHits(text, self._keyword_owner, self._keyword_rx, list(self._keywords))

    # --- cutting ------------------------------------------------------------------------------------------------

    def spans(self, doc: "Document") -> list[Span]:
        text = doc.text
        counter = self.counter(doc)
        fences = Protected.of(doc, FENCE_KINDS)
        base = self._document_metadata(doc)
        # Both depend on the text (and the keyword map) only: kept per document for live tuning.
        memo = doc.analysis.memo(_MEMO, _Memo)
        if memo.languages is None:
            memo.languages = _Languages(doc)
        languages = memo.languages
        kw_key = tuple(self._keyword_owner.items())
        keywords = memo.keywords.get(kw_key)
        if keywords is None:
            keywords = memo.keywords[kw_key] = self._frameworks(text)
        fm_framework = doc.front_matter.get("framework")
        fm_framework = fm_framework.strip() if isinstance(fm_framework, str) and fm_framework.strip() else None
        out: list[Span] = []
        for sec in sections(doc, max_level=self.params["split_level"]):
            s, e = trim(text, sec.start, sec.end)
            if s >= e:
                continue
            kind = self.classify(doc, s, e)
            budget = self.budget(kind)
            section = sec.heading.anchor if sec.heading is not None else ""
            ranges = [(s, e)] if counter.count(s, e) <= budget else self._windows(doc, counter, fences, s, e, budget)
            for a, b in ranges:
                warnings = []
                if cuts_fence(text, fences, a) or cuts_fence(text, fences, b):
                    warnings.append(SPLIT_FENCE)
                if counter.count(a, b) > budget:
                    warnings.append(OVERSIZE)
                # The seed's field order: where the chunk sits, what it is, then what the front matter says.
                meta = {
                    "module": base["module"],
                    "chapter": base["chapter"],
                    "section": section,
                    "type": kind,
                    "language": languages.dominant(a, b),
                    "framework": fm_framework or keywords.best(a, b),
                    "complexity": base["complexity"],
                    "prerequisites": list(base["prerequisites"]),  # each chunk owns its lists
                    "related_sections": list(base["related_sections"]),
                }
                out.append(Span(a, b, meta, warnings))

        def fence_containing(pos: int) -> tuple[int, int] | None:
            f = fences.containing(pos)
            return (f[0], f[1]) if f is not None else None

        return keep_split_fences_no_chunk_holds(out, fence_containing)

    def _windows(self, doc: "Document", counter: "SliceCounter", fences: Protected, start: int, end: int, budget: int) -> list[tuple[int, int]]:
        """Slide a ``budget``-token window over ``[start, end)`` with ``overlap_tokens`` of overlap."""
        text = doc.text
        overlap = self.params["overlap_tokens"]
        st = doc.structure
        out: list[tuple[int, int]] = []
        pos = start
        prev_cut = start  # a window's end must move past the previous one's, or it would repeat it
        while pos < end:
            raw = counter.end_within(pos, budget, end)
            if raw >= end:
                out.append(trim(text, pos, end))
                break
            if raw <= pos:  # a single character over budget cannot happen with budgets >= 16; stay safe
                raw = pos + 1
            zone = raw - max(int((raw - pos) * _ZONE), 1)
            fence = fences.containing(raw)
            to_fence: tuple[int, int] | None = None
            if fence is not None:
                fs, fe, _ = fence
                # End before the fence when its start is near (in the zone) or when the whole fence would fit the
                # next window; otherwise the fence is longer than a window and must be cut anyway.
                if fs > pos and text[pos:fs].strip() and (fs >= zone or counter.count(fs, fe) <= budget):
                    to_fence = (fs, fe)
            if to_fence is not None:
                cut = to_fence[0]
            else:
                cut = _best_cut(text, max(zone, pos + 1), raw, fences, fence) or raw
                # A window never ends on a heading (the blank line after one is a tempting boundary): the
                # heading goes to the next window, with its content.
                last = trim(text, pos, cut)[1]
                h = st.heading_before(last)
                if h is not None and max(pos, prev_cut) < h.start and h.end >= last and text[pos:h.start].strip():
                    cut = h.start
            a, b = trim(text, pos, cut)
            if a < b:
                out.append((a, b))
            prev_cut = cut
            restart = counter.start_within(cut, overlap, pos)
            inside = fences.containing(restart)
            if inside is not None and not inside[0] < cut < inside[1]:
                restart = inside[1]  # an overlap starts after a fence the cut keeps whole, never inside it
            elif inside is not None:
                # Inside a fence being split the overlap starts on a line of its own: code reads by lines.
                nl = text.find("\n", restart, cut)
                if nl != -1:
                    restart = nl + 1
            if to_fence is not None and counter.count(restart, to_fence[1]) > budget:
                # With the overlap the fence would not fit the next window, which would end before it again.
                restart = to_fence[0]
            if restart <= pos:
                restart = cut
            pos = _word_start(text, restart, cut, end)
        return out

    def _document_metadata(self, doc: "Document") -> dict[str, Any]:
        fm = doc.front_matter
        return {
            "module": doc_numbering(doc).module,
            "chapter": chapter_name(doc),
            "complexity": str(fm["complexity"]) if isinstance(fm.get("complexity"), (str, int)) else None,
            "prerequisites": _str_list(fm.get("prerequisites")),
            "related_sections": _str_list(fm.get("related_sections", fm.get("related"))),
        }


def cuts_fence(text: str, fences: Protected, pos: int) -> bool:
    """A boundary at ``pos`` leaves code of one fence on both sides (an unclosed fence's trailing blank lines,
    which trimming drops, do not count)."""
    f = fences.containing(pos)
    return f is not None and bool(text[f[0]:pos].strip()) and bool(text[pos:f[1]].strip())


def chapter_name(doc: "Document") -> str:
    """Seed 003's chapter (``"01-fundamentals"``): the file's stem, or its folder for index/README pages."""
    path = PurePosixPath(doc.path)
    if path.stem.lower() in ("index", "readme") and len(path.parts) > 1:
        return path.parts[-2]
    return path.stem


def _str_list(v: Any) -> list[str]:
    if isinstance(v, str):
        return [v] if v.strip() else []
    if isinstance(v, (list, tuple)):
        return [str(x) for x in v if x is not None]
    return []


def _code_chars(fences: Protected, start: int, end: int) -> int:
    """Characters of ``[start, end)`` inside fenced or indented code."""
    total = 0
    i = max(bisect_left(fences._starts, start) - 1, 0)  # noqa: SLF001 - the sorted starts are the index
    for s, e, _ in fences.spans[i:]:
        if s >= end:
            break
        total += max(0, min(e, end) - max(s, start))
    return total


class _Languages:
    """The dominant fence language of any range: most characters of fences with that language."""

    def __init__(self, doc: "Document") -> None:
        fences = [b for b in doc.structure.blocks if b.kind == "fence" and b.language]
        self.fences = sorted(((b.start, b.end, b.language.lower()) for b in fences), key=lambda f: f[0])
        self.starts = [f[0] for f in self.fences]

    def dominant(self, start: int, end: int) -> str:
        share: dict[str, int] = {}
        i = max(bisect_left(self.starts, start) - 1, 0)
        for s, e, lang in self.fences[i:]:
            if s >= end:
                break
            n = min(e, end) - max(s, start)
            if n > 0:
                share[lang] = share.get(lang, 0) + n
        if not share:
            return ""
        # Most characters wins; ties go to the language that comes first (dicts keep insertion order).
        return max(share, key=lambda k: share[k])


class _KeywordHits:
    """Where framework keywords occur in a document, so each chunk's framework is a bisect, not a regex scan.

    Keywords are found with ``str.find`` on the lowercased text (a case-insensitive regex alternation scans
    every position and costs more than tokenizing); texts whose lowercase form changes length fall back to the
    regex. Whole-word checks are made against the chunk's own edges, as if the chunk's text were searched alone.
    """

    def __init__(self, text: str, owner: dict[str, str], rx: "re.Pattern[str] | None", order: list[str]) -> None:
        self.text = text
        self.order = order
        found: list[tuple[int, int, str]] = []  # (start, end, framework)
        low = text.lower()
        if len(low) == len(text):
            for kw, fw in owner.items():
                n = len(kw)
                i = low.find(kw)
                while i != -1:
                    found.append((i, i + n, fw))
                    i = low.find(kw, i + 1)
        elif rx is not None:
            found = [(m.start(), m.end(), owner[m.group(0).lower()]) for m in rx.finditer(text)]
        # Longest match first at each position, and no two matches overlapping ("ros 2" is not also "ros").
        found.sort(key=lambda h: (h[0], -(h[1] - h[0])))
        self.hits: list[tuple[int, int, str]] = []
        for h in found:
            if not self.hits or h[0] >= self.hits[-1][1]:
                self.hits.append(h)
        self.starts = [h[0] for h in self.hits]

    def best(self, start: int, end: int) -> str | None:
        text = self.text
        counts: dict[str, int] = {}
        for i in range(bisect_left(self.starts, start), len(self.hits)):
            s, e, fw = self.hits[i]
            if e > end:
                if s >= end:
                    break
                continue
            if s > start and _is_word(text[s - 1]):
                continue
            if e < end and _is_word(text[e]):
                continue
            counts[fw] = counts.get(fw, 0) + 1
        if not counts:
            return None
        return max(counts, key=lambda k: (counts[k], -self.order.index(k)))


@dataclass(slots=True)
class _Memo:
    """What this strategy keeps per document (`Analysis.memo`): it depends on the text (and the keyword map)
    only, so a re-chunk with new sizes (live tuning) finds it made."""

    languages: _Languages | None = None
    #: Keyword positions, by the keyword map (keyword → framework) they were found for.
    keywords: dict[tuple[tuple[str, str], ...], _KeywordHits] = field(default_factory=dict)


_MEMO: MemoSlot[_Memo] = MemoSlot("content-type: fence languages and keyword positions")


def _is_word(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


def _best_cut(text: str, lo: int, hi: int, fences: Protected, splitting: tuple[int, int, Any] | None) -> int | None:
    """The last boundary in ``[lo, hi]`` of the most preferred kind, never inside a fence but ``splitting``."""
    if hi <= lo:
        return None
    for rx, at in _BOUNDARIES:
        found = None
        for m in rx.finditer(text, lo, hi):
            c = m.start() if at == "start" else m.end()
            f = fences.containing(c)
            if f is not None and (splitting is None or f[0] != splitting[0]):
                continue
            found = c
        if found is not None:
            return found
    return None


def _word_start(text: str, pos: int, cut: int, end: int) -> int:
    """``pos`` moved forward to the start of a word: the rest of a word (not past ``cut``), then any space.

    Stopping at ``cut`` keeps coverage when the previous chunk had to end inside a long word.
    """
    if 0 < pos < cut and not text[pos - 1].isspace():
        while pos < cut and not text[pos].isspace():
            pos += 1
    while pos < end and text[pos].isspace():
        pos += 1
    return pos
