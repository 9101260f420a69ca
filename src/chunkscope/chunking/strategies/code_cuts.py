"""Where an over-limit code block may be cut: between definitions, outermost level first (seed 000).

Seed 000 splits a code block that does not fit "by function/class". The rule, as implemented:

* The block's lines are read as code: the fence lines themselves, the container's margin (a list item's
  indentation, a quote's ``>``) and lines inside a multi-line string or block comment never count.
* A *level* is an indentation. At a level, each line starting there begins an *item*: a definition (Python
  ``def``/``async def``/``class``, Rust ``fn``/``impl``/``struct``/``enum``/``trait``/``mod`` with ``pub``,
  JavaScript/TypeScript ``function``/``class``/``const f = () =>``/methods, Go ``func``/``type``, Java/C#/Kotlin
  members with modifiers, C/C++ functions, ``if __name__ == "__main__":``) or anything else. Closing brackets and
  continuations (``}``, ``)``, ``else``, ``where``, …) begin nothing.
* A *definition boundary* is the start of a definition, or the start of the first other item after one (the
  script that follows the functions). It moves up over the lines that belong to the definition below them:
  decorators, attributes (``#[derive]``, ``@Override``, ``[Fact]``, ``template<…>``) and comments, up to the
  nearest blank line.
* The cuts are the boundaries of the outermost level that has any, never at the first line. A piece that is
  still over the budget (a class, an ``impl``, a JS class) is cut the same way again, which finds the
  definitions one level inside it (its methods). Only a piece with no definition boundary left (a single
  function) falls back to blank lines, then lines; the strategy decides that, not this module.

Lint reads the same cuts (`needed_cuts`) to tell a cut between definitions from a cut mid-body, or from a cut
inside a class that would have fitted whole.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from dataclasses import dataclass
from typing import Callable, Sequence

_MEMBER_MODIFIERS = (r"(?:public|private|protected|internal|static|final|abstract|sealed|open|data|override|"
                     r"virtual|async|suspend|inline|export|default|readonly|synchronized|extern|unsafe|const)")
#: Words a C-like "type name(...)" line must not start with or be named: statements, not definitions.
_STATEMENTS = frozenset("""return else elif elsif if unless for foreach while until switch match when case do loop
    try catch rescue throw raise assert await yield del not new delete go defer goto print echo puts using import
    from with lambda in is and or sizeof typeof super this function lock select where set values""".split())

# A line that starts a definition, from its first non-space character.
_DEF_LINE = re.compile(
    r"""(?:
      (?:export\s+(?:default\s+)?)?(?:declare\s+)?(?:abstract\s+)?(?:async\s+)?
      (?:def|class|function\*?|interface|enum|namespace|module|object|trait)\s+[\w$]
    | (?:pub(?:\s*\([^)]*\))?\s+)?(?:default\s+)?(?:(?:const|async|unsafe|extern(?:\s+"[^"]*")?)\s+)*
      (?:(?:fn|impl|struct|enum|trait|mod|union)(?:\s+|(?=<))[\w<]|macro_rules!)
    | (?:export\s+)?(?:const|let|var)\s+[\w$]+\s*(?::[^=]+)?=\s*(?:async\s+)?
      (?:function\b|\([^)]*\)\s*(?::\s*[^=]+?)?\s*=>|[\w$]+\s*=>|\(\s*$)
    | """ + _MEMBER_MODIFIERS + r"""(?:\s+""" + _MEMBER_MODIFIERS + r""")*\s+(?!(?:with|for|if|return|await)\b)
      (?:class|interface|enum|record|struct|fun|void|[\w<>\[\],.?]+\s+\w+\s*\()
    | (?:func|fun)\s
    | type\s+\w+\s+(?:struct|interface)\b
    | if\s+__name__\s*==
    )""",
    re.X,
)
# A member of a class body written without a keyword (JS/TS methods, C++ constructors, gtest's TEST(...)): a
# name, its parameters and the opening brace of its body on the same line.
_METHOD_LINE = re.compile(
    r"(?P<mods>(?:(?:static|async|get|set|public|private|protected|readonly|override|abstract|virtual|explicit)\s+)*)"
    r"\*?\s*#?(?P<name>[A-Za-z_$~][\w$]*)\s*(?:<[^>]*>)?\s*\([^;]*\)\s*(?:const\s*)?(?:noexcept\s*)?"
    r"(?:override\s*)?(?::\s*[^{;=]+?)?\s*\{\s*\}?\s*$"
)
# A C-like function: a return type, a name, parameters, then the body's brace (or nothing: it opens below).
_C_FUNCTION = re.compile(
    r"(?P<first>[\w:<>,*&\[\]]+)(?<!:)\s+(?:[\w:<>,*&\[\]]+\s+)*[*&]*(?P<name>~?[\w:]+)\s*\([^;]*\)\s*"
    r"(?:const\s*)?(?:noexcept\s*)?(?:override\s*)?(?:->\s*[^{;]+?)?\s*\{?\s*$"
)
# Lines that belong to the definition below them: decorators, attributes, comments, doc comments, templates.
_PREFIX_LINE = re.compile(r"(?:@|#\[|#!\[|///|//|#|/\*|\*|--|template\s*<|\[[A-Za-z_][\w.]*(?:\(.*\))?\]\s*$)")
# Lines that continue the item above them instead of beginning one.
_CONTINUATION = re.compile(r"""(?:[})\].,;:?+\-*/&|=<>]|(?:else|elif|except|finally|catch|where|then|do|end)\b
                               |\{\s*$)""", re.X)
_FENCE_LINE = re.compile(r"(?:`{3,}|~{3,})")  # an opening (with its info string) or closing fence line


@dataclass(frozen=True, slots=True)
class CodeLine:
    """One line of a code block, read as code."""

    start: int  # offset of the line's first character (margin included): where a cut before it goes
    indent: int  # columns of indentation after the container's margin (a tab counts 4)
    code: str  # the line without margin, indentation or line break; "" for a blank line
    quoted: str = ""  # "string" or "comment" when the line starts inside a multi-line string or block comment


def fence_margin(line_starts: Sequence[int], fence_start: int) -> int:
    """The column of a fence that starts at ``fence_start``: that much of each of its lines is its container's
    (a list item's indentation, a quote's ``>``), the ``margin`` of `code_lines`."""
    return fence_start - line_starts[bisect_right(line_starts, fence_start) - 1]


def code_lines(text: str, line_starts: Sequence[int], start: int, end: int, margin: int) -> list[CodeLine]:
    """The lines of ``[start, end)`` as code, from the line holding ``start``; fence lines are left out.

    ``margin`` is the column of the fence itself: that many characters of each line belong to the container
    (spaces of a list item, ``>`` of a quote) and are not indentation.
    """
    first = bisect_right(line_starts, start) - 1
    last = bisect_left(line_starts, end)
    out: list[CodeLine] = []
    quoted = ""
    for k in range(max(first, 0), last):
        ls = line_starts[k]
        le = line_starts[k + 1] if k + 1 < len(line_starts) else len(text)
        raw = text[ls:le].rstrip("\r\n")
        body = _strip_margin(raw, margin)
        code = body.lstrip(" \t")
        indent = len(body[:len(body) - len(code)].expandtabs(4))
        code = code.rstrip()
        if not quoted and _FENCE_LINE.match(code):
            continue
        out.append(CodeLine(ls, indent, code, quoted))
        quoted = _quote_state(code, quoted)
    return out


def _strip_margin(line: str, margin: int) -> str:
    """The line past the container's margin: up to ``margin`` leading spaces or quote markers."""
    k = 0
    while k < margin and k < len(line) and line[k] in " \t>":
        k += 1
    return line[k:]


