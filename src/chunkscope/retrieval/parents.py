"""Small-to-big retrieval: the chunks are searched, their parents (a section, a token window, the page) answer.

Many chatbots embed small chunks for precision and send the LLM something bigger around each hit; an
auto-merging retriever then sends a parent once however many of its children were found. `ParentSpec` names the
parent (``none``, ``section``, ``window:N`` or ``page``), `parent_span` finds it for one chunk, and
`ParentResolver.merge` turns a ranked list of chunk hits into a ranked list of `ParentHit`s.

Every parent is an exact span of its document that holds its child whole:

- ``section``: the smallest section holding the chunk's text: from a heading to the next heading of the same or a
  higher level (`chunkscope.document.structure.Outline.section_end`), trailing blank lines left out. A chunk that
  runs across two sections gets their common enclosing section; one with no enclosing section gets the page.
- ``window:N``: the chunk and up to N tokens on each side, in the strategy's own tokenizer (the one it measures
  chunk sizes in), cut at exact offsets by the document's slice counter; never into the front matter.
- ``page``: the page's body (front matter excluded), blank lines around it left out.

Merging keeps the auto-merging retriever's promise: a parent takes the rank and score of its best child (the
search found it there: hit@k of parents is "the parents of the top k chunks hold the answer") and lists its
children. Ranks of later parents are not renumbered, so no answer ever climbs above the chunk that found it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from chunkscope.document.structure import first_content, trim
from chunkscope.retrieval.store import Hit

if TYPE_CHECKING:
    from chunkscope.document.loader import Document, DocsTree
    from chunkscope.document.structure import Heading
    from chunkscope.tokens.slices import SliceCounter

__all__ = ["PARENT_KINDS", "ParentError", "ParentHit", "ParentResolver", "ParentSpec", "parent_span",
           "parse_parent", "tree_documents"]

#: What a parent can be; ``window`` takes a token count (``window:200``).
PARENT_KINDS = ("none", "section", "window", "page")


class ParentError(ValueError):
    """A parent that cannot be understood; one line, naming the value."""


@dataclass(frozen=True)
class ParentSpec:
    """Which parent a hit is lifted to: ``kind`` is one of `PARENT_KINDS`, ``tokens`` the window's half-width."""

    kind: str = "none"
    tokens: int = 0

    @property
    def label(self) -> str:
        """As the user writes it: ``section``, ``window:200``."""
        return f"window:{self.tokens}" if self.kind == "window" else self.kind

    @property
    def active(self) -> bool:
        """Whether hits are lifted at all (``none`` returns the chunks themselves)."""
        return self.kind != "none"


def parse_parent(value: "str | ParentSpec | None") -> ParentSpec:
    """``none``, ``section``, ``window:N`` (N >= 1 tokens) or ``page``; None is ``none``.

    Raises:
        ParentError: anything else.
    """
    if isinstance(value, ParentSpec):
        return value
    text = (value or "none").strip().lower()
    kind, sep, n = text.partition(":")
    if kind == "window":
        try:
            tokens = int(n) if sep else 0
        except ValueError:
            tokens = 0
        if tokens < 1:
            raise ParentError(f"parent {value!r}: a window needs its size in tokens, e.g. window:200")
        return ParentSpec("window", tokens)
    if sep or kind not in PARENT_KINDS:
        raise ParentError(f"parent {value!r}: expected none, section, window:N (tokens each side) or page")
    return ParentSpec(kind)


# --- spans ----------------------------------------------------------------------------------------------------


def _rstrip_end(text: str, start: int, end: int) -> int:
    while end > start and text[end - 1].isspace():
        end -= 1
    return end


def _enclosing(headings: Sequence["Heading"], h: "Heading") -> "Heading | None":
    """The heading whose section holds ``h``'s: the nearest earlier heading of a higher level."""
    for prev in reversed(headings[: h.index]):
        if prev.level < h.level:
            return prev
    return None


def _section(doc: "Document", start: int, end: int) -> tuple[int, int] | None:
    """The smallest section holding the non-space text of ``[start, end)``; None when no section does."""
    text = doc.text
    outline = doc.outline
    lo, hi = first_content(text, start, end), trim(text, start, end)[1]
    h = outline.heading_before(lo)
    while h is not None:
        s_end = outline.section_end(h)
        if h.start <= lo and hi <= s_end:
            return h.start, s_end
        h = _enclosing(outline.headings, h)
    return None


def parent_span(doc: "Document", start: int, end: int, spec: ParentSpec,
                counter: "SliceCounter | None" = None) -> tuple[int, int]:
    """The parent of the chunk ``[start, end)`` of ``doc``: a span holding it whole (the chunk itself for ``none``).

    ``counter`` counts tokens of ``doc`` for ``window`` (the strategy's `Strategy.counter`).
    """
    text = doc.text
    if spec.kind == "none":
        return start, end
    if spec.kind == "window":
        if counter is None:
            raise ParentError("a window parent needs the strategy's token counter")
        floor = min(doc.body_start, start)
        return counter.start_within(start, spec.tokens, floor), counter.end_within(end, spec.tokens, len(text))
    span = _section(doc, start, end) if spec.kind == "section" else None
    if span is None:  # the page, or a chunk no section holds
        span = (first_content(text, doc.body_start, len(text)), len(text))
    a, b = span
    # Blank lines around the body or before the next heading are nobody's text; the child keeps what it holds.
    return min(a, start), max(_rstrip_end(text, a, b), end)


