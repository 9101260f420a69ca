"""The vector store: names and ids, sync (idempotent upserts, stale deletion, cancellation), search, errors.

Most tests use a deterministic fake embedder so they exercise the real local Qdrant in milliseconds; the
model-backed ones check the same behaviour with all-MiniLM-L6-v2.
"""

from __future__ import annotations

import hashlib
import time
from pathlib import Path

import numpy as np
import pytest

from chunkscope.chunking.model import Chunk
from chunkscope.chunking.params import ParamError
from chunkscope.cli.parsing import parse_filters
from chunkscope.embedding.embedder import Embedded, Embedder, EmbedStats
from chunkscope.progress import CancelToken
from chunkscope.retrieval.engine import StoreError, build_filter
from chunkscope.retrieval.ids import collection_name, owner_key, point_id, workspace_dir
from chunkscope.retrieval.indexing import BATCH, index_chunks
from chunkscope.retrieval.store import Store


class FakeEmbedder:
    """Vectors from a hash of the text: deterministic, normalized, no model. Counts what it is asked to embed."""

    model_id = "fake-model"
    model = "fake-model"
    dim = 16

    loaded = True  # nothing to load: an app asking for the model first gets it at once

    def __init__(self) -> None:
        self.seen: list[str] = []

    def load(self) -> "FakeEmbedder":
        return self

    def vector(self, text: str) -> np.ndarray:
        seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
        v = np.random.default_rng(seed).standard_normal(self.dim).astype(np.float32)
        return v / np.linalg.norm(v)

    def embed(self, texts, *, on_progress=None, cancel=None, token_counts=None, label="") -> Embedded:
        self.seen.extend(texts)
        vecs = np.stack([self.vector(t) for t in texts]) if texts else np.zeros((0, self.dim), np.float32)
        return Embedded(vecs, EmbedStats(texts=len(texts), misses=len(texts)))


def make_chunks(path: str, texts: list[str], **meta) -> list[Chunk]:
    out, pos = [], 0
    for i, t in enumerate(texts):
        out.append(Chunk(path=path, index=i, start=pos, end=pos + len(t), start_line=i + 1, end_line=i + 1, text=t,
                         tokens=len(t.split()), heading_path=["Doc", f"Part {i}"], metadata=dict(meta, part=i)))
        pos += len(t) + 2
    return out


def coll(store: Store) -> str:
    """The collection the tests below write to (`Store.use` is idempotent: the same name every call)."""
    return store.use("test", FakeEmbedder(), {"size": 1})


# --- names ----------------------------------------------------------------------------------------------------


def test_collection_name_depends_on_strategy_params_and_model():
    a = collection_name("section-sentence", {"max_tokens": 512, "overlap": 50}, "all-MiniLM-L6-v2")
    assert a.startswith("cs_section-sentence_") and a.endswith("_all-minilm-l6-v2")
    assert a == collection_name("section-sentence", {"overlap": 50, "max_tokens": 512}, "all-MiniLM-L6-v2")
    assert a != collection_name("section-sentence", {"max_tokens": 256, "overlap": 50}, "all-MiniLM-L6-v2")
    assert a != collection_name("section-sentence", {"max_tokens": 512, "overlap": 50}, "other-model")
    assert len(a.split("_")[2]) == 10
    # Another docs tree gets a collection of its own: a tree's sync never sees, rewrites or deletes another's.
    owned = collection_name("section-sentence", {"max_tokens": 512, "overlap": 50}, "all-MiniLM-L6-v2", "book-1a2b3c4d5e")
    assert owned == f"{a}_book-1a2b3c4d5e"


def test_owner_key_is_the_resolved_root(tmp_path, monkeypatch):
    (tmp_path / "book").mkdir()
    monkeypatch.chdir(tmp_path)
    assert owner_key("book") == owner_key(tmp_path / "book") == owner_key(tmp_path / "book" / ".." / "book")
    slug, digest = owner_key(tmp_path / "book").rsplit("-", 1)
    assert slug.endswith("-book") and len(slug) <= 24 and len(digest) == 10  # readable in a server's list
    assert owner_key(tmp_path / "book") != owner_key(tmp_path / "other")


