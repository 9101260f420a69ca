"""Interval arithmetic on half-open ``[start, end)`` spans of one document's text: union, coverage, intersection."""

from __future__ import annotations

from typing import Iterable

#: ``[start, end)`` of one document's text.
Span = tuple[int, int]


def union(spans: Iterable[Span]) -> list[Span]:
    """Disjoint, sorted spans covering exactly what ``spans`` cover; empty spans vanish, touching ones merge."""
    out: list[Span] = []
    for a, b in sorted(s for s in spans if s[1] > s[0]):
        if out and a <= out[-1][1]:
            if b > out[-1][1]:
                out[-1] = (out[-1][0], b)
        else:
            out.append((a, b))
    return out


def covered(spans: Iterable[Span]) -> int:
    """How many characters at least one of the half-open ``spans`` covers."""
    return sum(b - a for a, b in union(spans))


def intersection(left: Iterable[Span], right: Iterable[Span]) -> list[Span]:
    """What both sets of spans cover, as disjoint sorted spans."""
    a, b = union(left), union(right)
    out: list[Span] = []
    i = j = 0
    while i < len(a) and j < len(b):
        lo, hi = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if lo < hi:
            out.append((lo, hi))
        # The span that ends first can meet nothing further on.
        if a[i][1] <= b[j][1]:
            i += 1
        else:
            j += 1
    return out