# --- hits -----------------------------------------------------------------------------------------------------


_HIT_FIELDS = tuple(f.name for f in fields(Hit))


@dataclass
class ParentHit(Hit):
    """A parent as a result: its own span, text and lines; the rank, score and citation of its best child.

    ``children`` are the chunk hits it holds, best first (a `chunkscope.retrieval.rerankers.base.RerankedHit`
    after a reranker); ``parent`` is how it was found (``section``, ``window:200``, ``page``).
    """

    children: list[Hit] = field(default_factory=list)
    parent: str = ""

    @property
    def child(self) -> Hit:
        """The best child: the one whose rank and score the parent carries."""
        return self.children[0]

    def to_dict(self) -> dict[str, Any]:
        kids = [{k: v for k, v in c.to_dict().items() if k not in ("text", "metadata")} for c in self.children]
        return {**super().to_dict(), "parent": self.parent, "children": kids}


def tree_documents(tree: "DocsTree", max_bytes: int | None = None) -> Callable[[str], "Document | None"]:
    """A document lookup for ``tree``: its loaded documents, and a file it did not load (an indexed tree read from
    its manifest holds only the files that changed) read from disk once, as indexing read it."""
    from chunkscope.document.loader import DEFAULT_MAX_BYTES, read_document

    read: dict[str, "Document | None"] = {}

    def lookup(path: str) -> "Document | None":
        doc = tree.get(path)
        if doc is not None:
            return doc
        if path not in read:
            found, _ = read_document(Path(tree.root) / path, path, max_bytes or DEFAULT_MAX_BYTES)
            read[path] = found
        return read[path]

    return lookup


class ParentResolver:
    """Parents of hits in one docs tree: spans by `parent_span`, results by `merge`.

    Args:
        spec: which parent.
        documents: the document at a path (`tree_documents`); a hit whose document is missing keeps its own span.
        counter: the strategy's token counter of a document (``strategy.counter``), for ``window``.
    """

    def __init__(self, spec: ParentSpec, documents: Callable[[str], "Document | None"],
                 counter: Callable[["Document"], "SliceCounter"] | None = None) -> None:
        self.spec = spec
        self._documents = documents
        self._counter = counter
        self._spans: dict[tuple[str, int, int], tuple[int, int]] = {}

    @classmethod
    def of_tree(cls, spec: ParentSpec, tree: "DocsTree", counter: Callable[["Document"], "SliceCounter"],
                max_bytes: int | None = None) -> "ParentResolver":
        """The parents of hits in ``tree`` (`tree_documents`: a file it did not load is read within ``max_bytes``,
        the default limit when None), windows counted by ``counter`` (the strategy's ``counter``).

        Its spans are kept as long as it lives: keep one per tree, strategy and parent while the documents stay
        as they are (the app keeps one per strategy until a file changes), rather than one per question.
        """
        return cls(spec, tree_documents(tree, max_bytes), counter)

    def span(self, path: str, start: int, end: int) -> tuple[int, int]:
        """The parent of the chunk ``path[start:end]`` (the chunk itself when its document is unknown)."""
        key = (path, start, end)
        got = self._spans.get(key)
        if got is None:
            doc = self._documents(path)
            if doc is None or end > len(doc.text):
                got = (start, end)
            else:
                # A document's counter is made once by the document itself (`Analysis.counter`).
                counter = self._counter(doc) if self.spec.kind == "window" and self._counter is not None else None
                got = parent_span(doc, start, end, self.spec, counter)
            self._spans[key] = got
        return got

    def merge(self, hits: Sequence[Hit]) -> list[ParentHit]:
        """The parents of ``hits`` (ranked chunks), each once: ordered, ranked and scored by its best child.

        A parent is kept (over the threshold) when any child is; its rank and score are then those of its best kept
        child, as a bot that filters before it merges would send it.
        """
        groups: dict[tuple[str, int, int], list[Hit]] = {}
        for h in hits:
            a, b = self.span(h.path, h.start, h.end)
            groups.setdefault((h.path, a, b), []).append(h)
        out: list[ParentHit] = []
        for (path, a, b), children in groups.items():
            kept = [c for c in children if c.kept]
            best = kept[0] if kept else children[0]
            out.append(self._parent_hit(path, a, b, best, children, bool(kept)))
        out.sort(key=lambda p: (not p.kept, p.rank))
        return out

    def _parent_hit(self, path: str, a: int, b: int, best: Hit, children: list[Hit], kept: bool) -> ParentHit:
        doc = self._documents(path)
        values = {name: getattr(best, name) for name in _HIT_FIELDS}
        values.update(start=a, end=b, kept=kept)
        if doc is not None and (a, b) != (best.start, best.end):
            outline = doc.outline
            values.update(text=doc.text[a:b], start_line=outline.line_of(a),
                          end_line=outline.line_of(b - 1 if b > a else a), tokens=None, embed_tokens=None,
                          heading_path=outline.heading_path_at(first_content(doc.text, a, b)))
        ordered = sorted(children, key=lambda c: (c is not best, c.rank))
        return ParentHit(**values, children=ordered, parent=self.spec.label)