def test_point_id_is_stable_and_content_addressed():
    a = point_id("a.md", 0, 10, "hello")
    assert a == point_id("a.md", 0, 10, "hello")
    assert len({a, point_id("b.md", 0, 10, "hello"), point_id("a.md", 1, 10, "hello"), point_id("a.md", 0, 10, "hellO")}) == 4
    # The same file and text in two trees: two ids.
    assert point_id("a.md", 0, 10, "hello", "tree-a") != point_id("a.md", 0, 10, "hello", "tree-b")


def test_workspace_is_in_the_cache_not_the_docs_tree(tmp_path, monkeypatch):
    monkeypatch.setenv("CHUNKSCOPE_CACHE", str(tmp_path / "cache"))
    docs = tmp_path / "My Docs"
    docs.mkdir()
    ws = workspace_dir(docs)
    assert ws.parent == tmp_path / "cache" / "workspaces"
    assert "my-docs" in ws.name
    assert ws != workspace_dir(tmp_path / "other")
    s = Store(docs)
    try:
        assert Path(s.location) == ws / "edge" and (ws / "edge").is_dir()
        assert not any(docs.iterdir())
    finally:
        s.close()


def test_filters_parse_ints_and_strings():
    assert parse_filters(["chapter=3", "path = a.md"]) == {"chapter": "3", "path": "a.md"}
    with pytest.raises(ParamError, match="--filter 'chapter': expected key=value"):
        parse_filters(["chapter"])
    f = build_filter({"chapter": "3"})
    meta, core = f.parts[0].parts  # the strategy's metadata first, the core field where a point has none
    assert (meta.key, meta.values) == ("meta.chapter", (3, "3"))
    lacks, field = core.parts
    assert (lacks.kind, lacks.parts[0].key, lacks.parts[0].values) == ("none", "meta_keys", ("chapter",))
    assert (field.key, field.values) == ("chapter", (3, "3"))
    # Where the store knows every point has the field (or none has), one plain condition.
    assert build_filter({"chapter": "3"}, has_meta=lambda key: True).parts[0] == meta
    assert build_filter({"chapter": "3"}, has_meta=lambda key: False).parts[0] == field
    assert build_filter({}) is None


# --- sync -----------------------------------------------------------------------------------------------------


def test_sync_is_idempotent_and_deletes_vanished_chunks(store):
    emb = FakeEmbedder()
    chunks = make_chunks("a.md", ["alpha text", "beta text", "gamma text"]) + make_chunks("b.md", ["delta text"])
    r1 = index_chunks(store, chunks, emb, coll(store))
    assert (r1.upserted, r1.unchanged, r1.deleted, r1.embedded) == (4, 0, 0, 4)
    assert store.count(coll(store)) == 4
    r2 = index_chunks(store, chunks, emb, coll(store))
    assert (r2.upserted, r2.unchanged, r2.deleted, r2.embedded) == (0, 4, 0, 0)
    assert store.count(coll(store)) == 4
    # Edit: "beta" changes, "gamma" disappears, a new chunk appears.
    edited = make_chunks("a.md", ["alpha text", "beta text, revised"]) + make_chunks("b.md", ["delta text", "epsilon"])
    emb.seen.clear()
    r3 = index_chunks(store, edited, emb, coll(store))
    assert store.count(coll(store)) == 4
    assert r3.deleted == 2  # old beta and gamma
    assert sorted(emb.seen) == ["beta text, revised", "epsilon"]
    ids = set(store.point_sigs(coll(store)))
    assert ids == {point_id(c.path, c.start, c.end, c.text, owner_key(store.docs_root)) for c in edited}


def test_truncated_counts_every_chunk_of_the_collection_not_only_those_written(store):
    emb = FakeEmbedder()
    emb.max_seq_length = 5
    chunks = make_chunks("a.md", ["short", "one two three four five six seven", "also short"])
    for c, n in zip(chunks, (1, 9, 2)):
        c.embed_tokens = n
    assert index_chunks(store, chunks, emb, coll(store)).truncated == 1
    again = index_chunks(store, chunks, emb, coll(store))
    assert (again.upserted, again.truncated) == (0, 1)  # nothing written, still one chunk the model cuts short


