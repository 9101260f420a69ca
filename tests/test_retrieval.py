"""Citations, chunk URLs, and the Retriever end to end on a tiny docs tree (real model, real local Qdrant)."""

from __future__ import annotations

from pathlib import Path

import pytest

from chunkscope.chunking.model import Span
from chunkscope.chunking.strategy import Strategy
from chunkscope.document.loader import load_docs
from chunkscope.embedding.embedder import Embedder
from chunkscope.retrieval.retriever import Retriever, chunk_url, render_citation
from chunkscope.retrieval.store import Store
from chunkscope.chunking.strategies._common import sections, trim
from chunkscope.site.numbering import doc_numbering

DOCS = {
    "ch01-intro.md": """---
title: Introduction to Robots
---
# Chapter 1: Introduction

Robots are machines that sense, think and act in the physical world.

## 1.1 Sensors

Cameras, lidar and IMUs let a robot perceive its environment. A lidar measures distance by timing laser pulses.

## 1.2 Actuators

Electric motors, gearboxes and hydraulic pistons move the joints of a robot arm.
""",
    "ch02-kinematics.md": """# Chapter 2: Kinematics

## 2.1 Forward Kinematics

Forward kinematics computes the end-effector pose from the joint angles with the Denavit-Hartenberg convention.

## 2.2 Inverse Kinematics

Inverse kinematics searches for joint angles that reach a desired end-effector pose; there may be many solutions.
""",
    "ch03-control.md": """# Chapter 3: Control

## 3.1 PID Control

A PID controller adds proportional, integral and derivative terms of the tracking error to compute a command.
""",
}


class SectionsForTest(Strategy):
    """One chunk per section up to ``level`` (a stand-in for the real strategies, which others are writing)."""

    name = "test-sections"
    citation_template = "Chapter {chapter}, Section {section_number}: {section_title}"
    from chunkscope.chunking.params import Param

    parameters = (Param("level", int, 2, "deepest heading level that starts a chunk", 1, 6),)

    def spans(self, doc):
        n = doc_numbering(doc)
        out = []
        for i, s in enumerate(sections(doc, self.params["level"])):
            a, b = trim(doc.text, s.start, s.end)
            if b > a:
                meta = {"chapter_id": n.chapter_id, "chapter": n.chapter, "section_number": i,
                        "section_title": s.heading.text if s.heading else None}
                out.append(Span(a, b, meta))
        return out


def write_docs(root: Path, docs: dict[str, str] = DOCS) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for name, text in docs.items():
        (root / name).write_text(text, encoding="utf-8")
    return root


# --- citations ------------------------------------------------------------------------------------------------


def test_citation_drops_empty_parts_with_their_words():
    t = "Chapter {chapter}, Section {section_number}: {section_title}"
    assert render_citation(t, {"chapter": 3, "section_number": 2, "section_title": "Forward Kinematics"}) == \
        "Chapter 3, Section 2: Forward Kinematics"
    assert render_citation(t, {"chapter": 3, "section_title": "Forward Kinematics"}) == "Chapter 3: Forward Kinematics"
    assert render_citation(t, {"chapter": 3, "section_number": None, "section_title": "Intro"}) == "Chapter 3: Intro"
    assert render_citation(t, {"section_title": "Intro"}) == "Intro"
    assert render_citation(t, {"chapter": 3}) == "Chapter 3"
    assert render_citation(t, {}) == ""
    seed2 = "Source: Chapter {chapter_number}, Section {section_number} - {section_title}"
    assert render_citation(seed2, {"section_number": 0, "section_title": "Intro"}) == "Source: Section 0 - Intro"
    assert render_citation(seed2, {"chapter_number": 2, "section_title": "Intro"}) == "Source: Chapter 2 - Intro"
    # 0 is a value (seed 002 numbers sections from 0), not a missing one.
    assert render_citation(t, {"chapter": 1, "section_number": 0, "section_title": "A"}) == "Chapter 1, Section 0: A"


def test_citation_formats_lists_specs_and_literal_braces():
    assert render_citation("{heading_path}", {"heading_path": ["Book", "Part", "Leaf"]}) == "Book › Part › Leaf"
    assert render_citation("ch{chapter:02d} › {heading}", {"chapter": 3, "heading": "Motion"}) == "ch03 › Motion"
    assert render_citation("ch{chapter:02d} › {heading}", {"heading": "Motion"}) == "Motion"
    assert render_citation("{{{heading}}}", {"heading": "x"}) == "{x}"
    assert render_citation("{heading} ({lines})", {"heading": "Motion"}) == "Motion"
    assert "None" not in render_citation("{a} - {b} | {c}", {"a": None, "b": "B", "c": None})
    assert render_citation("{a} - {b} | {c}", {"a": None, "b": "B", "c": None}) == "B"


