"""Neighbourhoods in embedding space (`chunkscope.retrieval.neighbours`), from vectors kept in a real Qdrant Edge store.

The vectors are set by hand (an embedder that looks them up by text), so every expectation follows from the
geometry: the blocked pass over the stored vectors is checked against a brute-force search, the k-occurrence
skewness against a hand computation, and hubs, orphans and near-twins against a scene built to have them.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from chunkscope.retrieval import neighbours
from chunkscope.chunking.model import Chunk
from chunkscope.embedding.embedder import Embedded, EmbedStats
from chunkscope.retrieval.neighbours import Neighbour, Neighbourhoods, StoredEmbeddings, find_neighbourhoods
from chunkscope.progress import Cancelled, CancelToken, Phase
from chunkscope.retrieval.indexing import index_chunks
from chunkscope.retrieval.store import Store, StoredPoint

DIM = 16


class TableEmbedder:
    """The vector of each text, looked up in a table (what a model would give, chosen by the test)."""

    model_id = "table"
    model = "table"
    dim = DIM
    max_seq_length = 10_000

    def __init__(self, table: dict[str, np.ndarray]) -> None:
        self.table = table

    def embed(self, texts, *, on_progress=None, cancel=None, token_counts=None, label="") -> Embedded:
        vecs = np.stack([self.table[t] for t in texts]).astype(np.float32)
        return Embedded(vecs, EmbedStats(texts=len(texts), misses=len(texts)))


def unit(v) -> np.ndarray:
    v = np.asarray(v, dtype=np.float64)
    return v / np.linalg.norm(v)


def axis(*weights: tuple[int, float]) -> np.ndarray:
    v = np.zeros(DIM)
    for i, w in weights:
        v[i] += w
    return unit(v)


def index_points(store: Store, named: list[tuple[str, str, np.ndarray]]) -> str:
    """One single-chunk document per (path, text, vector); returns the collection."""
    table = {text: vec for _, text, vec in named}
    emb = TableEmbedder(table)
    chunks = [Chunk(path=path, index=0, start=0, end=len(text), start_line=1, end_line=1, text=text, tokens=1)
              for path, text, _ in named]
    name = store.use("test", emb, {"scene": 1})
    index_chunks(store, chunks, emb, name)
    return name


def brute_force(vectors: np.ndarray, k: int) -> list[list[int]]:
    """Each row's k nearest other rows by cosine: the oracle (fine for a test's few dozen points)."""
    v = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    sims = v @ v.T
    np.fill_diagonal(sims, -np.inf)
    return [list(np.argsort(-row, kind="stable")[:k]) for row in sims]


# --- the store's answers are the nearest neighbours -----------------------------------------------------------


def test_neighbourhoods_from_qdrant_are_the_brute_force_nearest(store):
    rng = np.random.default_rng(7)
    vectors = rng.standard_normal((60, DIM))
    named = [(f"d{i:02}.md", f"text {i}", unit(v)) for i, v in enumerate(vectors)]
    name = index_points(store, named)
    found = find_neighbourhoods(store, name, k=6, order=[p for p, _, _ in named])
    # In reading order: point i is document d{i}.
    assert [p.path for p in found.points] == [p for p, _, _ in named]
    expected = brute_force(np.stack([v for _, _, v in named]), 6)
    assert [[nb.point for nb in row] for row in found.nearest] == expected
    for i, row in enumerate(found.nearest):
        for nb in row:
            assert nb.score == pytest.approx(float(named[i][2] @ named[nb.point][2]), abs=1e-5)
    # Every chunk has k nearest, so the k-occurrences add up to n * k and average k.
    assert sum(found.occurrences) == 60 * 6 and found.mean == 6
    assert all(found.occurrences[nb.point] > 0 for row in found.nearest for nb in row)


def test_a_partial_load_looks_for_neighbours_among_its_own_files(store):
    named = [("a.md", "a", axis((0, 1))), ("b.md", "b", axis((0, 1), (1, 0.1))), ("c.md", "c", axis((1, 1))),
             ("d.md", "d", axis((0, 1), (2, 0.05)))]
    name = index_points(store, named)
    found = find_neighbourhoods(store, name, k=1, paths={"a.md", "c.md"})
    assert [p.path for p in found.points] == ["a.md", "c.md"]
    # b and d are a's nearest in the whole collection, but not part of this run.
    assert [[found.points[nb.point].path for nb in row] for row in found.nearest] == [["c.md"], ["a.md"]]


# --- the measures ---------------------------------------------------------------------------------------------


def _points(n: int) -> list[StoredPoint]:
    return [StoredPoint(f"id{i}", f"p{i}.md", 0, 0, 10, 1, f"sha{i}") for i in range(n)]


def test_skewness_is_the_third_standardised_moment_of_the_k_occurrences():
    # k = 1: points 1-4 all have point 0 as their nearest, point 0 has point 1: N_1 = [4, 1, 0, 0, 0].
    nearest = [[Neighbour(1, 0.5)], *[[Neighbour(0, 0.5)] for _ in range(4)]]
    found = Neighbourhoods(1, _points(5), nearest)
    assert found.occurrences == [4, 1, 0, 0, 0]
    assert [[nb.point for nb in r] for r in found.pointed_by] == [[1, 2, 3, 4], [0], [], [], []]
    # By hand: mean 1; deviations 3, 0, -1, -1, -1; m2 = 12/5 = 2.4; m3 = (27 - 3)/5 = 4.8; 4.8 / 2.4^1.5.
    assert found.mean == 1.0
    assert found.sd == pytest.approx(math.sqrt(2.4))
    assert found.skewness == pytest.approx(4.8 / 2.4**1.5)  # 1.2910
    # When every chunk is a neighbour as often as every other, it is not defined.
    even = Neighbourhoods(1, _points(2), [[Neighbour(1, 0.9)], [Neighbour(0, 0.9)]])
    assert even.skewness is None and even.hubs() == [] and even.orphans() == []


def test_hub_threshold_is_mean_plus_three_sd_and_at_least_twice_the_share():
    found = Neighbourhoods(1, _points(5), [[Neighbour(1, 0.5)], *[[Neighbour(0, 0.5)] for _ in range(4)]])
    # mean 1 + 3 * 1.549 = 5.65 > 2k = 2: nobody is a hub with only 4 others to point at it.
    assert found.hub_threshold == pytest.approx(1 + 3 * math.sqrt(2.4))
    assert found.hubs() == []
    # Twenty points, all pointing at point 0 except point 0 itself: N_1(0) = 19, far out.
    twenty = Neighbourhoods(1, _points(20), [[Neighbour(1, 0.5)], *[[Neighbour(0, 0.5)] for _ in range(19)]])
    assert twenty.hubs() == [0]
    assert twenty.orphans() == list(range(2, 20))


# --- a scene with a hub, an island, a shadowed chunk and near-twins -------------------------------------------

#: 8 clusters of 5 points (cluster a along axis a, its points apart along axes 8..12: cosine 0.8 inside a
#: cluster, 0.2 or 0 across), a hub h along the clusters' diagonal (cosine 0.316 to every cluster point: each
#: one's 5th nearest), an island near nothing, six identical copies G of one text, and A: G reworded (0.96).
K = 5


def scene() -> list[tuple[str, str, np.ndarray]]:
    named = []
    for a in range(8):
        for j in range(5):
            named.append((f"c{a}-{j}.md", f"cluster {a} point {j}", axis((a, 1), (8 + j, 0.5))))
    named.append(("hub.md", "a chunk about everything", unit(np.r_[np.ones(8), np.zeros(DIM - 8)])))
    named.append(("island.md", "a lonely link", axis((13, 1), (0, 0.1), (8, 0.05))))
    for g in range(6):
        named.append((f"g{g}.md", "the same boilerplate paragraph", axis((14, 1))))
    t = math.tan(math.acos(0.96))
    named.append(("near.md", "the same boilerplate paragraph, reworded", axis((14, 1), (15, t))))
    return named


def test_a_scene_finds_its_hub_its_orphans_and_its_near_twins(store):
    named = scene()
    name = index_points(store, named)
    found = find_neighbourhoods(store, name, k=K, order=sorted(p for p, _, _ in named))
    at = {p.path: i for i, p in enumerate(found.points)}
    # The hub is in every cluster point's neighbourhood, and in nobody else's.
    assert found.occurrences[at["hub.md"]] == 40
    assert [found.points[i].path for i in found.hubs()] == ["hub.md"]
    # Orphans: the island, and A, which the six identical copies keep out of each other's neighbourhoods.
    assert sorted(found.points[i].path for i in found.orphans()) == ["island.md", "near.md"]
    assert found.twin(at["island.md"]) is None
    assert found.nearest[at["island.md"]][0].point == at["c0-0.md"]
    twin = found.twin(at["near.md"])
    assert twin is not None and found.points[twin.point].path.startswith("g")
    assert twin.score == pytest.approx(0.96, abs=1e-4)
    # Near-duplicates: A and the copies in its neighbourhood (at 0.96), reported at A, the later in reading order;
    # the identical copies are the same text, not near ones, and the clusters' 0.8 is not near enough.
    pairs = {(found.points[i].path, found.points[nb.point].path) for i in range(len(found.points))
             for nb in found.near_duplicates(i)}
    assert len(pairs) == K and all(a == "near.md" and b.startswith("g") for a, b in pairs)
    assert all(nb.score == pytest.approx(0.96, abs=1e-4) for nb in found.near_duplicates(at["near.md"]))
    n = len(named)
    assert found.mean == K and sum(found.occurrences) == n * K
    assert found.skewness is not None and found.skewness > 3  # one hub at 8x its share


def test_overlapping_chunks_are_one_place_not_near_twins():
    a = StoredPoint("a", "x.md", 0, 0, 100, 1, "s1")
    b = StoredPoint("b", "x.md", 1, 80, 180, 3, "s2")
    c = StoredPoint("c", "x.md", 2, 180, 260, 5, "s3")
    found = Neighbourhoods(1, [a, b, c], [[Neighbour(1, 0.99)], [Neighbour(0, 0.99)], [Neighbour(1, 0.97)]])
    assert not found.apart(0, 1) and found.apart(1, 2)
    assert found.near_duplicates(1) == [] and found.twin(0) is None
    assert found.near_duplicates(2) == [Neighbour(1, 0.97)]


# --- progress, stopping, the vectors --------------------------------------------------------------------------


def test_the_pass_reports_progress_per_batch_and_stops_when_cancelled(store, monkeypatch):
    named = scene()
    name = index_points(store, named)
    monkeypatch.setattr(neighbours, "BATCH", 20)
    seen = []
    find_neighbourhoods(store, name, k=K, on_progress=seen.append)
    n = len(named)
    assert [(p.phase, p.done, p.total, p.unit) for p in seen] == \
        [(Phase.NEIGHBOURS, d, n, "chunks") for d in (0, 20, 40, n)]
    token = CancelToken()
    token.cancel()
    with pytest.raises(Cancelled):
        find_neighbourhoods(store, name, k=K, cancel=token)


def test_stored_embeddings_give_each_chunks_vector_and_the_neighbourhoods_once(store):
    named = scene()
    name = index_points(store, named)
    emb = StoredEmbeddings(store, name, k=K)
    v = emb.vector("island.md", 0)
    assert v is not None and np.allclose(v, dict((p, vec) for p, _, vec in named)["island.md"], atol=1e-6)
    assert emb.vector("island.md", 1) is None and emb.vector("nowhere.md", 0) is None
    assert emb.neighbourhoods() is emb.neighbourhoods()


def test_equal_cosines_are_ordered_by_position_and_the_pass_spans_blocks(monkeypatch):
    """Copies of one vector tie: each point's neighbours are its copies in point order, whatever the block size."""
    monkeypatch.setattr(neighbours, "BATCH", 3)  # several blocks over 8 points
    base = axis((0, 1))
    vectors = np.stack([base, axis((1, 1)), base, base, axis((2, 1)), base, axis((1, 1), (2, 1)), base])
    found = neighbours.search_neighbourhoods(_points(8), vectors, k=3)
    copies = [0, 2, 3, 5, 7]
    for i in copies:
        assert [nb.point for nb in found.nearest[i]] == [j for j in copies if j != i][:3]
        assert all(nb.score == pytest.approx(1.0) for nb in found.nearest[i])
    assert [len(row) for row in found.nearest] == [3] * 8


def test_more_copies_than_the_margin_are_still_taken_in_point_order() -> None:
    """28 copies of each page (a versioned site) tie far beyond the margin the pass keeps: each point's
    neighbours are still its first copies in point order, not those the partition happened to keep."""
    pages = np.random.default_rng(7).standard_normal((20, DIM)).astype(np.float32)
    vectors = np.concatenate([pages] * 28)  # point i is a copy of page i % 20
    n = len(vectors)
    found = neighbours.search_neighbourhoods(_points(n), vectors, k=neighbours.DEFAULT_K)
    for i, row in enumerate(found.nearest):
        copies = [j for j in range(i % 20, n, 20) if j != i][:neighbours.DEFAULT_K]
        assert [nb.point for nb in row] == copies
    # Copies 0-10 of each page are somebody's nearest; the later 17 copies of every page are orphans.
    assert found.orphans() == [i for i in range(n) if i // 20 >= 11]