def test_payload_change_rewrites_point_without_duplicate(store):
    emb = FakeEmbedder()
    chunks = make_chunks("a.md", ["one", "two"])
    index_chunks(store, chunks, emb, coll(store), extra=lambda c: {"citation": "old"})
    r = index_chunks(store, chunks, emb, coll(store), extra=lambda c: {"citation": "new"})
    assert (r.upserted, r.unchanged) == (2, 0)
    assert store.count(coll(store)) == 2
    hit = store.search(emb.vector("one"), k=1, collection=coll(store))[0]
    assert hit.citation == "new" and hit.metadata == {"part": 0}


def test_cancelled_sync_is_consistent_and_next_run_completes(store):
    emb = FakeEmbedder()
    old = make_chunks("old.md", ["stale one", "stale two"])
    index_chunks(store, old, emb, coll(store))
    chunks = make_chunks("a.md", [f"chunk number {i}" for i in range(2 * BATCH + 10)])
    cancel = CancelToken()
    progress = []

    def on_progress(p) -> None:
        progress.append((p.done, p.total))
        if p.done >= BATCH:
            cancel.cancel()  # stop after the first batch

    r = index_chunks(store, chunks, emb, coll(store), on_progress=on_progress, cancel=cancel)
    assert r.cancelled and r.upserted == BATCH and r.deleted == 0
    assert store.count(coll(store)) == BATCH + 2  # the first batch, and the stale points kept until a full sync
    assert progress[0] == (0, len(chunks)) and progress[-1] == (BATCH, len(chunks))
    r2 = index_chunks(store, chunks, emb, coll(store))
    assert not r2.cancelled
    assert (r2.unchanged, r2.upserted, r2.deleted) == (BATCH, len(chunks) - BATCH, 2)
    assert store.count(coll(store)) == len(chunks)


def test_sync_cancelled_before_the_first_batch_writes_nothing(store):
    cancel = CancelToken()
    cancel.cancel()
    r = index_chunks(store, make_chunks("a.md", ["one", "two"]), FakeEmbedder(), coll(store), cancel=cancel)
    assert r.cancelled and r.upserted == 0 and store.count(coll(store)) == 0
    assert index_chunks(store, make_chunks("a.md", ["one", "two"]), FakeEmbedder(), coll(store), cancel=CancelToken()).upserted == 2


def test_search_marks_hits_under_threshold_and_filters(store):
    emb = FakeEmbedder()
    chunks = make_chunks("a.md", ["red", "green", "blue"], chapter=1) + make_chunks("b.md", ["cyan"], chapter=2)
    index_chunks(store, chunks, emb, coll(store))
    q = emb.vector("green")
    hits = store.search(q, k=4, threshold=0.99, collection=coll(store))
    assert [h.rank for h in hits] == [1, 2, 3, 4]
    assert hits[0].text == "green" and hits[0].kept and hits[0].score == pytest.approx(1.0, abs=1e-5)
    assert all(not h.kept for h in hits[1:])  # returned, but flagged as filtered out by the threshold
    assert all(hits[i].score >= hits[i + 1].score for i in range(3))
    assert [h.path for h in store.search(q, k=4, filters={"chapter": "2"}, collection=coll(store))] == ["b.md"]
    assert {h.path for h in store.search(q, k=4, filters={"path": "a.md"}, collection=coll(store))} == {"a.md"}
    assert store.search(q, k=4, filters={"chapter": "7"}, collection=coll(store)) == []
    d = hits[0].to_dict()
    for key in ("rank", "score", "path", "start", "end", "start_line", "heading_path", "citation", "url", "text"):
        assert key in d


# --- errors ---------------------------------------------------------------------------------------------------


def test_locked_local_store_names_the_path(tmp_path):
    first = Store(tmp_path, path=tmp_path / "q")
    try:
        with pytest.raises(StoreError) as err:
            Store(tmp_path, path=tmp_path / "q")
        msg = str(err.value)
        assert str(tmp_path / "q") in msg and "in use" in msg and "\n" not in msg
    finally:
        first.close()
    Store(tmp_path, path=tmp_path / "q").close()  # released on close


def test_unreachable_server_is_one_line_and_fast(tmp_path, monkeypatch):
    monkeypatch.setenv("QDRANT_API_KEY", "secret-key-value")
    t0 = time.monotonic()
    with pytest.raises(StoreError) as err:
        Store(tmp_path, url="http://127.0.0.1:9")
    assert time.monotonic() - t0 < 10
    msg = str(err.value)
    assert "http://127.0.0.1:9" in msg and "unreachable" in msg and "\n" not in msg
    assert "secret-key-value" not in msg