def _quote_state(code: str, quoted: str) -> str:
    """Whether the next line starts inside a Python triple-quoted string or a ``/* … */`` comment."""
    if quoted == "comment":
        return "" if "*/" in code else "comment"
    for q in ('"""', "'''"):
        if code.count(q) % 2:
            if not quoted:
                return "string"
            if quoted == "string":
                return ""
    if quoted:
        return quoted
    if code.startswith("/*") and "*/" not in code[2:]:
        return "comment"
    return ""


def is_definition(code: str) -> bool:
    """Whether a line (from its first non-space character) starts a function, class, impl, … ."""
    if _DEF_LINE.match(code):
        return True
    m = _METHOD_LINE.match(code)
    if m and (m.group("mods") or m.group("name").lower() not in _STATEMENTS):
        return True  # with a modifier ("static from(x) {") the name may be any word
    m = _C_FUNCTION.match(code)
    return bool(m and m.group("first").lower() not in _STATEMENTS and m.group("name").lower() not in _STATEMENTS)


def _is_prefix(line: CodeLine) -> bool:
    return not line.quoted and bool(_PREFIX_LINE.match(line.code))


def _kind(lines: Sequence[CodeLine], k: int) -> str:
    """What line ``k`` begins at its own level: ``def``, ``other``, or ``""`` (a continuation, a prefix)."""
    line = lines[k]
    if _is_prefix(line):
        # A comment directly above more code belongs to it; one followed by a blank line stands alone.
        nxt = lines[k + 1] if k + 1 < len(lines) else None
        return "" if nxt is not None and nxt.code else "other"
    if _CONTINUATION.match(line.code):
        return ""
    return "def" if is_definition(line.code) else "other"


