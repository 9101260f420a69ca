"""What a rule reads: a `LintContext` per document, built once, and the `LintRun` the documents of a run share.

The context holds the document, its chunks, the strategy and its limits, the configuration, the tokenizer the
limits are counted in, and the lookups several rules need (where a range is cut between chunks, positions,
budgets). The run holds what crosses documents: the settings, how paths are shown, state a rule keeps from one
document to the next (the first occurrence of every chunk text), and the optional inputs (`rule.Input`) a rule
may need, such as the chunks' embeddings.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from chunkscope.document.structure import first_content
from chunkscope.tokens import get_tokenizer
from chunkscope.lint.findings import Finding
from chunkscope.lint.rule import Input

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

    from chunkscope.chunking.model import Chunk
    from chunkscope.chunking.strategy import Limits, Strategy
    from chunkscope.config.reader import Config
    from chunkscope.document.loader import Document
    from chunkscope.retrieval.neighbours import Neighbourhoods
    from chunkscope.document.structure import Block, Structure
    from chunkscope.tokens import SliceCounter
    from chunkscope.lint.rule import Rule
    from chunkscope.lint.settings import LintSettings

T = TypeVar("T")

#: Anchored by ``match(text, start, end)``: the block is one comment and nothing else.
_COMMENT_ONLY = re.compile(r"(?:(?:<!--(?:(?!-->).)*-->|\{/\*(?:(?!\*/\}).)*\*/\})\s*)+\Z", re.DOTALL)


def is_comment(text: str, b: Block) -> bool:
    """A block that is nothing but an HTML (or MDX) comment: invisible to a reader, skipped by the rules."""
    if b.kind not in ("html", "paragraph", "jsx") or not text.startswith(("<!--", "{/*"), b.start):
        return False
    return _COMMENT_ONLY.match(text, b.start, b.end) is not None


class ChunkEmbeddings(Protocol):
    """One vector per chunk of a tree, for rules that compare what a model makes of the chunks (`Input.EMBEDDINGS`).

    Embeddings kept in a vector store also answer ``neighbourhoods()`` (`neighbours.StoredEmbeddings`); the rules
    that read neighbourhoods (``hub``, ``orphan``, ``near-duplicate``) find nothing with embeddings that do not.
    """

    def vector(self, path: str, index: int) -> Sequence[float] | NDArray[np.floating[Any]] | None:
        """The vector of chunk ``index`` of the document at ``path`` (None when it has none); a list or a numpy
        array (what a store reads back)."""
        ...


class LintRun:
    """What the documents of one lint run share.

    Args:
        settings: the validated ``[lint]`` settings and rule choices.
        config: the configuration they came from (None: defaults).
        display: maps a document's path to the path findings show (messages naming another file use it too).
        embeddings: the chunks' vectors, when the caller has them; rules that need them are skipped otherwise.
    """

    def __init__(self, settings: LintSettings, config: Config | None = None,
                 display: Callable[[str], str] | None = None, embeddings: ChunkEmbeddings | None = None) -> None:
        self.settings = settings
        self.config = config
        self.display: Callable[[str], str] = display or (lambda p: p)
        self.embeddings = embeddings
        #: Remarks about the documents (an unknown rule id in an inline comment), in the order they were met.
        self.notes: list[str] = []
        self._state: dict[str, Any] = {}
        self._parses: dict[str, Structure] = {}

    @property
    def inputs(self) -> frozenset[Input]:
        """The optional inputs this run has."""
        return frozenset({Input.EMBEDDINGS}) if self.embeddings is not None else frozenset()

    def neighbourhoods(self) -> Neighbourhoods | None:
        """The tree's neighbourhoods in embedding space, when the run's embeddings can give them (asked once)."""
        find = getattr(self.embeddings, "neighbourhoods", None)
        return self.shared("neighbourhoods", find) if callable(find) else None

    def structure_of(self, doc: Document) -> Structure:
        """The block structure of ``doc``: its own parse when it has one, else that of a document of this run with
        the same text, else its own (parsed now). The parse is a function of the text alone (offsets, lines,
        anchors), and a tree often holds one text many times (a versioned site's copies of an unchanged page):
        each is parsed once (the parse was half of lint's own time on 28 copies of the Rust book, recursive)."""
        if doc.analysis.structure_parsed:
            return doc.structure
        st = self._parses.get(doc.text)
        if st is None:
            st = self._parses[doc.text] = doc.structure
        return st

    def shared(self, key: str, make: Callable[[], T]) -> T:
        """State a rule keeps across the documents of this run (``make()`` on first use), e.g. every chunk text
        seen so far: the rule's own, so the run needs to know nothing about it."""
        if key not in self._state:
            self._state[key] = make()
        return self._state[key]


class LintContext:
    """One document's chunks next to its structure, with the lookups the rules share. Rules only read it."""

    def __init__(self, doc: Document, chunks: Sequence[Chunk], strategy: Strategy, run: LintRun) -> None:
        self.doc = doc
        self.text = doc.text
        # Line numbers come from the outline (the same line table as the parse); the parse itself is made only
        # when a rule that reads blocks runs, so `--select` without them lints a size-only strategy's chunks
        # without parsing the Markdown.
        self.lines = doc.outline  # derived from the parse, when the document has one
        self.chunks = chunks
        self.strategy = strategy
        self.run = run
        self.settings = run.settings
        self.config = run.config
        self.limits: Limits = strategy.limits()
        self.starts = [c.start for c in chunks]
        # Prefix maxima of chunk ends (and which chunk reaches that far): "does any chunk starting at or before
        # x reach y" in one bisect, for any overlap pattern.
        self.reach: list[int] = []
        self.reach_idx: list[int] = []
        best, best_i = -1, -1
        for i, c in enumerate(chunks):
            if c.end > best:
                best, best_i = c.end, i
            self.reach.append(best)
            self.reach_idx.append(best_i)
        self._counter: SliceCounter | None = None
        self._st: Structure | None = None
        self._budget_for: Callable[[Chunk], Any] | None = getattr(strategy, "budget_for", None)

    # -- what the run supplies

    @property
    def inputs(self) -> frozenset[Input]:
        return self.run.inputs

    @property
    def embeddings(self) -> ChunkEmbeddings | None:
        return self.run.embeddings

    # -- sizes

    @property
    def counter(self) -> SliceCounter:
        """Exact slice counts in the tokenizer the limits are stated in."""
        if self._counter is None:
            self._counter = get_tokenizer(self.limits.tokenizer).counter(self.doc)
        return self._counter

    def tokens_of(self, c: Chunk) -> int:
        if self.limits.tokenizer == self.strategy.length_tokenizer:
            return c.tokens
        return self.counter.count(c.start, c.end)

    def budget(self, c: Chunk) -> int | None:
        """The most tokens chunk ``c`` may hold: the configured budget, else the strategy's own."""
        if "oversize" in self.settings.thresholds:
            return self.settings.thresholds["oversize"]
        if self._budget_for is not None:
            b = self._budget_for(c)
            if b is not None:
                return int(b)
        return self.limits.max

    def units(self, n: int) -> str:
        """``"57 words"`` or ``"612 cl100k_base tokens"``: counts in the unit the limits are stated in."""
        tok = self.limits.tokenizer
        return f"{n} words" if tok == "words" else f"{n} {tok} tokens"

    # -- positions and structure

    def first_content(self, start: int, end: int) -> int:
        return first_content(self.text, start, end)

    def trimmed(self, start: int, end: int) -> tuple[int, int]:
        """``[start, end)`` without its trailing whitespace."""
        text = self.text
        while end > start and text[end - 1].isspace():
            end -= 1
        return start, end

    @property
    def st(self) -> Structure:
        """The document's block structure (parsed on first use, once per distinct text: `LintRun.structure_of`)."""
        if self._st is None:
            self._st = self.run.structure_of(self.doc)
        return self._st

    def is_comment(self, b: Block) -> bool:
        return is_comment(self.text, b)

    def position(self, offset: int) -> tuple[int, int]:
        """(1-based line, 1-based column) of ``offset``."""
        line = self.lines.line_of(offset)
        return line, offset - self.lines.line_starts[line - 1] + 1

    def cut_inside(self, start: int, end: int) -> tuple[int, int] | None:
        """Where ``[start, end)`` is split between chunks: (boundary offset, list position of the chunk ending there).

        None when some chunk holds the whole range (with overlapping chunks, one whole copy is enough) or when
        no chunk reaches into it. The boundary is the end of the farthest-reaching chunk that holds ``start``:
        every split range has one, strictly inside it.
        """
        i = bisect_right(self.starts, start) - 1
        if i < 0:
            return None
        reach = self.reach[i]
        if reach >= end or reach <= start:
            return None
        return reach, self.reach_idx[i]

    # -- findings

    def finding(self, rule: Rule, offset: int, message: str, chunk_index: int | None) -> Finding:
        """A finding of ``rule`` at ``offset``, with the configured severity and the rule's hint."""
        line, col = self.position(offset)
        severity = self.settings.severity_of(rule.id)
        return Finding(self.doc.path, line, col, rule.id, severity, message, chunk_index, rule.hint)

    def chunk_finding(self, rule: Rule, c: Chunk, message: str) -> Finding:
        """A finding about a whole chunk, at its first character of content."""
        return self.finding(rule, self.first_content(c.start, c.end), message, c.index)
