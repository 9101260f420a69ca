"""Points belong to a docs tree: two trees in one store, a single file indexed, the store's location and output.

Two trees share a store when ``[qdrant] path`` (or a server) is configured. Indexing one must never delete,
rewrite or return the other's points, and indexing one file of a tree must leave the rest of that tree alone.
Every test runs a real Qdrant: the embedded local store, or qdrant-client's in-memory engine standing in for a
server through the same code the url path uses. Vectors come from a deterministic fake embedder (no model).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from chunkscope.progress import CancelToken
from chunkscope.config.reader import ConfigError, parse_config
from chunkscope.document.loader import load_docs
from chunkscope.retrieval.retriever import Retriever
from chunkscope.retrieval.store import Store
from tests.test_retrieval import SectionsForTest, write_docs
from tests.test_store import FakeEmbedder

#: Two trees with a file of the same name and the same text (their points must still be distinct) and files of
#: their own.
TREE_A = {
    "shared.md": "# Shared\n\n## Common part\n\nThe same words in both trees.\n",
    "ch01.md": "# One\n\n## Apples\n\nApples grow on trees in orchards.\n\n## Pears\n\nPears ripen after picking.\n",
    "ch02.md": "# Two\n\n## Rivers\n\nRivers carry water to the sea.\n",
}
TREE_B = {
    "shared.md": TREE_A["shared.md"],
    "ch01.md": "# Uno\n\n## Engines\n\nEngines burn fuel to turn a shaft.\n",
    "other.md": "# Other\n\n## Stars\n\nStars are suns far away.\n",
}


class Embedder(FakeEmbedder):
    """The store tests' hash embedder with what a Retriever and the CLI also ask of an embedder."""

    max_seq_length = 256
    warnings = ()  # the cache's warnings a real embedder reports (none here)

    def count_tokens(self, texts):
        return [len(t.split()) + 2 for t in texts]

    def embed_query(self, text: str, *, cache: bool = False) -> np.ndarray:
        return self.vector(text)


def retriever(root: Path, store: Store, site_url: str | None = None, **kw) -> Retriever:
    return Retriever(load_docs(root, **kw), SectionsForTest(), Embedder(), store, site_url)


def point_ids(store: Store, r: Retriever) -> dict[str, str]:
    return store.point_sigs(r.collection)


def snapshot(store: Store, r: Retriever) -> list[tuple[str, str, str]]:
    """Every point of the tree's collection as (id, path, text), sorted."""
    recs, _ = store.engine.scroll(r.collection, None, ["path", "text"], limit=10_000)
    return sorted((p.id, p.payload["path"], p.payload["text"]) for p in recs)


def every_text_query(r: Retriever) -> list[list[tuple[str, str]]]:
    """Each of the tree's chunk texts asked as a question: the (path, text) of the top 3 answers."""
    return [[(h.path, h.text) for h in r.query(c.text, k=3, threshold=None)] for c in r.chunks]


def two_trees_keep_their_points(store_a: Store, store_b: Store, tmp_path: Path) -> None:
    """Index A, index B (through its own Store on the same storage), re-index A: nothing of either is lost."""
    a_root, b_root = write_docs(tmp_path / "a", TREE_A), write_docs(tmp_path / "b", TREE_B)
    a = retriever(a_root, store_a, "https://a.example")
    rep_a = a.ensure_indexed()
    assert (rep_a.upserted, rep_a.deleted) == (len(a.chunks), 0)
    before, answers = snapshot(store_a, a), every_text_query(a)
    b = retriever(b_root, store_b, "https://b.example")
    rep_b = b.ensure_indexed()
    assert (rep_b.upserted, rep_b.deleted) == (len(b.chunks), 0)  # B neither deletes nor reuses A's points
    assert snapshot(store_a, a) == before and every_text_query(a) == answers
    # The same file with the same text in both trees: two points, each citing its own tree's site.
    assert not set(point_ids(store_a, a)) & set(point_ids(store_b, b))
    hit_a = a.query(TREE_A["shared.md"].split("\n\n")[-1].strip(), k=1)[0]
    assert hit_a.url.startswith("https://a.example")
    again = retriever(a_root, store_a, "https://a.example").ensure_indexed()
    assert (again.upserted, again.deleted, again.unchanged) == (0, 0, len(a.chunks))
    assert {p for _, p, _ in snapshot(store_b, b)} == set(TREE_B)