def test_citation_uses_chunk_and_document_fields(tmp_path):
    tree = load_docs(write_docs(tmp_path / "docs"))
    doc = tree.get("ch01-intro.md")
    chunk = SectionsForTest().chunk(doc)[1]
    assert render_citation("{title} › {heading}", {}, chunk, doc) == "Introduction to Robots › 1.1 Sensors"
    assert render_citation("{path}:{lines}", {}, chunk, doc) == f"ch01-intro.md:{chunk.start_line}-{chunk.end_line}"
    assert render_citation(None, {}, chunk, doc) == "Introduction to Robots › 1.1 Sensors"  # the base template


def test_retriever_citation_falls_back_when_template_fields_are_missing(tmp_path):
    tree = load_docs(write_docs(tmp_path / "docs"))

    class NoFields(SectionsForTest):
        citation_template = "Part {part_number}"

    emb = Embedder(cache_dir=tmp_path / "emb")  # nothing is embedded: the model is never loaded
    with Store(tree.root, path=tmp_path / "q") as store:
        r = Retriever(tree, NoFields(), emb, store)
        sensors = next(c for c in r.chunks if c.heading_path[-1] == "1.1 Sensors")
        assert r.citation(sensors) == "Introduction to Robots › 1.1 Sensors"
        r2 = Retriever(tree, SectionsForTest(), emb, store, citation_template="{nothing}")
        assert r2.citation(sensors) == "Introduction to Robots › 1.1 Sensors"
    assert not emb.loaded


def test_chunk_url_links_the_heading_the_chunk_starts_under(tmp_path):
    tree = load_docs(write_docs(tmp_path / "docs"))
    doc = tree.get("ch01-intro.md")
    chunks = SectionsForTest().chunk(doc)
    assert chunk_url("https://ex.org/book/", doc, chunks[1]) == "https://ex.org/book/ch01-intro#11-sensors"
    assert chunk_url(None, doc, chunks[2]) == "/ch01-intro#12-actuators"
    # Docusaurus gives the H1 (the page title) no id: content under it links to the page itself.
    assert chunk_url("https://ex.org", doc, chunks[0]) == "https://ex.org/ch01-intro"


# --- the retriever (real model) -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def embedder(tmp_path_factory):
    e = Embedder(cache_dir=tmp_path_factory.mktemp("retr-embcache"))
    yield e
    e.close()


@pytest.mark.model
def test_index_query_reindex_and_edit(tmp_path, embedder):
    root = write_docs(tmp_path / "docs")
    tree = load_docs(root)
    store = Store(root, path=tmp_path / "qdrant")
    try:
        r = Retriever(tree, SectionsForTest(), embedder, store, "https://ex.org/book")
        rep = r.ensure_indexed()
        n = len(r.chunks)
        assert n == 8 and (rep.upserted, rep.deleted, rep.cancelled) == (n, 0, False)
        assert rep.embedded + rep.cached == n

        hits = r.query("How does a lidar measure distance?", k=3, threshold=0.0)
        top = hits[0]
        assert (top.path, top.heading_path[-1], top.rank, top.kept) == ("ch01-intro.md", "1.1 Sensors", 1, True)
        assert top.citation == "Chapter 1, Section 1: 1.1 Sensors"
        assert top.url == "https://ex.org/book/ch01-intro#11-sensors"
        assert top.text == tree.get("ch01-intro.md").text[top.start:top.end]
        assert top.metadata["chapter_id"] == "ch01" and top.embed_tokens and top.embed_tokens > 10
        # The same question with an impossible threshold: same hits, all flagged.
        flagged = r.query("How does a lidar measure distance?", k=3, threshold=0.99)
        assert [h.path for h in flagged] == [h.path for h in hits] and not any(h.kept for h in flagged)
        # Chapter filter (seed 004: filter by chapter_id; ints parsed for chapter).
        assert {h.path for h in r.query("joint angles", k=5, filters={"chapter_id": "ch02"})} == {"ch02-kinematics.md"}
        assert {h.path for h in r.query("joint angles", k=5, filters={"chapter": "3"})} == {"ch03-control.md"}

        # Re-index unchanged: nothing embedded, nothing written, the point count unchanged.
        r2 = Retriever(load_docs(root), SectionsForTest(), embedder, store, "https://ex.org/book")
        rep2 = r2.ensure_indexed()
        assert (rep2.embedded, rep2.upserted, rep2.deleted, rep2.unchanged) == (0, 0, 0, n)
        assert store.count(r2.collection) == n

        # Edit: drop the actuators section, rewrite the PID one.
        intro = DOCS["ch01-intro.md"].split("## 1.2 Actuators")[0].rstrip() + "\n"
        (root / "ch01-intro.md").write_text(intro)
        (root / "ch03-control.md").write_text(DOCS["ch03-control.md"].replace("PID controller", "PID loop"))
        r3 = Retriever(load_docs(root), SectionsForTest(), embedder, store, "https://ex.org/book")
        rep3 = r3.ensure_indexed()
        assert rep3.deleted == 2 and rep3.upserted == 1 and rep3.embedded == 1
        assert store.count(r3.collection) == len(r3.chunks) == n - 1
        texts = [h.text for h in r3.query("electric motors and gearboxes", k=10, threshold=None)]
        assert not any("gearboxes" in t for t in texts) and not any("PID controller" in t for t in texts)
        assert r3.query("PID loop", k=1)[0].url == "https://ex.org/book/ch03-control#31-pid-control"
        # Another site url changes every payload, never a vector: all rewritten, nothing embedded.
        r4 = Retriever(load_docs(root), SectionsForTest(), embedder, store)
        rep4 = r4.ensure_indexed()
        assert (rep4.upserted, rep4.embedded, rep4.deleted) == (n - 1, 0, 0) and store.count(r4.collection) == n - 1
        assert r4.query("PID loop", k=1)[0].url == "/ch03-control#31-pid-control"
    finally:
        store.close()


