"""Where two strategies (or two parameter sets) cut the same documents differently.

A chunk is *identical* in both when the same ``(start, end)`` range exists on both sides; everything else is
only in A or only in B. Boundaries are compared as the set of offsets where one chunk ends and the next begins.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

from chunkscope.chunking.model import Chunk, ChunkedDoc


@dataclass
class FileDiff:
    """How one document's chunks differ between A and B."""

    path: str
    a_chunks: int
    b_chunks: int
    identical: int
    only_a: list[Chunk] = field(default_factory=list)
    only_b: list[Chunk] = field(default_factory=list)
    boundaries_only_a: list[int] = field(default_factory=list)  # 1-based lines of boundaries A has and B lacks
    boundaries_only_b: list[int] = field(default_factory=list)

    @property
    def differs(self) -> bool:
        return bool(self.only_a or self.only_b)

    def to_dict(self) -> dict:
        return {
            "path": self.path,
            "a_chunks": self.a_chunks,
            "b_chunks": self.b_chunks,
            "identical": self.identical,
            "only_a": len(self.only_a),
            "only_b": len(self.only_b),
            "boundary_lines_only_a": self.boundaries_only_a,
            "boundary_lines_only_b": self.boundaries_only_b,
        }


@dataclass
class TreeDiff:
    """The whole tree's differences."""

    label_a: str
    label_b: str
    files: list[FileDiff]

    @property
    def changed_files(self) -> list[FileDiff]:
        return [f for f in self.files if f.differs]

    @property
    def only_a(self) -> int:
        return sum(len(f.only_a) for f in self.files)

    @property
    def only_b(self) -> int:
        return sum(len(f.only_b) for f in self.files)

    @property
    def identical(self) -> int:
        return sum(f.identical for f in self.files)

    def headline(self) -> str:
        n = len(self.changed_files)
        return (
            f"{self.only_b} chunks changed in {n} of {len(self.files)} files "
            f"({self.only_a} chunks of {self.label_a} are gone, {self.only_b} of {self.label_b} are new, "
            f"{self.identical} identical)"
        )

    def to_dict(self) -> dict:
        return {
            "a": self.label_a,
            "b": self.label_b,
            "changed_files": len(self.changed_files),
            "files": len(self.files),
            "only_a": self.only_a,
            "only_b": self.only_b,
            "identical": self.identical,
            "per_file": [f.to_dict() for f in self.files],
        }


def _boundaries(chunks: Sequence[Chunk]) -> dict[int, int]:
    """Offset → line of every cut between consecutive chunks (the end of each chunk but the last)."""
    return {c.end: c.end_line for c in chunks[:-1]}


def diff_chunks(path: str, a: Sequence[Chunk], b: Sequence[Chunk]) -> FileDiff:
    """Compare one document's two chunkings."""
    spans_a = {(c.start, c.end) for c in a}
    spans_b = {(c.start, c.end) for c in b}
    ba, bb = _boundaries(a), _boundaries(b)
    return FileDiff(
        path=path,
        a_chunks=len(a),
        b_chunks=len(b),
        identical=len(spans_a & spans_b),
        only_a=[c for c in a if (c.start, c.end) not in spans_b],
        only_b=[c for c in b if (c.start, c.end) not in spans_a],
        boundaries_only_a=sorted(ba[o] for o in ba.keys() - bb.keys()),
        boundaries_only_b=sorted(bb[o] for o in bb.keys() - ba.keys()),
    )


def diff_trees(label_a: str, a: Sequence[ChunkedDoc], label_b: str, b: Sequence[ChunkedDoc]) -> TreeDiff:
    """Compare two chunkings of the same documents (matched by path)."""
    by_path_b = {r.doc.path: r.chunks for r in b}
    files = [diff_chunks(r.doc.path, r.chunks, by_path_b.get(r.doc.path, [])) for r in a]
    return TreeDiff(label_a, label_b, files)
