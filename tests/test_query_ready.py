"""An indexed, unchanged tree answers its first question at once: the manifest vouches for it from file stats (no
file hashed or chunked), and the app opens the index while the question is typed, so results follow as you type
from the first key. Through the real store, the real manifest, and (for the app) the real model and Pilot."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from chunkscope.config.reader import parse_config, resolve_strategy
from chunkscope.document.loader import load_docs
from chunkscope.progress import CancelToken
from chunkscope.retrieval.manifest import tree_settings
from chunkscope.retrieval.retriever import Retriever
from chunkscope.retrieval.store import Store

from .manifest_spies import Calls, age, forget, spy, spy_chunking
from .test_store_ownership import Embedder as FakeEmbedder


@pytest.fixture()
def spies(monkeypatch: pytest.MonkeyPatch) -> Calls:
    """Every document hashed (the manifest's content check) and chunked."""
    import chunkscope.retrieval.manifest as manifest

    calls: Calls = {"hash": [], "chunk": []}
    spy(monkeypatch, manifest, "content_hash", calls["hash"])
    spy_chunking(monkeypatch, calls["chunk"])
    return calls


def _retriever(docs: Path | Any, store: Store) -> Retriever:
    """A retriever of ``docs`` (a folder, loaded now; or a tree loaded before) with a manifest."""
    cfg = parse_config({})
    tree = load_docs(docs) if isinstance(docs, Path) else docs
    return Retriever(tree, resolve_strategy(cfg, "section").strategy, FakeEmbedder(), store,  # type: ignore[arg-type]
                     tree_settings=tree_settings(cfg))


def test_the_manifest_vouches_for_an_unchanged_tree_from_stats_alone(topic_docs: Path, tmp_path: Path,
                                                                     spies: Calls) -> None:
    age(topic_docs)
    with Store(topic_docs, path=tmp_path / "q") as store:
        full = _retriever(topic_docs, store).ensure_indexed()
        forget(spies)
        r = _retriever(topic_docs, store)  # the tree loaded afresh, as an app holds it
        vouched = r.in_step()
        assert vouched is not None and spies == {"hash": [], "chunk": []}
        assert (vouched.chunks, vouched.unchanged, vouched.upserted) == (full.chunks, full.upserted, 0)
        assert r.last_report is vouched and r.chunk_failures == []
        # An edited file (its stamp moved) is not vouched for: the texts are compared, that file alone re-chunked.
        baking = topic_docs / "baking.md"
        baking.write_text(baking.read_text(encoding="utf-8") + "\nRest the loaf before slicing it.\n", encoding="utf-8")
        edited = _retriever(topic_docs, store)
        assert edited.in_step() is None
        spies["chunk"].clear()
        assert edited.ensure_indexed().upserted == 1 and spies["chunk"] == ["baking.md"]
        # A file added to the tree: not vouched for either.
        age(topic_docs)
        _retriever(topic_docs, store).ensure_indexed()
        (topic_docs / "gardening.md").write_text("# Gardening\n\nWater the roots, not the leaves.\n", encoding="utf-8")
        assert _retriever(topic_docs, store).in_step() is None


def test_a_loaded_tree_older_than_the_disk_is_not_vouched_for(topic_docs: Path, tmp_path: Path) -> None:
    """The app loaded the tree, then a file was edited and indexed elsewhere: the manifest matches the disk, but
    not the documents the app holds, so it does not vouch for them."""
    age(topic_docs)
    held = load_docs(topic_docs)
    with Store(topic_docs, path=tmp_path / "q") as store:
        _retriever(held, store).ensure_indexed()
        taxes = topic_docs / "taxes.md"
        taxes.write_text(taxes.read_text(encoding="utf-8") + "\nKeep the records for seven years.\n", encoding="utf-8")
        os.utime(taxes, (os.stat(taxes).st_mtime - 1800,) * 2)  # edited long ago: no racy-window doubt
        assert _retriever(topic_docs, store).ensure_indexed().upserted == 1  # indexed elsewhere
        assert _retriever(topic_docs, store).in_step() is not None  # the disk as indexed
        assert _retriever(held, store).in_step() is None  # the app's taxes.md is the old text


def _session(docs: Path, cfg: Any) -> Any:
    from chunkscope.tui.headless.search import SearchSession

    session = SearchSession(load_docs(docs), cfg)
    session._embedder = FakeEmbedder()  # type: ignore[assignment]  # noqa: SLF001 - the fake, not the model
    return session


def test_the_session_opens_an_indexed_tree_before_any_question(topic_docs: Path, tmp_path: Path,
                                                               spies: Calls) -> None:
    age(topic_docs)
    cfg = parse_config({"qdrant": {"path": str(tmp_path / "q")}})
    resolved = resolve_strategy(cfg, "section")
    first = _session(topic_docs, cfg)
    assert first.warm(resolved) is False  # never indexed: nothing opened, nothing created
    assert not (tmp_path / "q").exists() and not first.is_indexed(resolved)
    first.index(resolved, lambda p: None, CancelToken())
    first.close()
    forget(spies)
    again = _session(topic_docs, cfg)  # the app started again
    assert again.warm(resolved) is True and again.is_indexed(resolved)
    assert spies == {"hash": [], "chunk": []}
    answer = again.ask(resolved, "how do I tack through the wind")
    assert answer.hits and {h.path for h in answer.hits} <= {"baking.md", "sailing.md", "taxes.md"}
    # Enter on it (indexing, as the pane does when it was not warmed) vouches the same way.
    assert again.index(resolved, lambda p: None, CancelToken()).unchanged == 3
    assert spies == {"hash": [], "chunk": []}
    # Another strategy, never indexed: no collection is made for it before Enter.
    other = resolve_strategy(cfg, "section", {"max_tokens": 77})
    assert again.warm(other) is False and not again.is_indexed(other)
    assert len(again.retriever(resolved).store.collections()) == 1
    again.close()


@pytest.mark.model
@pytest.mark.anyio
async def test_an_indexed_tree_answers_as_you_type_from_the_first_question(topic_docs: Path) -> None:
    from chunkscope.cli import main

    from .pilot import make_app, open_question, wait_for

    age(topic_docs)
    assert main(["index", str(topic_docs)]) == 0
    app = make_app(topic_docs)
    async with app.run_test(size=(160, 50)) as pilot:
        ex = app.explorer
        await wait_for(pilot, lambda: ex.result is not None and ex.tree_result is not None, what="first file and tree")
        await open_question(pilot, ex, what="query input")
        await pilot.press(*"how do I tack a sailing boat")  # no Enter: the index was opened as the pane opened
        pane = ex.query_one("#query-pane")
        await wait_for(pilot, lambda: pane._answer is not None, timeout=120, what="an answer as you type")  # noqa: SLF001
        assert pane._answer.hits[0].path == "sailing.md"  # noqa: SLF001
        assert not pane._indexing()  # noqa: SLF001 - nothing was indexed
