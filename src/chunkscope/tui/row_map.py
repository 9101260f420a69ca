"""The soft wrap of a source view: which screen rows each line takes at a given width.

The text's wrap depends on the text and the width only, never on the chunks, so a view keeps it across re-chunks of
the same document; the notes drawn after some lines (lint findings, where the embedder stops) wrap with their line,
and a change of notes re-wraps those lines alone (`RowMap.with_notes`).
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from itertools import accumulate

from rich.cells import get_character_cell_size, split_graphemes

from chunkscope.safe_text import visible

#: How a tab is drawn: four spaces, in the wrap and in the bands alike.
TAB = "    "

class RowMap:
    """Soft wrap of a text at a width: the screen rows of each line, and the line and text of each row.

    A line takes at least one row and about ``ceil(cell width / width)``: a row breaks after the last space that
    fits, else at the width (a long word, a URL). Breaks fall between graphemes, and rows are cut from the
    line's drawing by character, not by cell: a wide character or a joined emoji is never cut in two,
    and every character is drawn on exactly one row. Built in one pass over the lines; only lines wider
    than the width are scanned, most of them with ``str.rfind``.

    ``notes``: the text drawn after some lines (0-based line: text, `SourceLayout.notes`). A note is wrapped as
    part of its line's drawing, so it continues on rows of its own instead of running off the edge; a note row
    holds no source character (its offset is the line's end).
    """

    __slots__ = ("text", "width", "line_count", "notes", "_starts", "_text_wrap", "_first", "_chars", "_offs")

    def __init__(self, text: str, line_starts: list[int], width: int, notes: dict[int, str] | None = None) -> None:
        #: The text and width this map is for (a view keeps the map while both are the same).
        self.text = text
        self.width = width = max(width, 1)
        self.line_count = n = len(line_starts)
        self._starts = line_starts
        counts = [1] * n
        #: For lines of more than one row: where each row starts in the line's drawn text (tabs expanded,
        #: control characters shown, the note after it: `LinePieces` concatenated), and the offset of its first
        #: source character.
        chars: dict[int, list[int]] = {}
        offs: dict[int, list[int]] = {}
        for y in range(n):
            a, b = self._bounds(y)
            if b - a <= width and _plain(text, a, b):
                continue
            line_chars, line_offs = _wrap_line(text, a, b, width)
            if len(line_chars) > 1:
                chars[y] = line_chars
                offs[y] = line_offs
                counts[y] = len(line_chars)
        #: The text's own wrap, without notes: kept by every map made from this one by `with_notes`.
        self._text_wrap = (counts, chars, offs)
        self._apply_notes(notes or {})

    def _bounds(self, y: int) -> tuple[int, int]:
        """Offsets of line ``y``, its line break excluded (the break is not drawn: `SourceLayout.line_span`)."""
        text, starts = self.text, self._starts
        a = starts[y]
        b = starts[y + 1] if y + 1 < self.line_count else len(text)
        while b > a and text[b - 1] in "\r\n":
            b -= 1
        return a, b

    def _apply_notes(self, notes: dict[int, str]) -> None:
        counts, chars, offs = self._text_wrap
        if notes:
            counts, chars, offs = counts.copy(), dict(chars), dict(offs)
            for y, note in notes.items():
                if not 0 <= y < self.line_count:
                    continue
                line_chars, line_offs = _wrap_line(self.text, *self._bounds(y), self.width, note)
                counts[y] = len(line_chars)
                if len(line_chars) > 1:
                    chars[y], offs[y] = line_chars, line_offs
                else:
                    chars.pop(y, None)
                    offs.pop(y, None)
        #: The notes this map wraps (a view makes a new map when a layout brings other notes).
        self.notes = notes
        self._chars, self._offs = chars, offs
        self._first = [0, *accumulate(counts)]

    def with_notes(self, notes: dict[int, str]) -> "RowMap":
        """This wrap with other notes: only the lines with a note, before or now, are wrapped again."""
        if notes == self.notes:
            return self
        other = object.__new__(RowMap)
        other.text, other.width, other.line_count = self.text, self.width, self.line_count
        other._starts, other._text_wrap = self._starts, self._text_wrap
        other._apply_notes(notes)
        return other

    @property
    def rows(self) -> int:
        """Rows of the whole text."""
        return self._first[-1]

    def row_of_line(self, y: int) -> int:
        """First row of 0-based line ``y`` (clamped to the text)."""
        return self._first[min(max(y, 0), self.line_count)]

    def row_count(self, y: int) -> int:
        """How many rows line ``y`` takes."""
        return self._first[y + 1] - self._first[y]

    def locate(self, row: int) -> tuple[int, int]:
        """The 0-based line drawn at ``row`` and which of its rows it is (clamped to the text)."""
        if self.line_count == 0:
            return 0, 0
        y = min(max(bisect_right(self._first, row) - 1, 0), self.line_count - 1)
        return y, min(max(row - self._first[y], 0), self.row_count(y) - 1)

    def chars(self, y: int, k: int) -> tuple[int, int | None]:
        """Characters ``[start, end)`` of line ``y``'s drawn text shown on its row ``k`` (end None: the last row)."""
        chars = self._chars.get(y)
        if chars is None:
            return 0, None
        return chars[k], (chars[k + 1] if k + 1 < len(chars) else None)

    def offset(self, y: int, k: int, line_start: int) -> int:
        """Offset of the first character on line ``y``'s row ``k`` (``line_start`` for its first row)."""
        offs = self._offs.get(y)
        return line_start if offs is None or k == 0 else offs[k]

    def span(self, y: int, k: int, line_start: int, line_end: int) -> tuple[int, int]:
        """Offsets ``[start, end)`` of the source text on line ``y``'s row ``k`` (the line's own bounds given)."""
        offs = self._offs.get(y)
        if offs is None:
            return line_start, line_end
        return offs[k], (offs[k + 1] if k + 1 < len(offs) else line_end)

    def row_of_offset(self, y: int, offset: int) -> int:
        """The row showing ``offset``, which lies on 0-based line ``y``."""
        offs = self._offs.get(y)
        k = 0 if offs is None else max(bisect_right(offs, offset) - 1, 0)
        if offs is not None and offs[k] == offset:
            k = bisect_left(offs, offset)  # the line's end starts every note row: the first of them
        return self.row_of_line(y) + k


#: Characters other than printable ASCII, and whether each is drawn as itself in exactly one cell.
_NOT_ASCII = re.compile(r"[^\x20-\x7e]")
_ONE_CELL: dict[str, bool] = {}


def _plain(text: str, a: int, b: int) -> bool:
    """True when ``text[a:b]`` is drawn one cell per character, each as itself: a column is then an index.

    A character of width 1 never joins another into one glyph (joiners and combining marks have width 0), so
    checking the distinct characters one by one is exact; each is measured once per process.
    """
    line = text[a:b]
    if line.isascii():
        return line.isprintable()
    for ch in set(_NOT_ASCII.findall(line)):
        ok = _ONE_CELL.get(ch)
        if ok is None:
            ok = _ONE_CELL[ch] = visible(ch, oneline=True) == ch and get_character_cell_size(ch) == 1
        if not ok:
            return False
    return True


def _wrap_line(text: str, a: int, b: int, width: int, note: str = "") -> tuple[list[int], list[int]]:
    """Row starts of line ``text[a:b]`` wrapped at ``width`` cells: (index in the drawn line, source offset).

    ``note``: drawn after the line's text (already terminal-safe), wrapped with it; its characters have no source
    offset of their own (each counts as the line's end, ``b``).
    """
    if _plain(text, a, b) and (not note or _plain(note, 0, len(note))):
        # One cell per character, drawn as itself: indices are columns, and the search for a space runs at C speed.
        # With a note, on the line and its note together (a note's characters all stand for the line's end).
        drawn, lo, hi = (text, a, b) if not note else (text[a:b] + note, 0, b - a + len(note))
        chars, offs = [0], [a]
        o = lo
        while hi - o > width:
            i = drawn.rfind(" ", o + 1, o + width)  # a space that fits on the row, not its first character
            o = i + 1 if i != -1 else o + width
            chars.append(o - lo)
            offs.append(a + min(o - lo, b - a))
        return chars, offs
    # Anything else is measured as it is drawn (tabs expanded, control characters shown), grapheme by grapheme.
    pieces = [TAB if ch == "\t" else visible(ch, oneline=True) for ch in text[a:b]]
    origins = list(range(a, b))
    if note:
        # One piece per character: a row may break anywhere in the note (after a space when it can).
        pieces.extend(note)
        origins.extend([b] * len(note))
    drawn = "".join(pieces)
    source: list[int] = []  # the source offset of each drawn character
    first = bytearray(len(drawn) + 1)  # 1 where a source character's drawing starts
    pos = 0
    for piece, origin in zip(pieces, origins):
        first[pos] = 1
        source.extend([origin] * len(piece))
        pos += len(piece)
    first[pos] = 1
    spans, total = split_graphemes(drawn)
    chars, offs = [0], [a]
    if total <= width:
        return chars, offs
    col = [0] * (len(spans) + 1)  # the column where each grapheme starts
    for j, (_, _, cells) in enumerate(spans):
        col[j + 1] = col[j] + cells
    row = 0  # the grapheme starting the current row
    space: int | None = None  # the grapheme after the row's last space (a break candidate)
    j = 0
    while j < len(spans):
        if col[j + 1] - col[row] > width and j > row:
            # Grapheme j does not fit: break after the last space, else before j, moved back to the start of the
            # character j belongs to (a tab or an escape is never cut unless it alone is wider than the row).
            brk = space
            if brk is None:
                brk = j
                while brk > row and not first[spans[brk][0]]:
                    brk -= 1
                if brk == row:
                    brk = j
            chars.append(spans[brk][0])
            offs.append(source[spans[brk][0]])
            row = j = brk
            space = None
            continue
        start, end, _ = spans[j]
        j += 1
        if j < len(spans) and j - 1 > row and drawn[start:end] == " " and first[spans[j][0]]:
            space = j
    return chars, offs
