"""Passage-level retrieval metrics from exact offsets, as Chroma's "Evaluating Chunking Strategies for Retrieval"
(Smith and Troynikov, 2024) measures them.

A query's *passage* is a span of one document; the retrieved chunks are spans too. With P the passage and R the
union of the retrieved chunks (overlapping chunks counted once: text two chunks share was sent once):

- recall    = |P ∩ R| / |P|        how much of the passage came back
- precision = |P ∩ R| / |R|        how much of what came back is passage
- IoU       = |P ∩ R| / |P ∪ R|    both at once
- precision-Ω = precision when exactly the chunks touching P are retrieved: the best precision any ranking
  could reach with full recall, so the ceiling a chunking sets before retrieval plays any part.

``|·|`` is a `Measure`: characters (`char_measure`) or a tokenizer's tokens over the same spans. Every ratio
with an empty denominator is 0. Pure arithmetic on ``(path, start, end)`` triples; no model, no store.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable, Mapping, Sequence

from chunkscope.document.spans import Span, intersection, union
from chunkscope.document.structure import trim

#: ``(path, start, end)``: a span of a named document.
Located = tuple[str, int, int]
#: How many units (characters, tokens) ``[start, end)`` of the document at ``path`` holds. Applied to disjoint
#: spans only, so a measure need not be additive over adjacent pieces.
Measure = Callable[[str, int, int], int]


def char_measure(path: str, start: int, end: int) -> int:
    """Characters in ``[start, end)``."""
    return max(0, end - start)


def by_path(located: Iterable[Located]) -> dict[str, list[Span]]:
    """The union of the spans of each document."""
    grouped: dict[str, list[Span]] = {}
    for path, start, end in located:
        grouped.setdefault(path, []).append((start, end))
    return {path: union(spans) for path, spans in grouped.items()}


def size(spans: Mapping[str, Sequence[Span]], measure: Measure = char_measure) -> int:
    """Units in disjoint spans, document by document."""
    return sum(measure(path, a, b) for path, parts in spans.items() for a, b in parts)


# --- scores ---------------------------------------------------------------------------------------------------


def _ratio(part: int, whole: int) -> float:
    return part / whole if whole > 0 else 0.0


@dataclass(frozen=True)
class PassageScores:
    """One query's passage-level scores, and the unit counts they come from."""

    passage: int  # |P|
    retrieved: int  # |R|, overlapping chunks counted once
    overlap: int  # |P ∩ R|

    @property
    def recall(self) -> float:
        return min(1.0, _ratio(self.overlap, self.passage))

    @property
    def precision(self) -> float:
        return min(1.0, _ratio(self.overlap, self.retrieved))

    @property
    def iou(self) -> float:
        return min(1.0, _ratio(self.overlap, self.passage + self.retrieved - self.overlap))


def score(passage: Located, retrieved: Iterable[Located], measure: Measure = char_measure) -> PassageScores:
    """Recall, precision and IoU of ``retrieved`` chunks (any documents) against one passage."""
    path, start, end = passage
    chunks = by_path(retrieved)
    common = intersection([(start, end)], chunks.get(path, []))
    return PassageScores(passage=measure(path, start, end), retrieved=size(chunks, measure),
                         overlap=size({path: common}, measure))


def touching(passage: Located, chunks: Iterable[Located]) -> list[Located]:
    """The chunks sharing at least one character with the passage."""
    path, start, end = passage
    return [c for c in chunks if c[0] == path and c[1] < end and start < c[2]]


def precision_omega(passage: Located, chunks: Iterable[Located], measure: Measure = char_measure) -> float:
    """Precision when exactly the chunks touching the passage are retrieved (0 when none does)."""
    return score(passage, touching(passage, chunks), measure).precision


# --- passages -------------------------------------------------------------------------------------------------


def section_body(text: str, heading_end: int, section_end: int, heading_start: int | None = None) -> Span:
    """A section's body: from the end of its heading line to the section's end, without surrounding white space.

    A section with nothing under its heading (not even a subsection) is its heading line: a passage is never
    empty, so every ratio above has a denominator.
    """
    start, end = trim(text, heading_end, section_end)
    if end > start or heading_start is None:
        return start, end
    return trim(text, heading_start, section_end)
