"""A line scanner that finds headings and fenced code blocks as markdown-it would, without parsing the document.

`Document.outline` needs only the headings and the fences of a document, and a full markdown-it parse
costs several times a tokenizer pass. This scanner reproduces markdown-it's answer for ordinary Markdown at the
speed of a few regular expressions over the whole text: only lines whose first non-blank character is one of
``#`~<>$:=-*+`` or a digit (those that could start a heading, fence, quote, HTML block, math block, container,
setext underline or list item) are looked at in Python, and the rules applied to them are markdown-it's own.

It is deliberately cautious: whenever the text holds something whose effect it does not model exactly, it raises
`Unsure` and the caller takes the outline from the full parse. That covers: a setext underline candidate after a
paragraph line; a heading-, fence-, quote- or math-like line inside an HTML block that may or may not have started
(a lone tag cannot interrupt a paragraph) or inside any HTML block in a list; a heading, fence, HTML block, math
or container on a list item's own line; indented fences, quotes, HTML, math or containers (and heading-like lines
indented 4+ columns) while a list may still be open; a ``$$`` line after a paragraph line (math cannot interrupt a
paragraph); a table whose header row looks like a heading, fence, HTML, math or container line; a blockquote
region (see below) that, parsed alone, leaves anything but the quote, headings or rules at its top level; NUL
characters.

What it does model, because real books are full of it:

* front matter, exactly as mdit_py_plugins' rule delimits it;
* fences (CommonMark: ``` or ~~~, < 4 columns of indent, closing run of the same character at least as long, only
  spaces after; no backtick in a backtick fence's info string; unclosed ones run to the end of their container);
* HTML blocks at the top level (types 1-6 of CommonMark: their lines are HTML whatever they look like);
* ``$$`` math blocks after a blank line, and ``:::`` containers, whose inside is scanned as a document of its own
  (markdown-it parses it so: a fence left open inside ends at the container's closing line);
* blockquotes: a quote at the top level runs to the next blank line. When it holds anything heading- or
  fence-like, its inside (the lines without their ``>``) is scanned as a document of its own, as markdown-it
  parses it; a quote with lazy continuation lines or tabs is parsed alone with markdown-it instead: the same
  parser on the same lines from the same state, hence the same answer as the full parse.

Results are line numbers; `chunkscope.document.structure` turns them into offsets with the same rules as parsed blocks.
This module imports nothing of chunkscope (`chunkscope.document.structure` imports it) and markdown-it only when needed.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from functools import lru_cache
from typing import Callable, Sequence

_LINE_BREAK = re.compile(r"\r\n|\r|\n")


def line_starts_of(text: str) -> list[int]:
    """Offsets where each line starts, line breaks being CRLF, CR or LF (as markdown-it counts lines)."""
    starts = [0]
    if "\r" not in text:
        # The common case at C speed: only LF.
        find = text.find
        i = find("\n")
        while i != -1:
            starts.append(i + 1)
            i = find("\n", i + 1)
        return starts
    starts.extend(m.end() for m in _LINE_BREAK.finditer(text))
    return starts


def line_of(line_starts: Sequence[int], offset: int) -> int:
    """The 1-based line holding ``offset``, given the text's `line_starts_of` (the one rule every line number in
    chunkscope is read with: documents, outlines, parses, the app's source view)."""
    return bisect_right(line_starts, offset)


class Unsure(Exception):
    """The scanner cannot be certain it agrees with markdown-it on this text."""


ScannedHeading = tuple[int, int, int, str]  # (first line, last line, level, inline content); 0-based lines
ScannedFence = tuple[int, int]  # (opening line, last line); 0-based, inclusive