def test_two_trees_in_one_local_store_never_delete_each_other(tmp_path):
    with Store(tmp_path / "a", path=tmp_path / "q") as store:
        two_trees_keep_their_points(store, store, tmp_path)


@pytest.fixture()
def server(monkeypatch):
    """One in-memory Qdrant that every ``Store(url=...)`` of the test connects to, as processes share a server."""
    import qdrant_client

    engine = qdrant_client.QdrantClient(location=":memory:")
    urls: list[str] = []

    def connect(**kwargs):
        urls.append(kwargs["url"])
        return engine

    monkeypatch.setattr(qdrant_client, "QdrantClient", connect)
    yield urls


@pytest.mark.filterwarnings("ignore:Payload indexes have no effect")
def test_two_trees_on_one_server_never_delete_each_other(tmp_path, server):
    store_a = Store(tmp_path / "a", url="http://qdrant.test:6333")
    store_b = Store(tmp_path / "b", url="http://qdrant.test:6333")
    try:
        assert store_a.engine.client is store_b.engine.client  # one server, two clients of it
        two_trees_keep_their_points(store_a, store_b, tmp_path)
    finally:
        store_b.close()
        store_a.close()


def test_a_query_never_returns_the_other_trees_chunks(tmp_path):
    a_root, b_root = write_docs(tmp_path / "a", TREE_A), write_docs(tmp_path / "b", TREE_B)
    with Store(a_root, path=tmp_path / "q") as store:
        a, b = retriever(a_root, store), retriever(b_root, store)
        a.ensure_indexed()
        b.ensure_indexed()
        b_only = [c.text for c in b.chunks if c.text not in {x.text for x in a.chunks}]
        assert b_only
        for text in b_only:
            got = a.query(text, k=50, threshold=None)
            assert got and not {h.text for h in got} & set(b_only)
            # A payload filter both trees' points would match (a file of the same name) keeps to A's points.
            filtered = a.query(text, k=50, threshold=None, filters={"path": "ch01.md"})
            assert {h.text for h in filtered} == {c.text for c in a.chunks if c.path == "ch01.md"}


def test_indexing_one_file_leaves_the_rest_of_its_tree(tmp_path):
    root = write_docs(tmp_path / "a", TREE_A)
    with Store(root, path=tmp_path / "q") as store:
        full = retriever(root, store)
        full.ensure_indexed()
        before = snapshot(store, full)
        one = retriever(root / "ch02.md", store)
        assert one.collection == full.collection  # the file's tree owns it
        rep = one.ensure_indexed()
        assert (rep.deleted, rep.upserted, rep.unchanged) == (0, 0, len(one.chunks))
        assert snapshot(store, full) == before
        # Edit the file: only its own stale point goes; the other files' points stay as they were.
        (root / "ch02.md").write_text(TREE_A["ch02.md"].replace("the sea", "the ocean"), encoding="utf-8")
        rep = retriever(root / "ch02.md", store).ensure_indexed()
        assert (rep.deleted, rep.upserted) == (1, 1)
        after = snapshot(store, full)
        assert [p for p in after if p[1] != "ch02.md"] == [p for p in before if p[1] != "ch02.md"]
        assert sorted(t for _, path, t in after if path == "ch02.md") == ["# Two", "## Rivers\n\nRivers carry water to the ocean."]
        # Asked from the one file, the answers come from that file only.
        hits = retriever(root / "ch02.md", store).query("Apples grow on trees in orchards.", k=10, threshold=None)
        assert {h.path for h in hits} == {"ch02.md"}


def test_a_partial_load_of_a_nested_file_keeps_to_its_paths(tmp_path):
    """A tree that says it is partial (``DocsTree.partial``: a file found under its docs root) is handled as a
    single file is: its root owns the collection, and only its documents' points are written or deleted."""
    import dataclasses

    root = write_docs(tmp_path / "a", TREE_A)
    (root / "part").mkdir()
    (root / "part" / "ch03.md").write_text("# Three\n\n## Tides\n\nThe moon pulls tides.\n", encoding="utf-8")
    with Store(root, path=tmp_path / "q") as store:
        full = retriever(root, store)
        full.ensure_indexed()
        before = snapshot(store, full)
        whole = load_docs(root)
        part = dataclasses.replace(whole, documents=[whole.get("part/ch03.md")])
        part.partial = True  # what a one-file load says
        r = Retriever(part, SectionsForTest(), Embedder(), store)
        assert r.collection == full.collection
        rep = r.ensure_indexed()
        assert (rep.chunks, rep.deleted, rep.upserted) == (2, 0, 0) and snapshot(store, full) == before
        assert {h.path for h in r.query("Apples grow on trees in orchards.", k=10, threshold=None)} == {"part/ch03.md"}


