"""Label-free diagnostics in embedding space: every chunk's k nearest chunks, found by the vector store's own
search, and what those neighbourhoods say about a tree (hubs, orphans, near-duplicates) with no question asked.

The measures are those of Radovanović, Nanopoulos and Ivanović, "Hubs in Space: Popular Nearest Neighbors in
High-Dimensional Data" (JMLR 11, 2010):

- the *k-occurrence* ``N_k(x)`` of a chunk: in how many other chunks' k nearest it is. Every chunk has k nearest,
  so the mean of ``N_k`` over a tree is exactly k;
- *hubness*: the skewness of the ``N_k`` distribution, its third standardised moment ``E[(N_k - k)^3] / sd^3``
  (the paper's ``S_{N_k}``). Near 0 when every chunk is somebody's neighbour about as often as its share; large
  when a few chunks are everybody's neighbours (those come back for questions they have nothing to do with);
- a *hub*: a chunk whose ``N_k`` lies far out in that distribution's right tail (`HUB_SIGMAS`, `HUB_SHARE`);
- an *orphan* (the paper's anti-hub): ``N_k = 0``, in no other chunk's neighbourhood. It is *shadowed* when a
  near-twin (cosine >= `TWIN_COSINE`) stands where it would, else an *island*;
- a *near-duplicate*: two chunks at different places whose vectors are at cosine >= `TWIN_COSINE`.

Neighbourhoods are exact: the stored vectors are read once (`Store.points`, from either engine) and every chunk's
k nearest found by one blocked matrix product, `BATCH` rows at a time, so memory stays at the vectors plus one
``BATCH`` × n block of cosines. Measured against Qdrant Edge's exact batch query over the same vectors (bench:
``bench_retrieval.py``), the product costs about half the CPU at 5,000 and 20,000 chunks (20,000: about 8 s of
CPU against 19 s on the bench machine), and it asks nothing of a server but one read of the vectors.
"""

from __future__ import annotations

import math
import time
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

from chunkscope.progress import Phase, Progress
from chunkscope.retrieval.engine import TIE_MARGIN

if TYPE_CHECKING:
    import numpy as np

    from chunkscope.progress import CancelToken, ProgressFn
    from chunkscope.retrieval.store import Store, StoredPoint

#: How many nearest chunks make a neighbourhood (the paper reports k = 5..100; 10 is a typical retrieval depth).
DEFAULT_K = 10
#: Cosine at or above which two chunks are near-twins: all-MiniLM-L6-v2 puts paraphrases of one paragraph at
#: 0.9-0.97, and the Rust book's nearest distinct chunks (recursive, 715 chunks) stay under 0.9.
TWIN_COSINE = 0.95
#: A hub's k-occurrence is more than this many standard deviations above the mean (k) ...
HUB_SIGMAS = 3.0
#: ... and more than this many times its share (k). Without hubness ``N_k`` scatters around k with a standard
#: deviation near sqrt(k) (3.2 at k = 10), so 2k is already about 3 sd above chance; in a skewed tree the sd
#: grows and mean + 3 sd keeps only the far tail. On the Rust book (recursive, MiniLM, k = 10: sd 7.7, skewness
#: 1.85) mean + 2 sd would flag 32 chunks (4.5%), 2k alone 60, the two together 11.
HUB_SHARE = 2.0
#: Rows of the cosine matrix computed at once: one progress report and one chance to stop each (a block is
#: ``BATCH`` × n float32: 20 MB at 20,000 chunks).
BATCH = 256


@dataclass(frozen=True, slots=True)
class Neighbour:
    """Another chunk near one chunk: its position in `Neighbourhoods.points` and their cosine."""

    point: int
    score: float