#: A line whose first non-blank character may start something that matters (see the module docstring). The
#: pattern starts with the line break before the line: a literal first character lets the regex engine skip
#: through the text at C speed (three times faster than ``^`` in multiline mode); a region's first line, which
#: has no line break before it in the region, is tried with `_CANDIDATE_AT`.
_CANDIDATE = re.compile(r"\n([ \t]*)[#`~<>$:=*+\-0-9]")
_CANDIDATE_AT = re.compile(r"([ \t]*)[#`~<>$:=*+\-0-9]")
_ATX = re.compile(r"#{1,6}(?=[ \t]|$)")
_UNDERLINE = re.compile(r"(?:=+|-+)[ \t]*$")
_LIST_MARK = re.compile(r"(?:[-+*]|[0-9]{1,9}[.)])(?=[ \t]|$)")
#: Container markers at the start of a line's content: list markers and quote markers, with their spaces.
_CONTAINER_PREFIX = re.compile(r"(?:(?:[-+*]|[0-9]{1,9}[.)])(?=[ \t]|$)[ \t]*|>[ \t]*)+")
#: A blank line followed by a line starting in column 0: no list item survives it.
_LIST_RESET = re.compile(r"\n[ \t]*\n(?=[^ \t\n])")
#: The line break before a blank line (or before a whitespace-only tail).
_BEFORE_BLANK = re.compile(r"\n[ \t]*(?:\n|\Z)")
#: Inside a blockquote region, anything that could be or hide a heading or a fence.
_QUOTE_INTERESTING = re.compile(
    r"^[ \t>]*(?:=+|-+)[ \t]*$"
    r"|^[ \t>]*(?:(?:[-+*]|[0-9]{1,9}[.)])(?=[ \t]|$)[ \t>]*)*(?:#|```|~~~|<|\$\$|:::)",
    re.M,
)
#: A line ending a ``$$`` block: its text, stripped, ends with "$$".
_MATH_CLOSE = re.compile(r"\$\$[^\S\n]*$", re.M)
_NOT_QUOTE_LINE = re.compile(r"\n(?! {0,3}>)")
_QUOTE_MARKER = re.compile(r"^ {0,3}> ?", re.M)
#: Top-level block types that surely end where they do in the full parse, though the region was parsed alone:
#: a quote ends at the blank line that ends the region, headings and rules are one line. (A top-level paragraph
#: is refused: alone it may be what a ``$$`` line is when its closing line was cut off.)
_REGION_TOP_TYPES = frozenset({"blockquote_open", "blockquote_close", "heading_open", "heading_close", "hr"})


@lru_cache(maxsize=8)
def _front_matter_close(markers: int) -> re.Pattern[str]:
    # The front matter rule's closing line: "..." in column 0, or at least as many dashes as the opening line
    # indented by fewer than 4 columns (a tab always reaches 4), then only spaces or tabs.
    return re.compile(r"^(?:\.\.\.|[ ]{0,3}-{%d,})[ \t]*$" % markers, re.M)


@lru_cache(maxsize=32)
def _fence_close_re(ch: str, run: int) -> re.Pattern[str]:
    # From the line break before it: a literal first character lets the engine skip through the code fast.
    return re.compile(r"\n {0,3}%s{%d,}[ \t]*(?=\n|\Z)" % (re.escape(ch), run))


@lru_cache(maxsize=8)
def _container_close_re(markers: int) -> re.Pattern[str]:
    # A container's closing line: at least as many colons, < 4 columns of indent, then only spaces or tabs.
    return re.compile(r"^ {0,3}:{%d,}[ \t]*$" % markers, re.M)


@lru_cache(maxsize=1)
def _html_sequences() -> tuple[tuple[re.Pattern[str], re.Pattern[str], bool], ...]:
    from markdown_it.rules_block.html_block import HTML_SEQUENCES

    return tuple(HTML_SEQUENCES)


def _html_open(line: str) -> int:
    """Which of markdown-it's HTML block kinds ``line`` opens (its index in the sequences, the first that matches,
    as markdown-it tries them), or -1. markdown-it's own compiled patterns: nothing to compile here."""
    for i, (open_re, _, _) in enumerate(_html_sequences()):
        if open_re.search(line):
            return i
    return -1


def scan(text: str, parse: Callable[[str], list], math_blank_lines: bool = True
         ) -> tuple[list[ScannedHeading], list[ScannedFence], list[int]]:
    """Headings and fences of ``text`` as markdown-it finds them, or raise `Unsure`.

    ``parse`` is markdown-it's parse function (used on odd blockquote regions only) and ``math_blank_lines`` the
    dollarmath plugin's ``allow_blank_lines`` as that parser is configured. Lines are counted as
    markdown-it counts them (CRLF, CR and LF all end a line). The third item is the line table of the text with
    its line breaks made ``\n`` (the text's own when it has no ``\r``).
    """
    if "\x00" in text:
        raise Unsure("NUL characters (markdown-it rewrites them)")
    s = text if "\r" not in text else text.replace("\r\n", "\n").replace("\r", "\n")
    sc = _Scanner(s, parse, math_blank_lines)
    ls = sc.ls
    # markdown-it drops a final line holding only spaces or tabs (or nothing).
    n_lines = len(ls) if s[ls[-1]:].strip(" \t") else len(ls) - 1
    if n_lines <= 0:
        return [], [], ls
    first = sc.front_matter_end(n_lines)
    if first < n_lines:
        sc.region(first, n_lines)
    return sc.headings, sc.fences, ls