def test_url_and_path_together_are_refused(tmp_path):
    with pytest.raises(StoreError, match="either"):
        Store(tmp_path, url="http://127.0.0.1:9", path=tmp_path / "q")


# --- with the real model --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def real_embedder(tmp_path_factory):
    e = Embedder(cache_dir=tmp_path_factory.mktemp("store-embcache"))
    yield e
    e.close()


@pytest.mark.model
def test_real_model_index_query_and_cache(tmp_path, real_embedder):
    texts = [
        "Lidar measures distance by timing laser pulses reflected from surfaces.",
        "Electric motors and gearboxes drive the joints of a robot arm.",
        "A PID controller corrects the error between a setpoint and a measurement.",
    ]
    chunks = make_chunks("robots.md", texts)
    with Store(tmp_path, path=tmp_path / "q") as s:
        name = s.use("test", real_embedder, {})
        r1 = index_chunks(s, chunks, real_embedder, name)
        assert (r1.embedded, r1.upserted) == (3, 3)
        assert r1.device == "cpu (ONNX Runtime)"  # said by `index`: "3 embedded on cpu (ONNX Runtime)"
        hits = s.search(real_embedder.embed_query("How does a lidar sensor measure range?"), k=3, collection=name)
        assert hits[0].text == texts[0]
        s.drop(name)
        name = s.use("test", real_embedder, {})
        r2 = index_chunks(s, chunks, real_embedder, name)  # a fresh collection, but every vector comes from the cache
        assert (r2.embedded, r2.cached, r2.upserted) == (0, 3, 3)
        assert r2.device is None  # nothing ran on any device


# --- the server path, with an in-memory Qdrant standing in for the server -------------------------------------


# The server branch creates payload indexes (they speed up a server's filters); the in-memory engine warns it has none.
@pytest.mark.filterwarnings("ignore:Payload indexes have no effect")
def test_server_path_runs_the_same_sync_and_search(tmp_path, monkeypatch):
    """No Qdrant server can run here, so the server branch is driven against qdrant-client's in-memory engine:
    the url and the API key reach the client as a server would get them, and sync, stale deletion, search,
    threshold and filters behave exactly as on the local store."""
    import qdrant_client

    real_client = qdrant_client.QdrantClient
    made: list[dict] = []

    def as_server(*args, **kwargs):
        assert "path" not in kwargs and not args  # the server branch never opens a folder
        made.append(kwargs)
        return real_client(location=":memory:")

    monkeypatch.setattr(qdrant_client, "QdrantClient", as_server)
    monkeypatch.setenv("QDRANT_API_KEY", "k-123")
    with Store(tmp_path / "docs", url="https://qdrant.example:6333") as s:
        assert s.mode == "server" and s.path is None and "k-123" not in repr(s)
        assert made == [{"url": "https://qdrant.example:6333", "api_key": "k-123", "timeout": 3,
                         "check_compatibility": False}]
        emb = FakeEmbedder()
        name = s.use("test", emb, {"size": 1})
        chunks = make_chunks("a.md", ["red", "green", "blue"], chapter=1) + make_chunks("b.md", ["cyan"], chapter=2)
        r1 = index_chunks(s, chunks, emb, name)
        assert (r1.upserted, r1.deleted) == (4, 0) and s.count(name) == 4
        assert index_chunks(s, chunks, emb, name).unchanged == 4  # re-index: nothing written
        fewer = chunks[:2] + chunks[3:]
        assert index_chunks(s, fewer, emb, name).deleted == 1 and s.count(name) == 3
        hits = s.search(emb.vector("green"), k=3, threshold=0.99, collection=name)
        assert hits[0].text == "green" and hits[0].kept and not any(h.kept for h in hits[1:])
        assert [h.path for h in s.search(emb.vector("green"), k=3, filters={"chapter": "2"}, collection=name)] == ["b.md"]


def test_server_without_api_key_passes_none(tmp_path, monkeypatch):
    import qdrant_client

    real_client = qdrant_client.QdrantClient
    made: list[dict] = []
    monkeypatch.setattr(qdrant_client, "QdrantClient", lambda **kw: made.append(kw) or real_client(location=":memory:"))
    monkeypatch.delenv("QDRANT_API_KEY", raising=False)
    Store(tmp_path, url="http://localhost:6333").close()
    assert made[0]["api_key"] is None


