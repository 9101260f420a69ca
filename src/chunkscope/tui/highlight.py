"""Syntax colours of a document, per line: pygments' Markdown lexer (code fences lexed by their language).

Computed once per document object (kept in a weak map, so a reloaded file is lexed again) and shared by every
view of the file, whatever the strategy: re-chunking never re-lexes.
"""

from __future__ import annotations

import threading
import weakref
from functools import lru_cache

from rich.style import Style

from chunkscope.document.loader import Document

#: Per line: (first column, end column, style) ranges, columns being character offsets within the line.
LineColours = list[tuple[int, int, Style]]

_CACHE: "weakref.WeakKeyDictionary[Document, list[LineColours]]" = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()
#: The pygments style the source is drawn in (its background is dropped: chunk bands own the background).
THEME = "github-dark"


#: The theme's colour for plain text, written out so the first frame (text before its colours) needs neither
#: pygments nor rich's syntax module; a test checks it against the theme.
PLAIN = Style(color="#e6edf3")


@lru_cache(maxsize=1)
def _theme():
    from rich.syntax import PygmentsSyntaxTheme

    return PygmentsSyntaxTheme(THEME)


@lru_cache(maxsize=512)
def token_style(ttype) -> Style:
    """A pygments token type as a foreground-only rich Style."""
    s = _theme().get_style_for_token(ttype)
    return Style(color=s.color, bold=s.bold, italic=s.italic, underline=s.underline)


def cached_line_colours(doc: Document) -> list[LineColours] | None:
    """`line_colours` of ``doc`` when they are made already (this document was shown before), else None."""
    return _CACHE.get(doc)


def line_colours(doc: Document) -> list[LineColours]:
    """Colour ranges for every line of ``doc`` (lines as ``doc.structure.line_starts`` counts them)."""
    cached = _CACHE.get(doc)
    if cached is not None:
        return cached
    colours = _lex(doc.text, len(doc.structure.line_starts))
    with _LOCK:
        _CACHE[doc] = colours
    return colours


def _lex(text: str, n_lines: int) -> list[LineColours]:
    from pygments.lexers.markup import MarkdownLexer

    # pygments turns CRLF and CR into LF before lexing; lines then match the structure's line table one to one,
    # and columns within a line are unchanged because line breaks are never part of a line.
    norm = text.replace("\r\n", "\n").replace("\r", "\n") if "\r" in text else text
    lexer = MarkdownLexer(stripnl=False, stripall=False, ensurenl=False, tabsize=0)
    lines: list[LineColours] = [[] for _ in range(max(n_lines, 1))]
    y, col = 0, 0
    plain = token_style(_text_token())
    for ttype, value in lexer.get_tokens(norm):
        style = token_style(ttype)
        parts = value.split("\n")
        for k, part in enumerate(parts):
            if k:
                y += 1
                col = 0
                if y >= len(lines):
                    lines.append([])
            if part:
                end = col + len(part)
                if style != plain:
                    row = lines[y]
                    if row and row[-1][1] == col and row[-1][2] == style:
                        row[-1] = (row[-1][0], end, style)  # merge runs of one style: fewer segments to draw
                    else:
                        row.append((col, end, style))
                col = end
    return lines[:max(n_lines, 1)]


def _text_token():
    from pygments.token import Text

    return Text