@dataclass
class Neighbourhoods:
    """Every chunk's ``k`` nearest chunks, and what follows from them: k-occurrences, hubs, orphans, twins.

    Attributes:
        k: the neighbourhood size asked for.
        points: the chunks as stored, in the documents' reading order when one was given.
        nearest: for each point, its nearest other points, best first (``k`` of them when the tree has more).
        seconds: how long finding them took.
    """

    k: int
    points: list[StoredPoint]
    nearest: list[list[Neighbour]]
    seconds: float = 0.0
    #: ``N_k`` of each point.
    occurrences: list[int] = field(init=False)
    #: For each point, the points whose neighbourhoods hold it (with the cosine), in point order.
    pointed_by: list[list[Neighbour]] = field(init=False)

    def __post_init__(self) -> None:
        n = len(self.points)
        self.occurrences = [0] * n
        self.pointed_by = [[] for _ in range(n)]
        for i, row in enumerate(self.nearest):
            for nb in row:
                self.occurrences[nb.point] += 1
                self.pointed_by[nb.point].append(Neighbour(i, nb.score))
        self._where: dict[tuple[str, int], int] = {}
        for i, p in enumerate(self.points):
            self._where.setdefault((p.path, p.chunk_index), i)

    # -- the tree --

    @cached_property
    def mean(self) -> float:
        """The mean k-occurrence: k, unless the tree has k chunks or fewer."""
        return sum(self.occurrences) / len(self.occurrences) if self.occurrences else 0.0

    @cached_property
    def sd(self) -> float:
        """The standard deviation of the k-occurrences (of the whole tree: not an estimate from a sample)."""
        return math.sqrt(self._moment(2))

    def _moment(self, order: int) -> float:
        """The central moment of the k-occurrences (plain Python: numpy is not imported for lint's sake)."""
        if not self.occurrences:
            return 0.0
        m = self.mean
        return sum((x - m) ** order for x in self.occurrences) / len(self.occurrences)

    @cached_property
    def skewness(self) -> float | None:
        """Hubness as Radovanović et al. measure it: the third standardised moment of ``N_k``. None when it is
        not defined (every chunk is every other's neighbour, or the tree has fewer than three chunks)."""
        if len(self.occurrences) < 3 or self.sd == 0.0:
            return None
        return self._moment(3) / self.sd**3

    @cached_property
    def hub_threshold(self) -> float:
        """The k-occurrence a hub exceeds: mean + `HUB_SIGMAS` sd, and at least `HUB_SHARE` times k."""
        return max(self.mean + HUB_SIGMAS * self.sd, HUB_SHARE * self.k)

    def hubs(self) -> list[int]:
        """Points whose k-occurrence is over `hub_threshold`."""
        return [i for i, n in enumerate(self.occurrences) if n > self.hub_threshold]

    def orphans(self) -> list[int]:
        """Points in no other point's neighbourhood (none when the tree is too small to leave anyone out)."""
        if len(self.points) <= self.k + 1:
            return []
        return [i for i, n in enumerate(self.occurrences) if n == 0]

    # -- one chunk --

    def find(self, path: str, chunk_index: int) -> int | None:
        """The point of chunk ``chunk_index`` of the document at ``path``, if it is stored."""
        return self._where.get((path, chunk_index))

    def apart(self, i: int, j: int) -> bool:
        """Whether two points are different places: other documents, or spans that do not overlap (two chunks
        sharing an overlap are one place, their likeness is the strategy's doing)."""
        a, b = self.points[i], self.points[j]
        return a.path != b.path or a.end <= b.start or b.end <= a.start

    def twin(self, i: int) -> Neighbour | None:
        """The nearest chunk at cosine >= `TWIN_COSINE` at another place: what a question finds instead of it."""
        return next((nb for nb in self.nearest[i] if nb.score >= TWIN_COSINE and self.apart(i, nb.point)), None)

    def near_duplicates(self, i: int) -> list[Neighbour]:
        """Earlier points (in point order) that are near-twins of point ``i`` with a text of their own.

        A pair is found from either side (one may be in the other's neighbourhood and not the reverse) and
        belongs to its later point, so each pair is reported once. Identical texts are left out: they are the
        same text, not a near one (lint's ``duplicate`` rule names them).
        """
        found: dict[int, float] = {}
        for nb in (*self.nearest[i], *self.pointed_by[i]):
            j = nb.point
            if j < i and nb.score >= TWIN_COSINE and self.apart(i, j) \
                    and self.points[j].text_sha != self.points[i].text_sha:
                found[j] = max(found.get(j, nb.score), nb.score)
        return [Neighbour(j, s) for j, s in sorted(found.items())]


def reading_order(points: list[StoredPoint], order: Sequence[str] | None) -> list[StoredPoint]:
    """``points`` in the documents' reading order (``order`` lists their paths), chunk by chunk; points of
    paths not listed go last, by path."""
    rank = {p: i for i, p in enumerate(order or ())}
    last = len(rank)
    return sorted(points, key=lambda p: (rank.get(p.path, last), p.path, p.chunk_index, p.start, p.id))


def _by_cosine_then_position(candidate: tuple[int, float]) -> tuple[float, int]:
    """Sort key of a (position, cosine) candidate: best cosine first, to 6 decimals (the last bits of a float32
    product differ with the block it is computed in), then the earlier position."""
    return -round(candidate[1], 6), candidate[0]


