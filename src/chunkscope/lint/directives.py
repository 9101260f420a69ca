"""Inline directives: the ``<!-- chunkscope: ignore RULE -->`` comments an author silences a rule with.

``<!-- chunkscope: ignore split-fence, oversize -->`` silences those rules (or ``all``) for the next block;
``<!-- chunkscope: ignore-file duplicate -->`` anywhere silences them for the whole file. In MDX,
``{/* chunkscope: ignore split-fence */}`` does the same. A directive inside a code block is an example of the
syntax, not a directive.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from chunkscope.lint.context import is_comment
from chunkscope.lint.registry import RULES
from chunkscope.lint.settings import split_ids

if TYPE_CHECKING:
    from chunkscope.document.loader import Document

_DIRECTIVE = re.compile(
    r"(?:<!--|\{/\*)\s*chunkscope:\s*(ignore-file|ignore)\b(.*?)\s*(?:-->|\*/\})", re.DOTALL
)


@dataclass
class Directives:
    """What a document's inline comments silence: rule ids for the whole file, and per line range."""

    file: frozenset[str] = frozenset()
    ranges: list[tuple[int, int, frozenset[str]]] = field(default_factory=list)
    #: (line, id) of every rule id a comment names that lint does not have.
    unknown: list[tuple[int, str]] = field(default_factory=list)

    def silences(self, rule: str, line: int) -> bool:
        if rule in self.file:
            return True
        return any(a <= line <= b and rule in ids for a, b, ids in self.ranges)


def read_directives(doc: Document) -> Directives:
    """The directives of one document (its Markdown is parsed only when it holds one)."""
    text = doc.text
    out = Directives()
    if "chunkscope:" not in text:
        return out  # the common case, at C speed
    st = doc.structure
    code = [(b.start, b.end) for b in st.blocks if b.kind in ("fence", "code")]
    blocks = st.blocks
    starts = [b.start for b in blocks]
    file_ids: set[str] = set()
    for m in _DIRECTIVE.finditer(text):
        if any(s <= m.start() < e for s, e in code):
            continue  # an example of the syntax inside a code block, not a directive
        line = st.line_of(m.start())
        ids: set[str] = set()
        for rid in split_ids(m.group(2)):
            if rid == "all":
                ids |= set(RULES)
            elif rid in RULES:
                ids.add(rid)
            else:
                out.unknown.append((line, rid))
        if m.group(1) == "ignore-file":
            file_ids |= ids
            continue
        # The next block after the comment, skipping other comments (several directives may stack up).
        i = bisect_right(starts, m.end() - 1)
        while i < len(blocks) and is_comment(text, blocks[i]):
            i += 1
        if i < len(blocks):
            b = blocks[i]
            out.ranges.append((b.start_line, b.end_line, frozenset(ids)))
    out.file = frozenset(file_ids)
    return out
