"""The stored chunk counts (`chunking.stats_cache`): the same totals as a fresh count, and never a stale one."""

from __future__ import annotations

import shutil
from pathlib import Path

from chunkscope.chunking.drivers import chunk_documents
from chunkscope.chunking.registry import get_strategy
from chunkscope.chunking.stats_cache import FileStats, StatsCache
from chunkscope.chunking.strategy import Strategy
from chunkscope.document.loader import Document, load_docs

SAMPLE = Path(__file__).resolve().parents[1] / "sample_docs"


def fresh_counts(docs: list[Document], strategy: Strategy) -> dict[str, FileStats]:
    return {cd.doc.path: FileStats(tuple(c.tokens for c in cd.chunks), cd.error)
            for cd in chunk_documents(docs, strategy)}


def copy_tree(tmp_path: Path) -> Path:
    root = tmp_path / "docs"
    shutil.copytree(SAMPLE, root)
    return root


def test_stored_counts_equal_a_fresh_count(tmp_path: Path) -> None:
    root = copy_tree(tmp_path)
    docs = load_docs(root).documents
    strategy = get_strategy("recursive", chunk_size=120)
    counts = fresh_counts(docs, strategy)
    StatsCache(root, tmp_path / "cache").store(strategy, docs, counts)

    # Another run: the tree read again, the strategy made again, a new cache object.
    again = load_docs(root).documents
    stored = StatsCache(root, tmp_path / "cache").lookup(get_strategy("recursive", chunk_size=120), again)
    assert stored == fresh_counts(again, get_strategy("recursive", chunk_size=120))
    assert len(stored) == len(again) > 3
    assert sum(len(s.tokens) for s in stored.values()) > len(again)  # real cuts, several chunks per file


def test_a_changed_file_is_counted_again(tmp_path: Path) -> None:
    root = copy_tree(tmp_path)
    docs = load_docs(root).documents
    strategy = get_strategy("recursive", chunk_size=120)
    cache = StatsCache(root, tmp_path / "cache")
    cache.store(strategy, docs, fresh_counts(docs, strategy))

    edited = docs[0]
    (root / edited.path).write_text(edited.text + "\n\n## Added\n\n" + "More words here. " * 80, encoding="utf-8")
    again = load_docs(root).documents
    stored = cache.lookup(strategy, again)
    assert edited.path not in stored  # its counts are stale: the app waits for the tree's own cut
    assert set(stored) == {d.path for d in again} - {edited.path}
    assert stored == {p: s for p, s in fresh_counts(again, strategy).items() if p != edited.path}


def test_other_parameters_or_another_tree_find_nothing(tmp_path: Path) -> None:
    root = copy_tree(tmp_path)
    docs = load_docs(root).documents
    strategy = get_strategy("recursive", chunk_size=120)
    StatsCache(root, tmp_path / "cache").store(strategy, docs, fresh_counts(docs, strategy))

    assert StatsCache(root, tmp_path / "cache").lookup(get_strategy("recursive", chunk_size=121), docs) == {}
    assert StatsCache(root, tmp_path / "cache").lookup(get_strategy("fixed", chunk_size=120), docs) == {}
    other = tmp_path / "other"
    shutil.copytree(root, other)
    assert StatsCache(other, tmp_path / "cache").lookup(strategy, load_docs(other).documents) == {}


def test_a_damaged_or_unwritable_cache_is_only_a_miss(tmp_path: Path) -> None:
    root = copy_tree(tmp_path)
    docs = load_docs(root).documents
    strategy = get_strategy("recursive", chunk_size=120)
    cache = StatsCache(root, tmp_path / "cache")
    cache.store(strategy, docs, fresh_counts(docs, strategy))
    for stored in (tmp_path / "cache").glob("*.json"):
        stored.write_text('{"format": 1, "files": {', encoding="utf-8")  # cut short
    assert cache.lookup(strategy, docs) == {}

    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the cache folder would be", encoding="utf-8")
    StatsCache(root, blocked).store(strategy, docs, fresh_counts(docs, strategy))  # no error
    assert StatsCache(root, blocked).lookup(strategy, docs) == {}