def search_neighbourhoods(points: list[StoredPoint], vectors: np.ndarray, k: int = DEFAULT_K, *,
                          on_progress: ProgressFn | None = None, cancel: CancelToken | None = None) -> Neighbourhoods:
    """Each point's ``k`` nearest other points by cosine, exactly (``vectors[i]`` is point ``i``'s vector).

    Equal cosines are ordered by position in ``points``, so the answer is the same on every run and engine.

    Raises:
        Cancelled: ``cancel`` was cancelled (between blocks).
    """
    import numpy as np

    t0 = time.perf_counter()
    n = len(points)
    unit = np.asarray(vectors, dtype=np.float32)
    if n:
        norms = np.linalg.norm(unit, axis=1, keepdims=True)
        unit = (unit / np.where(norms == 0, 1.0, norms)).astype(np.float32)
    take = min(k, max(n - 1, 0))
    nearest: list[list[Neighbour]] = []
    step = Progress(Phase.NEIGHBOURS, 0, n, unit="chunks")
    if on_progress is not None:
        on_progress(step)
    for lo in range(0, n, BATCH):
        if cancel is not None:
            cancel.raise_if_cancelled(f"stopped after the neighbourhoods of {lo} of {n} chunks")
        block = unit[lo:lo + BATCH] @ unit.T
        rows = np.arange(block.shape[0])
        block[rows, rows + lo] = -np.inf  # a chunk is not its own neighbour
        if take == 0:
            nearest.extend([] for _ in rows)
        else:
            # A few more than the take best of each row (unordered), then ordered by cosine to 6 decimals, ties by
            # position: the last bits of a float32 product differ with the block it is computed in, so copies of
            # one vector would otherwise come in an order of the block size's choosing.
            wide = min(take + TIE_MARGIN, n - 1)
            best = np.argpartition(block, -wide, axis=1)[:, -wide:]
            # The candidates' cosines as Python floats in one call per block, not one numpy scalar at a time.
            scores = np.take_along_axis(block, best, axis=1).tolist()
            rows_picked = [sorted(zip(cols, vals), key=_by_cosine_then_position)
                           for cols, vals in zip(best.tolist(), scores)]
            cutoffs = [round(picked[take - 1][1], 6) for picked in rows_picked]
            # More points tie with the take-th than the margin holds (copies of one page share one vector): which
            # of them the partition kept is its own choice, so such a tie is taken from the whole row, by
            # position. A superset first, for all such rows of the block at once (the margin is far above
            # float32's spacing), then the exact rounded test.
            tied = [r for r, picked in enumerate(rows_picked)
                    if wide < n - 1 and round(picked[-1][1], 6) >= cutoffs[r]]
            if tied:
                floor = np.asarray([cutoffs[r] - 1e-6 for r in tied], dtype=np.float32)[:, None]
                at, cols_at = np.nonzero(block[tied] >= floor)
                found: list[list[tuple[int, float]]] = [[] for _ in tied]
                for a, j, v in zip(at.tolist(), cols_at.tolist(), block[np.asarray(tied)[at], cols_at].tolist()):
                    if round(v, 6) >= cutoffs[tied[a]]:
                        found[a].append((j, v))
                for a, r in enumerate(tied):
                    rows_picked[r] = sorted(found[a], key=_by_cosine_then_position)
            nearest.extend([Neighbour(j, v) for j, v in picked[:take]] for picked in rows_picked)
        if on_progress is not None:
            on_progress(step.advanced(len(nearest)))
    return Neighbourhoods(k, points, nearest, time.perf_counter() - t0)


def find_neighbourhoods(store: Store, collection: str, k: int = DEFAULT_K, *, paths: Collection[str] | None = None,
                        order: Sequence[str] | None = None, on_progress: ProgressFn | None = None,
                        cancel: CancelToken | None = None) -> Neighbourhoods:
    """The neighbourhoods of every point of ``collection`` (of ``paths`` only, when given: a partial load's
    files, whose neighbours are then looked for among themselves), points in ``order``'s reading order."""
    return StoredEmbeddings(store, collection, k=k, paths=paths, order=order).load(on_progress, cancel)


class StoredEmbeddings:
    """A collection's vectors and neighbourhoods, as lint's embeddings (`lint.ChunkEmbeddings`): what the rules
    that need embeddings (``hub``, ``orphan``, ``near-duplicate``) read.

    The store is read and searched once, on `load` (or on the first question): call `load` up front to report
    progress and allow stopping; afterwards the store is not needed.

    Args:
        store: the store holding the collection.
        collection: the collection (`Store.use`) of the tree and strategy the chunks were cut with.
        k: the neighbourhood size.
        paths: only these documents' points (a partial load); None: the whole collection.
        order: the documents' paths in reading order (a pair is reported at its later chunk).
    """

    def __init__(self, store: Store, collection: str, *, k: int = DEFAULT_K, paths: Collection[str] | None = None,
                 order: Sequence[str] | None = None) -> None:
        self.store = store
        self.collection = collection
        self.k = k
        self.paths = paths
        self.order = list(order or ())
        self._found: Neighbourhoods | None = None
        self._vectors: np.ndarray | None = None

    def load(self, on_progress: ProgressFn | None = None, cancel: CancelToken | None = None) -> Neighbourhoods:
        """Read the points and find their neighbourhoods (once).

        Raises:
            StoreError: the store failed.
            Cancelled: ``cancel`` was cancelled; a later call starts again.
        """
        if self._found is None:
            points, vectors = self.store.points(self.collection, self.paths)
            ordered = reading_order(points, self.order)
            row = {p.id: i for i, p in enumerate(points)}
            vectors = vectors[[row[p.id] for p in ordered]] if len(ordered) else vectors
            self._found = search_neighbourhoods(ordered, vectors, self.k, on_progress=on_progress, cancel=cancel)
            self._vectors = vectors
        return self._found

    def neighbourhoods(self) -> Neighbourhoods:
        """Every chunk's k nearest chunks (`load`, if it has not run)."""
        return self.load()

    def vector(self, path: str, index: int) -> np.ndarray | None:
        """The stored vector of chunk ``index`` of the document at ``path`` (None when it is not stored)."""
        found = self.load()
        i = found.find(path, index)
        return None if i is None or self._vectors is None else self._vectors[i]