def test_editing_a_file_deletes_only_its_stale_points(tmp_path):
    a_root, b_root = write_docs(tmp_path / "a", TREE_A), write_docs(tmp_path / "b", TREE_B)
    with Store(a_root, path=tmp_path / "q") as store:
        a, b = retriever(a_root, store), retriever(b_root, store)
        a.ensure_indexed()
        b.ensure_indexed()
        b_before, a_before = snapshot(store, b), snapshot(store, a)
        (a_root / "ch01.md").write_text(TREE_A["ch01.md"].split("## Pears")[0], encoding="utf-8")
        a2 = retriever(a_root, store)
        rep = a2.ensure_indexed()
        assert (rep.deleted, rep.upserted) == (1, 0)
        gone = [p for p in a_before if p not in snapshot(store, a2)]
        assert [(path, text.split("\n")[0]) for _, path, text in gone] == [("ch01.md", "## Pears")]
        assert snapshot(store, b) == b_before


def test_rebuilding_one_file_drops_only_that_files_points(tmp_path):
    root = write_docs(tmp_path / "a", TREE_A)
    with Store(root, path=tmp_path / "q") as store:
        full = retriever(root, store)
        full.ensure_indexed()
        before = snapshot(store, full)
        one = retriever(root / "ch01.md", store)
        one.rebuild()
        rep = one.ensure_indexed()
        assert rep.upserted == len(one.chunks) == 3  # "# One", Apples, Pears
        assert snapshot(store, full) == before
        full.rebuild()
        assert store.count(full.collection) == 0


# --- the command line ---------------------------------------------------------------------------------------------


