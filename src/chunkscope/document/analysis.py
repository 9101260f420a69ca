"""What chunkscope derives from one document, as a typed object: each part computed on first use, then kept.

A `Document`'s text never changes, so nothing here is ever invalidated. The parts: the Markdown parse
(`structure`), the outline (`outline`, from a line scan when that is certain, else from the parse), the line
table, the book's numbering and the section numbers under each heading (`chunkscope.site.numbering`), a slice counter per
tokenizer (waiting, when `chunkscope.tokens.prepare` started one, for the background encoding of the document),
and the strategies' own memos, each in a `MemoSlot` the strategy owns.

Whether a part has been made is asked explicitly (`structure_parsed`), never read from the presence of a key.
This module imports nothing at import time: what computes each part is imported when it is first needed.
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Callable, Generic, TypeVar

if TYPE_CHECKING:
    from chunkscope.document.loader import Document
    from chunkscope.site.numbering import Numbering, SectionNumbers
    from chunkscope.document.structure import Outline, Structure
    from chunkscope.tokens import SliceCounter, Tokenizer
    from chunkscope.tokens.background import PendingOffsets

T = TypeVar("T")


class MemoSlot(Generic[T]):
    """The place of one owner's per-document memo, created once by the module that owns it (at import time).

    Slots are told apart by identity, not by name: two owners can never share one by accident, and the value's
    type is the slot's (``MemoSlot[dict[int, list[Unit]]]``). ``owner`` only names it for people reading a repr.
    """

    __slots__ = ("owner",)

    def __init__(self, owner: str) -> None:
        self.owner = owner

    def __repr__(self) -> str:
        return f"MemoSlot({self.owner!r})"


class Analysis:
    """One document's derived data (see the module docstring). Made by `Document`; reach it as ``doc.analysis``.

    It refers to its document weakly: the document owns its analysis, not the other way round, so a dropped
    document frees its parse and token offsets at once rather than at the next garbage collection.
    """

    __slots__ = ("_doc", "_structure", "_outline", "_line_starts", "_numbering", "_section_numbers", "_counters",
                 "_pending", "_memos")

    def __init__(self, doc: "Document") -> None:
        self._doc = weakref.ref(doc)
        self._structure: Structure | None = None
        self._outline: Outline | None = None
        self._line_starts: list[int] | None = None
        self._numbering: Numbering | None = None
        self._section_numbers: SectionNumbers | None = None
        self._counters: dict[str, SliceCounter] = {}
        self._pending: dict[str, PendingOffsets] = {}
        self._memos: dict[MemoSlot, object] = {}

    @property
    def doc(self) -> "Document":
        doc = self._doc()
        if doc is None:  # only reachable by keeping an analysis after dropping its document
            raise ReferenceError("the document of this analysis no longer exists")
        return doc

    # --- Markdown ------------------------------------------------------------------------------------------------

    @property
    def structure_parsed(self) -> bool:
        """Whether the full Markdown parse has been made (asking for `structure` makes it)."""
        return self._structure is not None

    @property
    def structure(self) -> "Structure":
        """The markdown-it parse: blocks and headings with exact offsets (`chunkscope.document.structure`)."""
        if self._structure is None:
            from chunkscope.document.structure import parse_structure

            self._structure = parse_structure(self.doc)
        return self._structure

    @property
    def outline(self) -> "Outline":
        """Line table, headings and fences: from a line scan when it is certain, else derived from `structure`
        (always from it once the document has been parsed); identical either way."""
        if self._outline is None:
            from chunkscope.document.structure import build_outline

            self._outline = build_outline(self.doc)
        return self._outline

    @property
    def line_starts(self) -> list[int]:
        """Where each line starts (CRLF, CR or LF end a line): the parse's or the outline's table when either has
        been made, else one made from the text alone (no scan, no parse) and kept for them."""
        if self._structure is not None:
            return self._structure.line_starts
        if self._outline is not None:
            return self._outline.line_starts
        if self._line_starts is None:
            from chunkscope.document.outline_scan import line_starts_of

            self._line_starts = line_starts_of(self.doc.text)
        return self._line_starts

    # --- the site model ------------------------------------------------------------------------------------------

    @property
    def numbering(self) -> "Numbering":
        """Chapter, section, module and week of the page (`chunkscope.site.numbering.doc_numbering`'s rules)."""
        if self._numbering is None:
            from chunkscope.site.numbering import compute_numbering

            self._numbering = compute_numbering(self.doc)
        return self._numbering

    @property
    def section_numbers(self) -> "SectionNumbers":
        """The (section, subsection) under each heading (`chunkscope.site.numbering.SectionNumbers`' rules)."""
        if self._section_numbers is None:
            from chunkscope.site.numbering import compute_section_numbers

            self._section_numbers = compute_section_numbers(self.doc)
        return self._section_numbers

    # --- tokens --------------------------------------------------------------------------------------------------

    def counter(self, tokenizer: "Tokenizer") -> "SliceCounter":
        """The document's slice counter in ``tokenizer``, made once; it takes over the background encoding
        `chunkscope.tokens.prepare` started, if any (waiting for it when it is still running)."""
        c = self._counters.get(tokenizer.name)
        if c is None:
            pending = self._pending.pop(tokenizer.name, None)
            c = self._counters[tokenizer.name] = tokenizer.new_counter(self.doc.text, pending)
        return c

    def has_counter(self, tokenizer_name: str) -> bool:
        """Whether the counter in that tokenizer has been made."""
        return tokenizer_name in self._counters

    def expect_offsets(self, tokenizer_name: str, pending: "PendingOffsets") -> None:
        """Record that the document's token offsets in that tokenizer are being made in the background."""
        self._pending[tokenizer_name] = pending

    def offsets_pending(self, tokenizer_name: str) -> bool:
        """Whether a background encoding in that tokenizer waits for the counter to take it over."""
        return tokenizer_name in self._pending

    # --- strategies' memos ---------------------------------------------------------------------------------------

    def memo(self, slot: MemoSlot[T], make: Callable[[], T]) -> T:
        """The value kept in ``slot`` for this document, made by ``make()`` the first time."""
        try:
            return self._memos[slot]  # type: ignore[return-value]
        except KeyError:
            value = self._memos[slot] = make()
            return value