def test_the_storage_estimate_is_the_size_of_what_the_store_writes(store):
    # One payload definition: stats and the sweep estimate exactly the payloads a real local Qdrant keeps
    # (with no citation template or site, as the estimate assumes), plus float32 vectors.
    from chunkscope.retrieval.payload import payload_bytes, storage_estimate

    chunks = make_chunks("a.md", ["one", "two words", "ünïcode ✓"])
    est = storage_estimate(chunks, dim=1)  # counts the embedder's tokens, as indexing does before it writes
    assert all(c.embed_tokens is not None for c in chunks)
    index_chunks(store, chunks, FakeEmbedder(), coll(store))
    points, _ = store.engine.scroll(coll(store), None, None)
    assert len(points) == 3
    assert est.payload_bytes == sum(payload_bytes(p.payload) for p in points)
    assert (est.vectors, est.vector_bytes) == (3, 3 * 4)


# --- the engines: Qdrant Edge (default), qdrant-client's local mode (fallback), in-memory (server stand-in) ---------


def engine_store(tmp_path: Path, engine: str) -> Store:
    return Store(tmp_path / "docs", path=None if engine == "memory" else tmp_path / engine, engine=engine)


def test_every_engine_gives_the_same_answers_ties_ordered_by_id(tmp_path):
    """Same points, same questions: the same hits with the same scores on Edge, local mode and the server path
    (qdrant-client in memory), in every mode; chunks with equal scores come in point-id order on all three."""
    emb = FakeEmbedder()
    texts = ["borrowing a value", "the same words", "moving a value", "closures capture", "the same words"]
    chunks = make_chunks("a.md", texts, chapter=1) + make_chunks("b.md", texts[:3], chapter=2)
    answers: dict[str, list] = {}
    for engine in ("edge", "local", "memory"):
        with engine_store(tmp_path, engine) as s:
            name = s.use("test", emb, {})
            index_chunks(s, chunks, emb, name)
            got = []
            for mode, k in (("dense", 8), ("keyword", 8), ("hybrid", 8), ("hybrid", 3)):
                for q in ("the same words", "a value"):
                    hits = s.search(emb.vector(q), k=k, collection=name, mode=mode, text=q)
                    got.append([(h.id, round(h.score, 5)) for h in hits])
                    ties = [(h.score, h.id) for h in hits]
                    assert ties == sorted(ties, key=lambda t: (-t[0], t[1]))  # equal scores by id
            got.append([(h.id, h.path) for h in s.search(emb.vector("x"), k=8, collection=name,
                                                         filters={"chapter": "2"})])
            answers[engine] = got
    assert answers["edge"] == answers["local"] == answers["memory"]
    assert {p for _, p in answers["edge"][-1]} == {"b.md"}


def test_hybrid_scores_are_reciprocal_rank_fusion_with_k_2(tmp_path):
    emb = FakeEmbedder()
    with engine_store(tmp_path, "edge") as s:
        name = s.use("test", emb, {})
        index_chunks(s, make_chunks("a.md", ["borrowing a value", "moving things", "borrowed values moved"]), emb, name)
        q = "borrowing values"
        dense = [h.id for h in s.search(emb.vector(q), k=3, collection=name)]
        keyword = [h.id for h in s.search(None, k=3, collection=name, mode="keyword", text=q)]
        fused = {h.id: h.score for h in s.search(emb.vector(q), k=3, collection=name, mode="hybrid", text=q)}
        want = {pid: sum(1 / (2 + side.index(pid)) for side in (dense, keyword) if pid in side) for pid in dense}
        assert fused == pytest.approx(want, rel=1e-6)


def test_a_store_held_by_another_process_is_one_line(tmp_path):
    import subprocess
    import sys

    folder = tmp_path / "q"
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time\nfrom chunkscope.retrieval.store import Store\n"
         f"s = Store({str(tmp_path)!r}, path={str(folder)!r})\nprint('open', flush=True)\nsys.stdin.read()"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "open"
        with pytest.raises(StoreError) as err:
            Store(tmp_path, path=folder)
        msg = str(err.value)
        assert msg.startswith(f"{folder}: the local vector store is in use by another chunkscope process")
        assert "\n" not in msg
    finally:
        holder.communicate("", timeout=60)
    Store(tmp_path, path=folder).close()  # free again once the other process is gone