@pytest.fixture()
def cli(monkeypatch, tmp_path):
    """`chunkscope ...` with the fake embedder and a cache of its own; returns (exit code, stdout, stderr)."""
    from chunkscope.cli import main, retrieval_setup

    monkeypatch.setenv("CHUNKSCOPE_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("QDRANT_URL", raising=False)
    monkeypatch.setattr(retrieval_setup, "make_embedder", lambda ctx, args: Embedder())

    def run(capsys, *argv: str) -> tuple[int, str, str]:
        code = main(list(argv))
        out = capsys.readouterr()
        return code, out.out, out.err

    return run


def test_index_one_file_on_the_command_line_deletes_nothing_else(cli, capsys, tmp_path):
    root = write_docs(tmp_path / "docs", TREE_A)
    code, out, err = cli(capsys, "index", str(root), "-s", "section", "--json")
    assert code == 0, err
    first = json.loads(out)
    code, out, err = cli(capsys, "index", str(root / "ch01.md"), "-s", "section", "--json")
    assert code == 0, err
    report = json.loads(out)
    assert report["deleted"] == 0 and report["collection"] == first["collection"]
    code, out, err = cli(capsys, "index", str(root / "ch01.md"), "-s", "section", "--rebuild", "--json")
    assert code == 0, err
    code, out, err = cli(capsys, "index", str(root), "-s", "section", "--json")
    again = json.loads(out)
    assert (again["deleted"], again["upserted"], again["unchanged"]) == (0, 0, first["chunks"])


def test_index_report_goes_to_stdout(cli, capsys, tmp_path):
    root = write_docs(tmp_path / "docs", TREE_A)
    code, out, err = cli(capsys, "index", str(root), "-s", "section")
    assert code == 0
    assert "chunks" in out and "deleted" in out and "collection " in out
    assert "deleted" not in err and "collection" not in err


# --- where the store lives ------------------------------------------------------------------------------------------


def test_store_location_precedence_flag_then_config_then_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("QDRANT_URL", "http://env:6333")
    empty = parse_config({})
    assert empty.qdrant_target().url == "http://env:6333"
    assert empty.qdrant_target("http://flag:6333").url == "http://flag:6333"
    configured = parse_config({"qdrant": {"url": "http://config:6333", "timeout": 5}})
    assert configured.qdrant_target().url == "http://config:6333"
    assert configured.qdrant_target().timeout == 5.0
    assert configured.qdrant_target("http://flag:6333").url == "http://flag:6333"
    # A local store path in the config is a choice too: the environment does not override it.
    local = parse_config({"qdrant": {"path": str(tmp_path / "q")}})
    assert (local.qdrant_target().url, local.qdrant_target().path) == (None, str(tmp_path / "q"))
    assert local.qdrant_target("http://flag:6333").path is None
    monkeypatch.setenv("QDRANT_URL", "")
    assert (empty.qdrant_target().url, empty.qdrant_target().path) == (None, None)
    monkeypatch.delenv("QDRANT_URL")
    assert empty.qdrant_target().url is None


def test_qdrant_config_values_are_checked():
    with pytest.raises(ConfigError, match="qdrant.url must be"):
        parse_config({"qdrant": {"url": 6333}})
    with pytest.raises(ConfigError, match="qdrant.timeout must be"):
        parse_config({"qdrant": {"timeout": "soon"}})
    with pytest.raises(ConfigError, match=r"qdrant\.url or qdrant\.path, not both"):
        parse_config({"qdrant": {"url": "http://x:6333", "path": "q"}})


def test_qdrant_url_from_the_environment_reaches_the_command(cli, capsys, monkeypatch, tmp_path):
    """QDRANT_URL used to be ignored: the command opened the local store instead of the server."""
    import qdrant_client

    seen: list[dict] = []
    real = qdrant_client.QdrantClient
    monkeypatch.setattr(qdrant_client, "QdrantClient",
                        lambda *a, **kw: seen.append(kw) or real(location=":memory:") if "url" in kw else real(*a, **kw))
    monkeypatch.setenv("QDRANT_URL", "http://from-env:6333")
    root = write_docs(tmp_path / "docs", TREE_A)
    code, out, err = cli(capsys, "index", str(root), "-s", "section")
    assert code == 0, err
    assert [kw["url"] for kw in seen] == ["http://from-env:6333"]
    assert "http://from-env:6333" in out


# --- the app's search session (headless) ------------------------------------------------------------------------------


def _session(tree_path: Path, config):
    from chunkscope.tui.headless.search import SearchSession

    session = SearchSession(load_docs(tree_path), config)
    session._embedder = Embedder()  # the fake instead of the model the session would make
    return session


def test_the_app_opens_the_server_QDRANT_URL_names(monkeypatch, tmp_path, server):
    from chunkscope.config.reader import resolve_strategy

    monkeypatch.setenv("QDRANT_URL", "http://from-env:6333")
    cfg = parse_config({})
    session = _session(write_docs(tmp_path / "docs", TREE_A), cfg)
    session.index(resolve_strategy(cfg, "section"), lambda p: None, CancelToken())
    assert server == ["http://from-env:6333"]


def test_rebuilding_in_the_app_on_one_file_keeps_the_rest_of_its_tree(tmp_path):
    from chunkscope.config.reader import resolve_strategy

    root = write_docs(tmp_path / "docs", TREE_A)
    cfg = parse_config({"qdrant": {"path": str(tmp_path / "q")}})
    resolved = resolve_strategy(cfg, "section")
    whole = _session(root, cfg)
    whole.index(resolved, lambda p: None, CancelToken())
    everything = whole.retriever(resolved).store.count(whole.retriever(resolved).collection)
    whole.close()
    one = _session(root / "ch01.md", cfg)
    assert one.index(resolved, lambda p: None, CancelToken()).deleted == 0
    one.forget(resolved)  # "index: rebuild"
    report = one.index(resolved, lambda p: None, CancelToken())
    assert report.upserted == len(one.retriever(resolved).chunks)
    assert one.retriever(resolved).store.count(one.retriever(resolved).collection) == everything
    one.close()


# --- collections from before trees owned them -------------------------------------------------------------------------


def test_an_unowned_collection_goes_from_the_trees_own_workspace_only(tmp_path, monkeypatch):
    """Collections named before ownership (no owner in the name) are dropped where only this tree could have
    written them (its default workspace: a local store loads every point on open), never from a shared store."""
    from chunkscope.retrieval.ids import collection_name

    monkeypatch.setenv("CHUNKSCOPE_CACHE", str(tmp_path / "cache"))
    root = write_docs(tmp_path / "docs", TREE_A)
    emb = Embedder()
    legacy = collection_name(SectionsForTest.name, SectionsForTest().params, emb.model_id)
    for where in ({}, {"path": tmp_path / "shared"}):
        with Store(root, **where) as store:
            store.ensure_collection(legacy, emb.dim)
        with Store(root, **where) as store:
            r = Retriever(load_docs(root), SectionsForTest(), emb, store)
            assert store.collections() == ([r.collection] if not where else sorted([legacy, r.collection]))
