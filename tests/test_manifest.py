"""The manifest of an indexed collection: a question on an unchanged tree reads, chunks and re-checks nothing; an
index pass re-chunks only the files that changed; another strategy or embedder has a manifest of its own; a
damaged manifest is a full pass, never a traceback. Through the real CLI, the real model and the real store."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from chunkscope.cli import main
from chunkscope.retrieval.ids import workspace_dir
from chunkscope.retrieval.manifest import MANIFEST_DIR

from .manifest_spies import Calls, age, forget, spy, spy_chunking

Capsys = pytest.CaptureFixture[str]


@pytest.fixture()
def spies(monkeypatch: pytest.MonkeyPatch) -> Calls:
    """Record every call of the tree loader (the folder), the chunker (the paths it was given) and the one-file
    reader (the path)."""
    import chunkscope.cli.context as context
    import chunkscope.retrieval.manifest as manifest

    calls: Calls = {"load_docs": [], "chunk": [], "read": []}
    spy(monkeypatch, context, "load_docs", calls["load_docs"])
    spy_chunking(monkeypatch, calls["chunk"])
    spy(monkeypatch, manifest, "read_document", calls["read"], arg=1)
    return calls


def _index(docs: Path, capsys: Capsys, *extra: str) -> dict[str, Any]:
    assert main(["index", str(docs), "--json", *extra]) == 0
    report: dict[str, Any] = json.loads(capsys.readouterr().out)
    return report


def _query(docs: Path, question: str, capsys: Capsys, *extra: str) -> list[dict[str, Any]]:
    assert main(["query", str(docs), question, "--json", "-k", "3", *extra]) == 0
    hits: list[dict[str, Any]] = json.loads(capsys.readouterr().out)
    return hits


def _manifests(docs: Path) -> list[Path]:
    return sorted((workspace_dir(docs) / MANIFEST_DIR).glob("*.json"))


def test_an_unchanged_tree_answers_without_loading_or_chunking(topic_docs: Path, capsys: Capsys, spies: Calls) -> None:
    age(topic_docs)
    first = _index(topic_docs, capsys)
    assert first["chunks"] == 3 and sorted(spies["chunk"]) == ["baking.md", "sailing.md", "taxes.md"]
    forget(spies)
    for mode in ("hybrid", "dense", "keyword"):
        hits = _query(topic_docs, "how do I tack a sailing boat through the wind", capsys, "--search", mode)
        assert hits[0]["path"] == "sailing.md", mode
        assert hits[0]["citation"] and hits[0]["text"].startswith("# Sailing")
    assert spies == {"load_docs": [], "chunk": [], "read": []}
    # A second index pass on the unchanged tree writes nothing and reads nothing either.
    again = _index(topic_docs, capsys)
    assert (again["upserted"], again["unchanged"], again["chunks"]) == (0, 3, 3)
    assert spies == {"load_docs": [], "chunk": [], "read": []}


def test_one_edited_file_is_the_only_one_read_and_chunked(topic_docs: Path, capsys: Capsys, spies: Calls) -> None:
    age(topic_docs)
    _index(topic_docs, capsys)
    manifest_before = _manifests(topic_docs)
    baking = topic_docs / "baking.md"
    baking.write_text(baking.read_text(encoding="utf-8") + "\nSourdough needs a starter fed the night before.\n",
                      encoding="utf-8")
    forget(spies)
    report = _index(topic_docs, capsys)
    assert spies["load_docs"] == [] and spies["read"] == ["baking.md"] and spies["chunk"] == ["baking.md"]
    assert (report["upserted"], report["unchanged"], report["deleted"]) == (1, 2, 1)
    assert _manifests(topic_docs) == manifest_before  # the same manifest, brought up to date
    hits = _query(topic_docs, "what does sourdough need the night before", capsys, "--search", "keyword")
    assert hits[0]["path"] == "baking.md" and "Sourdough" in hits[0]["text"]
    # A file touched but not edited is read (its stamp moved), found identical by its hash, and not chunked.
    age(topic_docs)
    _index(topic_docs, capsys)
    forget(spies)
    os.utime(topic_docs / "taxes.md", (os.stat(topic_docs).st_mtime + 60,) * 2)
    assert _index(topic_docs, capsys)["upserted"] == 0
    assert spies["chunk"] == [] and spies["read"] == ["taxes.md"]


def test_a_removed_file_loses_its_points_and_nothing_else_is_chunked(topic_docs: Path, capsys: Capsys,
                                                                     spies: Calls) -> None:
    age(topic_docs)
    _index(topic_docs, capsys)
    (topic_docs / "taxes.md").unlink()
    forget(spies)
    hits = _query(topic_docs, "file the tax return before the April deadline", capsys, "--search", "keyword")
    # A file gone changes its folder: the tree is loaded again, but no remaining file is chunked again.
    assert spies["load_docs"] == [str(topic_docs)] and spies["chunk"] == []
    assert "taxes.md" not in {h["path"] for h in hits}
    assert _query(topic_docs, "tax return", capsys, "--filter", "path=taxes.md") == []
    report = _index(topic_docs, capsys)
    assert (report["chunks"], report["unchanged"], report["deleted"]) == (2, 2, 0)


def test_another_strategy_parameter_or_embedder_has_a_manifest_of_its_own(topic_docs: Path, capsys: Capsys) -> None:
    from chunkscope.config.reader import load_config, resolve_strategy
    from chunkscope.document.loader import load_docs
    from chunkscope.embedding.embedder import embedder_for
    from chunkscope.paths import default_model_dir
    from chunkscope.retrieval.manifest import tree_settings
    from chunkscope.retrieval.retriever import Retriever
    from chunkscope.retrieval.store import Store

    age(topic_docs)
    _index(topic_docs, capsys)
    _index(topic_docs, capsys, "-p", "chunk_size=123")
    assert len(_manifests(topic_docs)) == 2
    config = load_config(topic_docs)  # as the command line reads it
    tree = load_docs(topic_docs)
    with Store(topic_docs) as store:
        def retriever(model: str | None, **params: Any) -> Retriever:
            resolved = resolve_strategy(config, None, params or None)
            return Retriever(tree, resolved.strategy, embedder_for(config, model), store,
                             citation_template=resolved.citation_template, tree_settings=tree_settings(config))

        default = retriever(None)
        other_params = retriever(None, chunk_size=123)
        other_model = retriever(f"st:{default_model_dir()}")
        paths = {r.manifest.path for r in (default, other_params, other_model) if r.manifest is not None}
        assert len(paths) == 3 and set(_manifests(topic_docs)) < paths | set(_manifests(topic_docs))
        assert default.stored() is not None and other_params.stored() is not None
        assert other_model.stored() is None  # never indexed with that embedder: no manifest vouches for it


@pytest.mark.parametrize("damage", ["truncate", "garbage", "empty", "other-version"])
def test_a_damaged_manifest_is_a_full_pass_without_a_traceback(topic_docs: Path, capsys: Capsys, spies: Calls,
                                                          damage: str) -> None:
    age(topic_docs)
    _index(topic_docs, capsys)
    (file,) = _manifests(topic_docs)
    raw = file.read_bytes()
    if damage == "truncate":
        file.write_bytes(raw[: len(raw) // 2])
    elif damage == "garbage":
        file.write_bytes(b"\x00\xff{not json")
    elif damage == "empty":
        file.write_bytes(b"")
    else:
        data = json.loads(raw)
        data["version"] = 999
        file.write_text(json.dumps(data), encoding="utf-8")
    forget(spies)
    hits = _query(topic_docs, "how long do I knead the dough", capsys, "--search", "hybrid")
    err = capsys.readouterr().err
    assert "Traceback" not in err and hits[0]["path"] == "baking.md"
    # Treated as absent: the whole tree loaded and chunked, the points compared (none rewritten), a new manifest.
    assert spies["load_docs"] == [str(topic_docs)]
    assert sorted(spies["chunk"]) == ["baking.md", "sailing.md", "taxes.md"]
    assert json.loads(file.read_bytes())["version"] != 999
    forget(spies)
    _query(topic_docs, "how long do I knead the dough", capsys)
    assert spies["chunk"] == [] and spies["load_docs"] == []


def test_a_store_emptied_elsewhere_is_indexed_again(topic_docs: Path, capsys: Capsys, spies: Calls) -> None:
    """The manifest lists points the store no longer holds (a rebuild from another tool): it is not trusted."""
    age(topic_docs)
    _index(topic_docs, capsys)
    forget(spies)
    report = _index(topic_docs, capsys, "--rebuild")
    assert report["upserted"] == 3 and sorted(spies["chunk"]) == ["baking.md", "sailing.md", "taxes.md"]
    forget(spies)
    assert _query(topic_docs, "bake the loaf", capsys, "--search", "keyword")[0]["path"] == "baking.md"
    assert spies["chunk"] == []