def _damage(folder: Path) -> None:
    """Overwrite every file of a shard's segments with garbage, as a disk error or another program would."""
    for f in (folder / "segments").rglob("*"):
        if f.is_file():
            f.write_bytes(b"\xff" * 64)


def test_a_damaged_collection_is_moved_aside_and_rebuilt(tmp_path, recwarn):
    emb = FakeEmbedder()
    chunks = make_chunks("a.md", ["one", "two", "three"])
    with Store(tmp_path, path=tmp_path / "q") as s:
        name = s.use("test", emb, {})
        index_chunks(s, chunks, emb, name)
    _damage(tmp_path / "q" / name)
    with Store(tmp_path, path=tmp_path / "q") as s:
        assert s.use("test", emb, {}) == name
        assert len(s.notices) == 1 and "\n" not in s.notices[0]
        assert s.notices[0].startswith(f"vector store collection {name} was unreadable (") and "moved it to" in s.notices[0]
        assert any(str(w.message) == s.notices[0] for w in recwarn)
        assert s.count(name) == 0
        r = index_chunks(s, chunks, emb, name)
        assert (r.upserted, s.count(name)) == (3, 3)
        assert s.search(emb.vector("two"), k=1, collection=name)[0].text == "two"
    assert len(list((tmp_path / "q" / ".damaged").iterdir())) == 1  # kept aside, not deleted


def test_a_rebuild_recovers_a_collection_damaged_while_open(tmp_path):
    emb = FakeEmbedder()
    chunks = make_chunks("a.md", ["one", "two"])
    with Store(tmp_path, path=tmp_path / "q") as s:
        name = s.use("test", emb, {})
        index_chunks(s, chunks, emb, name)
        s.engine.close()  # as if another program scribbled on the files while nothing held them
        _damage(tmp_path / "q" / name)
    with Store(tmp_path, path=tmp_path / "q") as s:
        s.drop(name)  # what --rebuild does first
        s.ensure_collection(name, emb.dim)
        assert index_chunks(s, chunks, emb, name).upserted == 2 and s.count(name) == 2


def test_a_local_mode_workspace_is_replaced_and_rebuilt_from_the_embedding_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("CHUNKSCOPE_CACHE", str(tmp_path / "cache"))
    docs = tmp_path / "docs"
    docs.mkdir()
    emb = FakeEmbedder()
    chunks = make_chunks("a.md", ["one", "two"])
    with Store(docs, engine="local") as old:  # what chunkscope wrote before Qdrant Edge
        assert Path(old.location) == workspace_dir(docs) / "qdrant"
        index_chunks(old, chunks, emb, old.use("test", emb, {}))
    with pytest.warns(RuntimeWarning, match="older chunkscope"):
        new = Store(docs)
    with new:
        assert len(new.notices) == 1 and "rebuilt from the embedding cache" in new.notices[0]
        assert not (workspace_dir(docs) / "qdrant").exists()
        name = new.use("test", emb, {})
        assert index_chunks(new, chunks, emb, name).upserted == 2
    with Store(docs) as again:
        assert again.notices == [] and again.count(name) == 2


def test_a_local_mode_store_in_a_configured_folder_is_moved_aside(tmp_path):
    emb = FakeEmbedder()
    with Store(tmp_path, path=tmp_path / "shared", engine="local") as old:
        index_chunks(old, make_chunks("a.md", ["one"]), emb, old.use("test", emb, {}))
    with pytest.warns(RuntimeWarning, match="moved to .local-mode-"):
        Store(tmp_path, path=tmp_path / "shared").close()
    assert not (tmp_path / "shared" / "meta.json").exists()
    assert len(list((tmp_path / "shared").glob(".local-mode-*/meta.json"))) == 1


def test_the_index_line_says_where_the_texts_were_embedded() -> None:
    from chunkscope.cli.retrieval_setup import report_line
    from chunkscope.retrieval.store import IndexReport

    ran = IndexReport(chunks=5, embedded=3, cached=2, upserted=5, device="cuda:0 (torch)", seconds=1.0)
    assert report_line("recursive", ran).startswith("recursive: 5 chunks, 3 embedded on cuda:0 (torch), 2 from cache")
    cached = IndexReport(chunks=5, cached=5, upserted=5, seconds=1.0)
    assert "embedded on" not in report_line("recursive", cached)
