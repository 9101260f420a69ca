"""hub, orphan, near-duplicate: what every chunk's nearest chunks in embedding space say, with no question asked.

The three rules read the tree's neighbourhoods (`neighbours.Neighbourhoods`: each chunk's k nearest by the vector
store's own search, and the k-occurrences of Radovanović et al., JMLR 2010), so they need embeddings
(`Input.EMBEDDINGS`) that know them: ``lint --embeddings`` indexes the tree and hands them in. Each reports at
the chunk concerned, with the other chunks that are its evidence.
"""

from __future__ import annotations

from abc import abstractmethod
from typing import TYPE_CHECKING

from chunkscope.retrieval.neighbours import TWIN_COSINE
from chunkscope.wording import plural
from chunkscope.lint.findings import WARNING
from chunkscope.lint.rule import Input, Rule

if TYPE_CHECKING:
    from collections.abc import Callable

    from chunkscope.chunking.model import Chunk
    from chunkscope.retrieval.neighbours import Neighbour, Neighbourhoods
    from chunkscope.lint.context import LintContext
    from chunkscope.lint.findings import Finding

#: How many other chunks a finding names as evidence.
EVIDENCE = 3


class NeighbourhoodRule(Rule):
    """A rule about each chunk's place among its tree's neighbourhoods: `message` says what is wrong, or None."""

    severity = WARNING
    needs = frozenset({Input.EMBEDDINGS})

    def check(self, ctx: LintContext) -> list[Finding]:
        found = ctx.run.neighbourhoods()
        if found is None:
            return []
        out: list[Finding] = []
        for c in ctx.chunks:
            i = found.find(ctx.doc.path, c.index)
            # A point of another cut (an index out of step with these chunks) says nothing about this chunk.
            if i is None or (found.points[i].start, found.points[i].end) != (c.start, c.end):
                continue
            msg = self.message(found, i, c, ctx.run.display)
            if msg is not None:
                out.append(ctx.chunk_finding(self, c, msg))
        return out

    @abstractmethod
    def message(self, found: Neighbourhoods, i: int, c: Chunk, display: Callable[[str], str]) -> str | None:
        """The finding's words for chunk ``c`` (point ``i`` of ``found``); None when it is not a hub, orphan or
        near-duplicate, as each rule judges."""


def where(found: Neighbourhoods, nb: Neighbour, display: Callable[[str], str]) -> str:
    """``path:line`` of a neighbour, as the run shows paths."""
    p = found.points[nb.point]
    return f"{display(p.path)}:{p.start_line}"


class Hub(NeighbourhoodRule):
    id = "hub"
    summary = "a chunk is among the k nearest of far more chunks than its share (it comes back for unrelated questions)"
    hint = ("a chunk near everything says little of its own: cut what many chunks share out of it (listing "
            "captions, navigation, boilerplate), or merge it into the section it belongs to")

    def message(self, found: Neighbourhoods, i: int, c: Chunk, display: Callable[[str], str]) -> str | None:
        n = found.occurrences[i]
        if n <= found.hub_threshold:
            return None
        # The evidence: chunks of other files that have it among their nearest, the least alike first: they are
        # the questions it would answer without being about them.
        own = found.points[i].path
        others = sorted((nb for nb in found.pointed_by[i] if found.points[nb.point].path != own),
                        key=lambda nb: nb.score)
        files = {found.points[nb.point].path for nb in found.pointed_by[i]}
        shown, seen = [], set()
        for nb in others:
            path = found.points[nb.point].path
            if path not in seen:
                seen.add(path)
                shown.append(f"{where(found, nb, display)} (cosine {nb.score:.2f})")
            if len(shown) == EVIDENCE:
                break
        msg = (f"chunk {c.index} is among the {found.k} nearest of {n} chunks in {plural(len(files), 'file')}, "
               f"{n / found.k:.1f}x its share (hubs: over {found.hub_threshold:.0f})")
        return msg + (f", e.g. {', '.join(shown)}" if shown else "")


class Orphan(NeighbourhoodRule):
    id = "orphan"
    summary = "a chunk is among the k nearest of no other chunk (shadowed by a near-twin, or an island)"
    hint = ("if a near-twin says the same, keep one of them or make each say something of its own; an island is "
            "often text nothing else explains (a bare listing, a table, a list of links): keep it with its prose")

    def message(self, found: Neighbourhoods, i: int, c: Chunk, display: Callable[[str], str]) -> str | None:
        if found.occurrences[i] != 0 or len(found.points) <= found.k + 1:
            return None
        head = f"chunk {c.index} is among the {found.k} nearest of no other chunk"
        twin = found.twin(i)
        if twin is not None:
            return f"{head}: shadowed by its near-twin {where(found, twin, display)} (cosine {twin.score:.2f})"
        if not found.nearest[i]:
            return f"{head}: an island"
        best = found.nearest[i][0]
        return (f"{head}: an island (its nearest, {where(found, best, display)}, is at cosine {best.score:.2f}, "
                f"under the {TWIN_COSINE} of a near-twin)")


class NearDuplicate(NeighbourhoodRule):
    id = "near-duplicate"
    summary = f"two chunks at different places are near-twins to the embedder (cosine >= {TWIN_COSINE})"
    hint = ("keep one copy and point to it, or make each say what is particular to its place: near-twins crowd "
            "the top k with one answer twice")

    def message(self, found: Neighbourhoods, i: int, c: Chunk, display: Callable[[str], str]) -> str | None:
        # Each pair once, at its later chunk, naming the earlier one(s).
        twins = found.near_duplicates(i)
        if not twins:
            return None
        named = ", ".join(f"{where(found, nb, display)} (chunk {found.points[nb.point].chunk_index}, cosine "
                          f"{nb.score:.3f})" for nb in twins[:EVIDENCE])
        more = f" and {len(twins) - EVIDENCE} more" if len(twins) > EVIDENCE else ""
        return f"chunk {c.index} reads nearly as {named}{more} to the embedder"