class _Scanner:
    """State shared by the regions of one document: the text, its lines, and what has been found."""

    def __init__(self, s: str, parse: Callable[[str], list], math_blank_lines: bool) -> None:
        self.s = s
        self.ls = line_starts_of(s)
        self.parse = parse
        self.math_blank_lines = math_blank_lines
        self.headings: list[ScannedHeading] = []
        self.fences: list[ScannedFence] = []

    def line_end(self, i: int) -> int:
        """Offset of the line break ending 0-based line ``i`` (or the text's end)."""
        ls = self.ls
        return ls[i + 1] - 1 if i + 1 < len(ls) else len(self.s)

    def line_of(self, pos: int) -> int:
        """0-based, as the scanner counts lines."""
        return line_of(self.ls, pos) - 1

    def front_matter_end(self, n_lines: int) -> int:
        """The first line after front matter, as mdit_py_plugins' front_matter rule decides it (0 if none)."""
        s = self.s
        if not s.startswith("-") or n_lines < 2:
            return 0
        first = s[:self.line_end(0)]
        markers = len(first) - len(first.lstrip("-"))
        if markers < 3:
            return 0
        m = _front_matter_close(markers).search(s, self.ls[1])
        if m is None:
            return 0  # never closed: the rule does not match, line 0 is ordinary text
        close = self.line_of(m.start())
        return close + 1 if close < n_lines else 0

    def region(self, first: int, stop: int) -> None:
        """Scan lines ``[first, stop)``, a document of its own to markdown-it (the whole body, or a container's
        inside): blocks left open end at line ``stop - 1``."""
        s, ls = self.s, self.ls
        lo = ls[first]
        hi = self.line_end(stop - 1)  # searches never look past the region's last line
        headings, fences = self.headings, self.fences

        html_until = -1  # offsets before this may be inside an HTML block that may or may not have started
        skip_until = -1  # offsets before this belong to a block already handled
        list_end = -1  # end of the last list-item line seen: a list may be open after it
        clean_lines: set[int] = {first - 1}  # lines after which no paragraph is open (headings, closing fences)

        def in_list(line_start: int) -> bool:
            return list_end >= 0 and _LIST_RESET.search(s, list_end, line_start) is None

        def after_paragraph(li: int) -> bool:
            """Line ``li - 1`` may be paragraph text (so ``li`` may be its continuation or setext underline)."""
            if li - 1 in clean_lines:
                return False
            return bool(s[ls[li - 1]:ls[li] - 1].strip(" \t"))

        search = _CANDIDATE.search
        at = lo  # where to look for the next candidate: always a line start or a line break
        while True:
            # A search per candidate, restarted after each block handled whole (fences, HTML, quotes, math):
            # the lines inside those are never looked at.
            if skip_until > at:
                at = skip_until
            if at == lo or (at < hi and s[at - 1] == "\n"):  # at a line start: try that line first
                m = _CANDIDATE_AT.match(s, at, hi)
                pos = at
            else:
                m = None
            if m is None:
                m = search(s, at, hi)
                if m is None:
                    break
                pos = m.start() + 1
            indent = m.group(1)
            cpos = m.end(1)
            c = s[cpos]
            at = cpos + 1  # past this line's first character: the next search finds a later line
            if (c == "`" or c == "~") and not s.startswith(c * 3, cpos):
                continue  # the most common candidate by far: a line opening with a code span
            le = s.find("\n", cpos, hi)
            if le == -1:
                le = hi
            line = s[cpos:le]
            # Columns of indentation: from columns 0-3 a tab always reaches column 4, so any tab means ">= 4".
            width = 4 if "\t" in indent else len(indent)

            in_html = pos < html_until
            li = bisect_right(ls, pos) - 1  # `line_of`, 0-based, inlined: once per candidate line

            if c == "#":
                hm = _ATX.match(line)
                if hm is None:
                    continue  # "#foo" or "#######": paragraph text
                if in_html:
                    raise Unsure("heading-like line in an HTML block that may have started")
                if width >= 4:
                    if in_list(pos):
                        raise Unsure("heading-like line indented 4+ columns where a list may be open")
                    continue  # indented code or paragraph continuation
                if "|" in line and self._delimiter_row_after(le, hi):
                    raise Unsure("heading-like table header")
                # Indented 1-3 columns inside a list item it is still a heading starting at its "#".
                level = hm.end()
                headings.append((li, li, level, _atx_content(line[level:])))
                clean_lines.add(li)
                continue

            if c == "`" or c == "~":
                run = len(line) - len(line.lstrip(c))
                if run < 3 or (c == "`" and "`" in line[run:]):
                    continue  # paragraph text
                if in_html:
                    raise Unsure("fence-like line in an HTML block that may have started")
                if width >= 1 and in_list(pos):
                    raise Unsure("indented fence where a list may be open")
                if width >= 4:
                    continue
                if "|" in line and self._delimiter_row_after(le, hi):
                    raise Unsure("fence-like table header")
                # Its lines are code whatever they look like: jump to the closing line (same character, at
                # least as long, < 4 columns of indent, only spaces after) or the end of the region.
                cm = _fence_close_re(c, run).search(s, le, hi) if le < hi else None
                if cm is None:
                    fences.append((li, stop - 1))
                    break
                close = self.line_of(cm.start() + 1)
                fences.append((li, close))
                clean_lines.add(close)
                skip_until = cm.end() + 1
                continue

            if c == ">":
                if in_html:
                    raise Unsure("blockquote in an HTML block that may have started")
                if width >= 1 and in_list(pos):
                    raise Unsure("indented blockquote where a list may be open")
                if width >= 4:
                    continue
                bm = _BEFORE_BLANK.search(s, pos, hi)
                end = bm.start() if bm is not None else hi
                skip_until = end + 1
                quote = s[pos:end]
                if _NOT_QUOTE_LINE.search(quote) is None and _QUOTE_INTERESTING.search(quote) is None:
                    continue  # quote lines only, none heading- or fence-like: nothing to record
                self._quote(quote, li)
                continue

            if c == "<":
                if width >= 4 and not in_list(pos):
                    continue
                # Sure to open an HTML block here: at the top level, of a kind that may interrupt a paragraph
                # (all but the 7th, a lone tag, which cannot: then it depends on the paragraph before).
                top = width < 4 and not in_html and (width == 0 or not in_list(pos))
                i = _html_open(line)
                if i < 0:
                    continue  # paragraph text
                if "|" in line and self._delimiter_row_after(le, hi):
                    raise Unsure("HTML-like table header")  # a table's rows end at a heading or a fence
                close_re = _html_sequences()[i][1]
                if i < 5:  # ends at the line holding its closing sequence, blank lines or not
                    if close_re.search(line):
                        end = le
                    else:
                        cm = close_re.search(s, le, hi)
                        end = hi if cm is None else _find_or(s, "\n", cm.end(), hi)
                else:  # ends before a blank line
                    bm = _BEFORE_BLANK.search(s, le, hi)
                    end = hi if bm is None else bm.start()
                if top and i < 6:
                    skip_until = end + 1  # its lines are HTML, whatever they look like
                    clean_lines.add(self.line_of(end))
                else:
                    html_until = max(html_until, end + 1)  # they may be: refuse anything that matters
                continue

            if c == "$":
                if not line.startswith("$$"):
                    continue
                if in_html or (width >= 1 and in_list(pos)):
                    raise Unsure("$$ in an HTML block or a list")
                if width >= 4:
                    continue
                if li > first and after_paragraph(li):
                    raise Unsure("$$ after a paragraph line (math cannot interrupt a paragraph)")
                if "|" in line and self._delimiter_row_after(le, hi):
                    raise Unsure("$$ table header")
                math_end = self._math_end(line, li, stop)
                if math_end is not None:
                    skip_until = math_end + 1
                    clean_lines.add(self.line_of(math_end))
                continue  # or paragraph text, when the math block never closes

            if c == ":":
                run = len(line) - len(line.lstrip(":"))
                if run < 3:
                    continue
                if in_html or (width >= 1 and in_list(pos)):
                    raise Unsure("::: in an HTML block or a list")
                if width >= 4:
                    continue
                if "|" in line and self._delimiter_row_after(le, hi):
                    raise Unsure("::: table header")
                close = self._container_close(li, run, stop)
                if li + 1 < close:
                    self.region(li + 1, close)
                if close >= stop:
                    break  # never closed: the container takes the rest of the region
                end = self.line_end(close)
                skip_until = end + 1
                clean_lines.add(close)
                continue

            if c == "=" or c == "-":
                if _UNDERLINE.match(line):
                    if in_html:
                        raise Unsure("setext underline candidate in an HTML block that may have started")
                    if li > first and after_paragraph(li):
                        raise Unsure("setext underline candidate after a paragraph line")
                if c == "=":
                    continue

            # List items: "-", "*", "+", "1." or "1)" followed by a space, a tab or the end of the line.
            if _LIST_MARK.match(line) is None:
                continue
            list_end = le
            prefix = _CONTAINER_PREFIX.match(line)
            rest = line[prefix.end():] if prefix else line  # a list mark matched, so the prefix always does
            if rest[:1] == "#" and _ATX.match(rest):
                raise Unsure("heading on a list item's line")
            if rest.startswith(("```", "~~~", "$$", ":::")):
                raise Unsure("fence, math or container on a list item's line")
            if rest[:1] == "<" and _html_open(rest) >= 0:
                raise Unsure("HTML block on a list item's line")

    def _delimiter_row_after(self, le: int, hi: int) -> bool:
        """The next line could be a table's delimiter row (markdown-it tries tables before anything else)."""
        if le >= hi:
            return False
        nxt = self.s[le + 1:_find_or(self.s, "\n", le + 1, hi)].lstrip(" \t")
        return nxt[:1] in ("|", ":", "-")

    def _math_end(self, line: str, li: int, stop: int) -> int | None:
        """End offset of a ``$$`` math block opening on line ``li`` (dollarmath's rule, labels off), or None
        when the rule does not match (then the line is paragraph text)."""
        body = line.strip()
        if len(body) > 3:
            if body.endswith("$$"):
                return self.line_end(li)
            if "$$" in line[2:]:
                return None
        if li + 1 >= stop:
            return None
        lo, hi = self.ls[li + 1], self.line_end(stop - 1)
        m = _MATH_CLOSE.search(self.s, lo, hi)
        if not self.math_blank_lines:
            bm = _BEFORE_BLANK.search(self.s, lo - 1, hi)
            if bm is not None and (m is None or bm.start() < m.start()):
                return None  # a blank line first: no math block
        return None if m is None else _find_or(self.s, "\n", m.end(), hi)

    def _container_close(self, li: int, markers: int, stop: int) -> int:
        """The line closing a ``:::`` container opened on ``li`` (mdit_py_plugins' rule), or ``stop``."""
        if li + 1 >= stop:
            return stop
        m = _container_close_re(markers).search(self.s, self.ls[li + 1], self.line_end(stop - 1))
        return stop if m is None else self.line_of(m.start())

    def _quote(self, quote: str, first_line: int) -> None:
        """Headings and fences of a top-level blockquote region (up to a blank line).

        When every line starts with ``>`` (no lazy continuation) and there is no tab, markdown-it parses the quote's
        inside as a document of its own made of the lines without their ``>`` and one following space: so is it
        scanned here. Otherwise the region alone is parsed with markdown-it.
        """
        if "\t" not in quote and _NOT_QUOTE_LINE.search(quote) is None:
            inner = _Scanner(_QUOTE_MARKER.sub("", quote), self.parse, self.math_blank_lines)
            inner.region(0, len(inner.ls))
            self.headings.extend((a + first_line, b + first_line, lv, c) for a, b, lv, c in inner.headings)
            self.fences.extend((a + first_line, b + first_line) for a, b in inner.fences)
            return
        pending: list[int] | None = None
        # Its line break too, as the full parse always has one after every line (see `parse_structure`).
        for tok in self.parse(quote + "\n"):
            t = tok.type
            if tok.level == 0 and t not in _REGION_TOP_TYPES:
                raise Unsure(f"{t} at the top level of a blockquote region")
            if t == "heading_open" and tok.map:
                pending = [tok.map[0], max(tok.map[1], tok.map[0] + 1) - 1, int(tok.tag[1])]
            elif t == "inline" and pending is not None:
                self.headings.append((first_line + pending[0], first_line + pending[1], pending[2], tok.content))
                pending = None
            elif t == "fence" and tok.map:
                self.fences.append((first_line + tok.map[0], first_line + max(tok.map[1], tok.map[0] + 1) - 1))


def _find_or(s: str, sub: str, start: int, end: int) -> int:
    i = s.find(sub, start, end)
    return end if i == -1 else i


def _atx_content(after: str) -> str:
    """markdown-it's heading content: the text after the #s, a closing run of #s (after a space) and the
    surrounding spaces dropped."""
    from markdown_it.common.utils import mdTrim

    r = after.rstrip(" \t")
    r2 = r.rstrip("#")
    if r2 and r2[-1] in " \t":
        r = r2
    return mdTrim(r)
