"""How a source view draws one document cut into chunks: bands, gutter labels, overlap, truncation, findings.

`SourceLayout` is built once per (document, chunks) result, in a worker: it sweeps the chunk boundaries into
*regions* (runs of text covered by the same chunks) and indexes the lines. Each line's segments are then made
on first draw and memoised, so the view only ever pays for the lines on screen, and a 40 KB page re-chunks and
redraws without touching pygments again (colours come from `highlight.line_colours`, computed once per file).

The soft wrap (which screen rows each line takes) is `row_map.RowMap`.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass
from typing import Any, Iterable

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style

from chunkscope.chunking.model import Chunk
from chunkscope.safe_text import visible
from chunkscope.document.loader import Document
from chunkscope.document.outline_scan import line_of
from chunkscope.tui.highlight import PLAIN, LineColours, line_colours
from chunkscope.tui.row_map import TAB


# Colours: two alternating chunk bands, their brighter selected variants, overlap, and text the embedder drops.
BAND_BG = ("#1c2a3c", "#322538")  # distinct in 256 colours too (17 and 53)
BAND_SELECTED_BG = ("#29476e", "#4a3366")
BAND_FG = ("#6fa8dc", "#b48ee0")
OVERLAP_BG = "#4a3b00"
OVERLAP_SELECTED_BG = "#8a6d00"
TRUNCATED_BG = "#3a1a1a"
GAP_STYLE = Style(dim=True)
GUTTER_STYLE = Style(color="#6c7380")
SEVERITY_COLOURS = {"error": "#ff5f5f", "warning": "#e5c07b", "info": "#61afef"}
#: The note after the line where the embedder stops reading a chunk.
CUT_NOTE = ("  ✂ not embedded from here (beyond the model's max_seq_length)", Style(color="#ff8787", italic=True))


@dataclass(frozen=True, slots=True)
class Region:
    """A run of text ``[start, end)`` covered by the same chunks."""

    start: int
    end: int
    chunks: tuple[int, ...]
    truncated: bool  # no chunk holding this text gets it embedded (beyond max_seq_length in all of them)

    @property
    def owner(self) -> int:
        return self.chunks[-1] if self.chunks else -1


@dataclass(frozen=True, slots=True)
class Mark:
    """A lint finding (or another note) shown at a line: gutter dot and a note after the text."""

    line: int  # 1-based
    severity: str
    text: str


@dataclass(slots=True)
class LinePieces:
    """One line ready to draw: content segments (with the chunk owning each) and the fill after the text."""

    segments: list[tuple[str, Style, int]]
    fill_owner: int
    fill_truncated: bool
    width: int
    note: list[tuple[str, Style]]


def compute_regions(length: int, chunks: list[Chunk], truncations: dict[int, int]) -> list[Region]:
    """Sweep chunk boundaries into contiguous regions covering ``[0, length)``, adjacent equal regions merged."""
    points = {0, length}
    for c in chunks:
        points.add(c.start)
        points.add(c.end)
    points.update(truncations.values())
    cuts = sorted(p for p in points if 0 <= p <= length)
    by_start = sorted(chunks, key=lambda c: (c.start, c.index))
    active: list[Chunk] = []
    nxt = 0
    out: list[Region] = []
    for a, b in zip(cuts, cuts[1:]):
        if a == b:
            continue
        while nxt < len(by_start) and by_start[nxt].start <= a:
            active.append(by_start[nxt])
            nxt += 1
        active = [c for c in active if c.end > a]
        ids = tuple(sorted(c.index for c in active))
        trunc = bool(active) and all(c.index in truncations and a >= truncations[c.index] for c in active)
        if out and out[-1].chunks == ids and out[-1].truncated == trunc and out[-1].end == a:
            last = out[-1]
            out[-1] = Region(last.start, b, ids, trunc)
        else:
            out.append(Region(a, b, ids, trunc))
    if not out:
        out.append(Region(0, max(length, 0), (), False))
    return out


class SourceLayout:
    """A document's lines with chunk regions, for drawing and for mapping clicks back to chunks."""

    def __init__(
        self,
        doc: Document,
        chunks: list[Chunk],
        truncations: dict[int, int] | None = None,
        marks: Iterable[Mark] = (),
        limit: int | None = None,
        colours: list[LineColours] | None = None,
        differ: set[int] | None = None,
        pending: bool = False,
        notes_pending: bool = False,
    ) -> None:
        self.doc = doc
        #: True while the chunks are still being computed: the text is drawn plain, nothing dimmed.
        self.pending = pending
        #: True while the notes of these chunks (lint findings, where the embedder stops) are still being
        #: computed: a wrapping view keeps the rows the previous notes took, so the text moves at most once per
        #: re-cut (when the notes come), not twice, and a re-cut never lays the screen out again on its own.
        self.notes_pending = notes_pending
        self.text = doc.text
        self.chunks = chunks
        self.truncations = truncations or {}
        self.limit = limit
        #: Chunk indices to flag in the gutter (compare mode: boundaries the other side does not share).
        self.differ = differ or set()
        # The line table alone: no Markdown is scanned or parsed for it (the first paint).
        self.line_starts: list[int] = doc.analysis.line_starts
        self.line_count = len(self.line_starts)
        self.colours = colours if colours is not None else ([] if pending else line_colours(doc))
        self.regions = compute_regions(len(self.text), chunks, self.truncations)
        self._region_starts = [r.start for r in self.regions]
        self.marks: dict[int, list[Mark]] = {}
        for m in marks:
            self.marks.setdefault(m.line, []).append(m)
        # Chunk labels by their first line (0-based), and the line where the embedder stops, per chunk.
        self.starts_at: dict[int, list[int]] = {}
        self.first_line: dict[int, int] = {}
        for c in chunks:
            y = self.line_of(c.start) - 1
            self.starts_at.setdefault(y, []).append(c.index)
            self.first_line[c.index] = y
        self.cut_lines: set[int] = {self.line_of(off) - 1 for off in self.truncations.values()}
        self._pieces: dict[int, LinePieces] = {}
        self._notes: dict[int, str] | None = None
        self.number_width = max(3, len(str(self.line_count)))
        self.max_width = max((self._line_width_estimate(y) for y in range(self.line_count)), default=0)

    # --- lines -------------------------------------------------------------------------------------------------

    def line_of(self, offset: int) -> int:
        """1-based line holding ``offset`` (the structure's own rule: CRLF, CR or LF)."""
        return line_of(self.line_starts, offset)

    def line_span(self, y: int) -> tuple[int, int]:
        """Offsets ``[start, end)`` of 0-based line ``y``, its line break excluded."""
        start = self.line_starts[y]
        end = self.line_starts[y + 1] if y + 1 < self.line_count else len(self.text)
        while end > start and self.text[end - 1] in "\r\n":
            end -= 1
        return start, end

    def _line_width_estimate(self, y: int) -> int:
        # Text only, never the notes after it: the view's width then stays the same when only the chunks
        # change, and the screen is not laid out again on every re-chunk (the view adds room for notes).
        a = self.line_starts[y]
        b = self.line_starts[y + 1] if y + 1 < self.line_count else len(self.text)
        return (b - a) + 3 * self.text.count("\t", a, b)

    def region_at(self, offset: int) -> Region:
        i = max(bisect_right(self._region_starts, offset) - 1, 0)
        return self.regions[i]

    def chunk_line(self, index: int) -> int:
        """0-based line where chunk ``index`` starts."""
        return self.first_line.get(index, 0)

    def chunk_lines(self, index: int) -> tuple[int, int]:
        """0-based first and last line of chunk ``index``."""
        c = self.chunks[index]
        return self.line_of(c.start) - 1, self.line_of(max(c.end - 1, c.start)) - 1

    def line_touches(self, y: int, index: int | None) -> bool:
        if index is None or not (0 <= index < len(self.chunks)):
            return False
        a, b = self.chunk_lines(index)
        return a <= y <= b

    # --- drawing -----------------------------------------------------------------------------------------------

    def pieces(self, y: int) -> LinePieces:
        """Segments of line ``y`` (memoised): syntax colours split at chunk region boundaries."""
        p = self._pieces.get(y)
        if p is None:
            p = self._pieces[y] = self._make_pieces(y)
        return p

    def _make_pieces(self, y: int) -> LinePieces:
        start, end = self.line_span(y)
        text = self.text
        colours = self.colours[y] if y < len(self.colours) else []
        base = PLAIN
        # Cut points: colour range edges and region edges, as columns within the line.
        cuts = {0, end - start}
        for a, b, _ in colours:
            cuts.add(min(a, end - start))
            cuts.add(min(b, end - start))
        ri = max(bisect_right(self._region_starts, start) - 1, 0)
        rj = ri
        while rj < len(self.regions) and self.regions[rj].start < end:
            r = self.regions[rj]
            if start < r.start < end:
                cuts.add(r.start - start)
            rj += 1
        cols = sorted(cuts)
        segments: list[tuple[str, Style, int]] = []
        ci = 0
        width = 0
        for a, b in zip(cols, cols[1:]):
            if a == b:
                continue
            while ci < len(colours) and colours[ci][1] <= a:
                ci += 1
            style = colours[ci][2] if ci < len(colours) and colours[ci][0] <= a else base
            region = self.region_at(start + a)
            piece = visible(text[start + a:start + b].replace("\t", TAB), oneline=True)
            if not region.chunks and not self.pending:
                style = style + GAP_STYLE
            elif region.truncated:
                style = style + Style(dim=True, bgcolor=TRUNCATED_BG)
            segments.append((piece, style, _region_code(region)))
            width += cell_len(piece)
        fill_region = self.region_at(end) if end < len(text) else None
        return LinePieces(
            segments,
            _region_code(fill_region) if fill_region is not None else -1,
            bool(fill_region and fill_region.truncated),
            width,
            self.note_pieces(y),
        )

    def note_pieces(self, y: int) -> list[tuple[str, Style]]:
        """What is drawn after line ``y``'s text: where the embedder stops, then its lint notes (terminal-safe)."""
        note: list[tuple[str, Style]] = []
        if y in self.cut_lines:
            note.append(CUT_NOTE)
        for m in self.marks.get(y + 1, []):
            note.append(("  ◀ " + visible(m.text, oneline=True), Style(color=SEVERITY_COLOURS.get(m.severity, "#e5c07b"), italic=True)))
        return note

    def notes(self) -> dict[int, str]:
        """The text drawn after each line that has a note (0-based line: text), for the soft wrap (memoised)."""
        if self._notes is None:
            lines = sorted(y for y in self.cut_lines | {line - 1 for line in self.marks} if 0 <= y < self.line_count)
            self._notes = {y: "".join(text for text, _ in self.note_pieces(y)) for y in lines}
        return self._notes

    def background(self, code: int, selected: int | None) -> Style | None:
        """The band background of a region code (see `_region_code`), brighter for the selected chunk."""
        if code < 0:
            return None
        owner, overlap = code >> 1, code & 1
        if overlap:
            sel = selected is not None and (owner == selected or owner - 1 == selected)
            return Style(bgcolor=OVERLAP_SELECTED_BG if sel else OVERLAP_BG)
        band = owner % 2
        return Style(bgcolor=BAND_SELECTED_BG[band] if owner == selected else BAND_BG[band])

    def fill_at(self, offset: int, selected: int | None) -> Style | None:
        """The style filling a wrapped row after its text: that of the text continuing at ``offset``."""
        region = self.region_at(offset)
        if region.truncated:
            return Style(bgcolor=TRUNCATED_BG)
        return self.background(_region_code(region), selected)

    def segments(self, y: int, selected: int | None) -> tuple[list[Segment], Style | None, int]:
        """Drawable segments of line ``y``, the style filling the rest of the row, and the text's cell width."""
        p = self.pieces(y)
        out: list[Segment] = []
        for text, style, code in p.segments:
            bg = self.background(code, selected)
            if bg is not None and style.bgcolor is None:
                style = style + bg
            out.append(Segment(text, style))
        fill = self.background(p.fill_owner, selected)
        if p.fill_truncated:
            fill = Style(bgcolor=TRUNCATED_BG)
        width = p.width
        for text, style in p.note:
            out.append(Segment(text, style + fill if fill else style))
            width += cell_len(text)
        return out, fill, width

    # --- the gutter --------------------------------------------------------------------------------------------

    @property
    def gutter_width(self) -> int:
        return self.number_width + 1 + 10 + 1 + 1 + 1

    def gutter(self, y: int, selected: int | None) -> list[Segment]:
        """Line number, the label of a chunk starting here (``#index tokens``), marks, and the band bar."""
        segs = [Segment(f"{y + 1:>{self.number_width}} ", GUTTER_STYLE)]
        starting = self.starts_at.get(y)
        if starting:
            i = starting[0]
            c = self.chunks[i]
            over = self.limit is not None and c.tokens > self.limit
            colour = "#ff5f5f" if over or c.warnings else BAND_FG[i % 2]
            label = f"#{i}".ljust(5) + f"{c.tokens}".rjust(5)
            if len(starting) > 1:
                label = f"#{i}+{len(starting) - 1}".ljust(5) + f"{c.tokens}".rjust(5)
            style = Style(color=colour, bold=i == selected)
            if i in self.differ:
                style += Style(underline=True)
            segs.append(Segment(label[:10].ljust(10), style))
        else:
            segs.append(Segment(" " * 10))
        if y + 1 in self.marks:
            sev = "error" if any(m.severity == "error" for m in self.marks[y + 1]) else self.marks[y + 1][0].severity
            segs.append(Segment("●", Style(color=SEVERITY_COLOURS.get(sev, "#e5c07b"))))
        elif y in self.cut_lines:
            segs.append(Segment("✂", Style(color="#ff8787")))
        elif starting and starting[0] in self.differ:
            segs.append(Segment("≠", Style(color="#e5c07b", bold=True)))
        else:
            segs.append(Segment(" "))
        start, _ = self.line_span(y)
        segs.append(self._bar(start, selected))
        segs.append(Segment(" "))
        return segs

    def continuation_gutter(self, offset: int, selected: int | None) -> list[Segment]:
        """The gutter of a wrapped line's later rows: blank, with the band bar of the text at ``offset``."""
        return [Segment(" " * (self.gutter_width - 2)), self._bar(offset, selected), Segment(" ")]

    def _bar(self, offset: int, selected: int | None) -> Segment:
        """The band bar for the row starting at ``offset``: the owner's colour, full block when selected."""
        region = self.region_at(offset)
        if not region.chunks:
            return Segment(" ")
        owner = region.owner
        sel = owner == selected or (selected in region.chunks if selected is not None else False)
        bar_colour = OVERLAP_SELECTED_BG if len(region.chunks) > 1 else BAND_FG[owner % 2]
        return Segment("█" if sel else "▌", Style(color=bar_colour))

    # --- clicks ------------------------------------------------------------------------------------------------

    def chunk_at(self, y: int, column: int | None, selected: int | None = None,
                 within: tuple[int, int] | None = None) -> int | None:
        """The chunk under a click at line ``y``, content column ``column`` (None: anywhere on the line).

        ``within``: the offsets ``[start, end)`` of the wrapped row clicked; the column counts from its start,
        and a click past its text lands on ``end`` (the text the row's fill stands for).
        In overlapping text the chunk that is not selected yet wins, so clicking the overlap flips between the
        two chunks that share it.
        """
        if not (0 <= y < self.line_count):
            return None
        start, end = self.line_span(y)
        offset = start
        if column is not None:
            offset = self._offset_at_column(*(within or (start, end)), column)
        region = self.region_at(offset)
        if not region.chunks:
            # Between chunks (blank lines, front matter): the nearest chunk on this line, else none.
            for off in (end, start):
                r = self.region_at(off)
                if r.chunks:
                    return r.chunks[-1]
            return None
        if selected in region.chunks and len(region.chunks) > 1:
            return next(i for i in region.chunks if i != selected)
        return region.chunks[-1]

    def _offset_at_column(self, start: int, end: int, column: int) -> int:
        cells = 0
        for off in range(start, end):
            ch = self.text[off]
            w = len(TAB) if ch == "\t" else cell_len(visible(ch, oneline=True))
            if cells + w > column:
                return off
            cells += w
        return end


def _region_code(region: Region | None) -> int:
    """A region as one int: owner chunk << 1 | overlap flag; -1 for text in no chunk."""
    if region is None or not region.chunks:
        return -1
    return (region.owner << 1) | (1 if len(region.chunks) > 1 else 0)


def marks_from_findings(findings: Iterable[Any]) -> list[Mark]:
    """Lint findings as line marks (duck-typed: ``line``, ``severity``, ``rule``/``code``, ``message``)."""
    out = []
    for f in findings:
        line = getattr(f, "line", None) or getattr(f, "start_line", None)
        if not line:
            continue
        rule = getattr(f, "rule", None) or getattr(f, "code", "") or ""
        msg = getattr(f, "message", "") or ""
        out.append(Mark(int(line), str(getattr(f, "severity", "warning")), f"{rule}: {msg}" if rule else msg))
    return out