def _levels(lines: Sequence[CodeLine]) -> list[int]:
    return sorted({ln.indent for ln in lines if ln.code and not ln.quoted})


def _boundaries_at(lines: Sequence[CodeLine], level: int) -> list[int]:
    """Indexes of the lines a cut goes before at one level: definitions and the first item after one."""
    out: list[int] = []
    prev = ""
    for k, line in enumerate(lines):
        if not line.code or line.quoted or line.indent > level:
            continue
        if line.indent < level:
            prev = ""  # a shallower line closes the run: the next item has another parent
            continue
        kind = _kind(lines, k)
        if not kind:
            continue
        if kind == "def" or prev == "def":
            out.append(_lead(lines, k, level))
        prev = kind
    return out


def _lead(lines: Sequence[CodeLine], k: int, level: int) -> int:
    """Move a cut before line ``k`` up over the decorators, attributes and comments that belong to it.

    The walk passes block-comment lines, closing brackets at the level and deeper lines (a decorator's
    arguments over several lines) but moves the cut only to a prefix line at the level; a blank line or
    any other line at the level stops it.
    """
    top = k
    j = k - 1
    while j >= 0:
        line = lines[j]
        if not line.code:
            break
        if line.quoted == "comment" or (line.code.startswith("*") and line.indent >= level):
            j -= 1
            continue
        if line.quoted or line.indent < level:
            break
        if line.indent == level:
            if _is_prefix(line):
                top = j
            elif not line.code.startswith((")", "]")):
                break
        j -= 1
    return top


def definition_cuts(lines: Sequence[CodeLine]) -> list[int]:
    """Offsets to cut a block (or a piece of one) at: the definition boundaries of the outermost level that has
    any, never before the first line. Empty when the lines hold no boundary (a single function)."""
    for level in _levels(lines):
        cuts = sorted({lines[k].start for k in _boundaries_at(lines, level) if k > 0})
        if cuts:
            return cuts
    return []


def boundary_lines(lines: Sequence[CodeLine]) -> set[int]:
    """Offsets of every line that starts a definition boundary, at any level."""
    out: set[int] = set()
    for level in _levels(lines):
        out.update(lines[k].start for k in _boundaries_at(lines, level) if k > 0)
    return out


def needed_cuts(lines: Sequence[CodeLine], end: int, fits: Callable[[int, int], bool]) -> set[int]:
    """The cuts the rule allows in lines ending at ``end`` for a budget: the outermost definition boundaries,
    then, inside each piece that does not fit (``fits(start, end)`` is False), the boundaries one level in, and
    so on. What lint accepts."""
    cuts = definition_cuts(lines)
    out = set(cuts)
    bounds = [lines[0].start, *cuts, end] if lines else []
    for a, z in zip(bounds, bounds[1:]):
        inner = [ln for ln in lines if a <= ln.start < z]
        # Look one level in only where that is a smaller piece: a run with no definition boundary of its own
        # (400 lines of plain statements) would otherwise be asked the same question again, without end.
        if not fits(a, z) and len(inner) < len(lines):
            out |= needed_cuts(inner, z, fits)
    return out