@pytest.mark.model
def test_strategy_params_get_their_own_collection(tmp_path, embedder):
    root = write_docs(tmp_path / "docs")
    tree = load_docs(root)
    with Store(root, path=tmp_path / "qdrant") as store:
        a = Retriever(tree, SectionsForTest(level=1), embedder, store)
        b = Retriever(tree, SectionsForTest(level=2), embedder, store)
        assert a.collection != b.collection
        a.ensure_indexed()
        b.ensure_indexed()
        assert store.count(a.collection) == 3 and store.count(b.collection) == 8
        assert set(store.collections()) == {a.collection, b.collection}


# --- one payload schema: what the store keeps is what `chunk` shows -------------------------------------------


class HashEmbedder:
    """Vectors from a hash of the text (no model): the metadata test needs points, not meaning."""

    model_id = "hash"
    dim = 8

    def embed(self, texts, *, on_progress=None, cancel=None, token_counts=None, label=""):
        import hashlib

        import numpy as np

        from chunkscope.embedding.embedder import Embedded, EmbedStats

        rows = [np.frombuffer(hashlib.sha256(t.encode()).digest()[:8], dtype=np.uint8).astype(np.float32) + 1
                for t in texts]
        vecs = np.stack([r / np.linalg.norm(r) for r in rows]) if rows else np.zeros((0, self.dim), np.float32)
        return Embedded(vecs, EmbedStats(texts=len(texts), misses=len(texts)))


def test_stored_metadata_is_the_chunks_metadata_for_every_strategy(tmp_path, sample_docs):
    """`query --json` shows a hit's metadata as the store keeps it, `chunk --format jsonl` the chunk's: for every
    chunk of every strategy on sample_docs they are equal (section-sentence's own ``chunk_index``, the index within
    its section, once overwritten by the core field), and a filter on a metadata key filters the strategy's field."""
    import json

    from chunkscope.chunking.drivers import chunk_documents
    from chunkscope.chunking.params import ParamError
    from chunkscope.chunking.registry import get_strategy, strategy_names
    from chunkscope.retrieval.indexing import index_chunks
    from chunkscope.retrieval.store import Hit

    tree = load_docs(sample_docs)
    emb = HashEmbedder()
    checked = []
    with Store(sample_docs, path=tmp_path / "q") as store:
        for name in strategy_names():
            try:
                strategy = get_strategy(name)
            except ParamError:
                continue  # `custom` needs a callable to run
            chunks = [c for r in chunk_documents(tree.documents, strategy) for c in r.chunks]
            collection = store.use(strategy, emb, owner=tree.root)
            index_chunks(store, chunks, emb, collection)
            stored, _ = store.engine.scroll(collection, None, ["path", "start", "end", "chunk_index", "meta"],
                                            limit=100_000)
            by_place = {(p.payload["path"], p.payload["start"], p.payload["end"]): p for p in stored}
            for c in chunks:
                p = by_place[(c.path, c.start, c.end)]
                hit = Hit.from_payload(1, 1.0, True, p.payload, p.id)
                assert hit.metadata == json.loads(json.dumps(c.to_dict()["metadata"], default=str)), (name, c.path)
                assert hit.chunk_index == c.index
            checked.append(name)
            if name == "section-sentence":
                inner = [c for c in chunks if c.metadata.get("chunk_index") != c.index]
                assert inner, "section-sentence numbers chunks within their sections"
                q = emb.embed(["x"]).vectors[0]
                hits = store.search(q, k=1000, collection=collection, filters={"chunk_index": "0"})
                assert hits and all(h.metadata["chunk_index"] == 0 for h in hits)
                assert len(hits) == sum(1 for c in chunks if c.metadata.get("chunk_index") == 0)
    assert len(checked) >= 6
