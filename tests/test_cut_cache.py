"""The stored cuts (`chunking.cut_cache`): chunks equal to a fresh cut, never a stale one, and a reopened tree's
first file shown without loading a tokenizer."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chunkscope.chunking import stats_cache
from chunkscope.chunking.cut_cache import CutCache, cacheable, decode, encode
from chunkscope.chunking.drivers import chunk_documents
from chunkscope.chunking.model import Chunk
from chunkscope.chunking.registry import get_strategy
from chunkscope.chunking.strategy import Strategy
from chunkscope.document.loader import Document, load_docs
from tests.markdown_strategies import decoded_doc, markdown

REPO = Path(__file__).resolve().parents[1]
SAMPLE = REPO / "sample_docs"

#: Built-in strategies with parameters that cut small documents into several chunks, and embed prefixes.
STRATEGIES: list[tuple[str, dict]] = [
    ("recursive", {"chunk_size": 24, "chunk_overlap": 6}),
    ("recursive", {"chunk_size": 60, "chunk_overlap": 0, "embed_prefix": "breadcrumb"}),
    ("fixed", {"chunk_size": 20, "chunk_overlap": 5, "embed_prefix": "title"}),
    ("section-sentence", {"max_tokens": 30, "min_tokens": 0}),
    ("section", {"level": 2, "overlap_tokens": 8}),
    ("header-window", {}),
    ("content-type", {"theoretical_tokens": 24, "code_tokens": 32, "mixed_tokens": 28, "overlap_tokens": 6}),
]
WORDS = st.sampled_from(["alpha", "beta", "Gamma.", "δέλτα", "fn", "x = 1;", "`code`", "[link](a.md)", "end."])
GENERATED = markdown(WORDS, "---\ntitle: Generated Ü\nchapter: 3\n---\n", ["# comment", "let x = 1;", ""], 8)


def fresh_cuts(docs: list[Document], strategy: Strategy) -> dict[str, list[Chunk]]:
    return {cd.doc.path: cd.chunks for cd in chunk_documents(docs, strategy) if cd.error is None}


def store_tree(root: Path, folder: Path, strategy: Strategy, docs: list[Document]) -> None:
    by_path = {d.path: d for d in docs}
    cuts = {p: encode(by_path[p], chunks) for p, chunks in fresh_cuts(docs, strategy).items()}
    assert len(cuts) == len(docs) and all(v is not None for v in cuts.values())
    CutCache(root, folder).store(strategy, {p: v for p, v in cuts.items() if v is not None})


def copy_tree(tmp_path: Path) -> Path:
    root = tmp_path / "docs"
    shutil.copytree(SAMPLE, root)
    return root


@pytest.mark.parametrize(("name", "params"), STRATEGIES, ids=[f"{n}-{i}" for i, (n, _) in enumerate(STRATEGIES)])
@given(text=GENERATED)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_a_stored_cut_comes_back_equal_to_a_fresh_cut(name: str, params: dict, text: str) -> None:
    doc = decoded_doc(text, "part-1/ch03-02-generated.md")
    strategy = get_strategy(name, **params)
    chunks = strategy.chunk(doc)
    stored = encode(doc, chunks)
    assert stored is not None
    with tempfile.TemporaryDirectory() as tmp:
        CutCache(tmp, Path(tmp)).store(strategy, {doc.path: stored})
        # Another run: the document read again and the strategy made again, with nothing parsed or counted yet.
        again = decoded_doc(text, "part-1/ch03-02-generated.md")
        found = CutCache(tmp, Path(tmp)).lookup(get_strategy(name, **params), [again])
    assert found == {again.path: get_strategy(name, **params).chunk(again)}
    for c in found[again.path]:
        assert c.text == again.text[c.start:c.end]


@pytest.mark.corpus
@pytest.mark.parametrize("name", ["section-sentence", "header-window", "section", "content-type", "recursive",
                                  "fixed"])
def test_every_file_of_the_rust_book_comes_back_equal(corpus: Path, tmp_path: Path, name: str) -> None:
    docs = load_docs(corpus).documents
    strategy = get_strategy(name)
    fresh = fresh_cuts(docs, strategy)
    assert len(fresh) == len(docs) > 100
    cache = CutCache(corpus, tmp_path / "cache")
    cache.store(strategy, {d.path: e for d in docs if (e := encode(d, fresh[d.path])) is not None})

    again = load_docs(corpus).documents
    assert CutCache(corpus, tmp_path / "cache").lookup(get_strategy(name), again) == fresh


def test_a_changed_text_parameter_strategy_or_code_is_a_miss(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = copy_tree(tmp_path)
    docs = load_docs(root).documents
    strategy = get_strategy("recursive", chunk_size=120)
    folder = tmp_path / "cache"
    store_tree(root, folder, strategy, docs)
    assert len(CutCache(root, folder).lookup(get_strategy("recursive", chunk_size=120), docs)) == len(docs) > 3

    assert CutCache(root, folder).lookup(get_strategy("recursive", chunk_size=121), docs) == {}
    assert CutCache(root, folder).lookup(get_strategy("fixed", chunk_size=120), docs) == {}

    first = docs[0]
    (root / first.path).write_text(first.text + "\nOne more line.\n", encoding="utf-8")
    edited = load_docs(root).documents
    found = CutCache(root, folder).lookup(strategy, edited)
    assert first.path not in found and len(found) == len(docs) - 1

    # chunkscope's own code edited (an editable install): every key changes.
    monkeypatch.setattr(stats_cache, "_own_code", lambda: "edited")
    assert CutCache(root, folder).lookup(strategy, docs) == {}


def test_the_code_fingerprint_follows_an_edit_to_a_source_file(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    for folder in stats_cache.CUT_CODE:
        (package / folder / "sub").mkdir(parents=True)
        (package / folder / "sub" / "mod.py").write_text("x = 1\n", encoding="utf-8")
    before = stats_cache.code_fingerprint(package)
    assert stats_cache.code_fingerprint(package) == before
    target = package / "site" / "sub" / "mod.py"
    target.write_text("x = 2\n", encoding="utf-8")  # the same size: only the time tells
    st = target.stat()
    os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    assert stats_cache.code_fingerprint(package) != before
    # Compiled files are not the code: a new one changes nothing.
    after = stats_cache.code_fingerprint(package)
    (package / "chunking" / "__pycache__").mkdir()
    (package / "chunking" / "__pycache__" / "mod.cpython-311.pyc").write_bytes(b"\0")
    assert stats_cache.code_fingerprint(package) == after


def test_a_damaged_or_unwritable_cache_is_only_a_miss(tmp_path: Path) -> None:
    root = copy_tree(tmp_path)
    docs = load_docs(root).documents
    strategy = get_strategy("recursive", chunk_size=120)
    folder = tmp_path / "cache"
    store_tree(root, folder, strategy, docs)
    (stored,) = folder.glob("*.json")
    good = json.loads(stored.read_text(encoding="utf-8"))

    stored.write_text('{"format": 1, "files": {', encoding="utf-8")  # cut short
    assert CutCache(root, folder).lookup(strategy, docs) == {}
    # Valid JSON that does not fit: rows of the wrong shape, offsets past the text, a file's entry not a list.
    path = docs[0].path
    for rows in ('[[1]]', '[[0, 99999999, 1, 1, 3, [], {}, [], null, null]]', '{"not": "rows"}',
                 '[["a", 2, 1, 1, 3, [], {}, [], null, null]]', '[[0, 5, 1, 1, 3, [], {}, [], [0], null]]'):
        damaged = {**good, "files": {**good["files"], path: [good["files"][path][0], rows]}}
        stored.write_text(json.dumps(damaged), encoding="utf-8")
        found = CutCache(root, folder).lookup(strategy, docs)
        assert path not in found and len(found) == len(docs) - 1
    stored.write_text(json.dumps({**good, "files": {path: "not a list"}}), encoding="utf-8")
    assert CutCache(root, folder).lookup(strategy, docs) == {}

    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the cache folder would be", encoding="utf-8")
    store_tree(root, blocked, strategy, docs)  # no error
    assert CutCache(root, blocked).lookup(strategy, docs) == {}


def test_what_cannot_come_back_exactly_is_never_stored(tmp_path: Path) -> None:
    doc = decoded_doc("# Title\n\nSome text here.\n\n## Part\n\nMore text.\n", "page.md")
    chunks = get_strategy("recursive", chunk_size=8, chunk_overlap=0).chunk(doc)
    assert encode(doc, chunks) is not None
    # A tuple in the metadata comes back a list: not equal, so not stored.
    chunks[0].metadata["pair"] = (1, 2)
    assert encode(doc, chunks) is None
    chunks[0].metadata["pair"] = {1, 2}
    assert encode(doc, chunks) is None
    # Word-piece counts filled in (the chunks of a cut already on screen): not a fresh cut.
    chunks = get_strategy("recursive", chunk_size=8, chunk_overlap=0).chunk(doc)
    chunks[0].embed_tokens = 3
    assert encode(doc, chunks) is None

    assert not cacheable(get_strategy("recursive", embed_prefix="llm"))
    assert not cacheable(get_strategy("semantic"))
    assert cacheable(get_strategy("recursive", embed_prefix="title"))
    llm = get_strategy("recursive", embed_prefix="llm")
    CutCache(tmp_path, tmp_path / "cache").store(llm, {doc.path: ("key", "[]")})
    assert not (tmp_path / "cache").exists()


def test_a_stored_row_is_sliced_from_the_document_never_stored_text() -> None:
    doc = decoded_doc("# Title\n\nSome text here.\n", "page.md")
    chunks = get_strategy("recursive", chunk_size=8, chunk_overlap=0, embed_prefix="title").chunk(doc)
    stored = encode(doc, chunks)
    assert stored is not None and "Some text here" not in stored[1]
    assert decode(doc, stored) == chunks


def test_the_tree_cut_stores_the_cut_not_lints_marks_and_reuses_it(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    from chunkscope.config.reader import load_config, resolve_strategy
    from chunkscope.tui.headless import session

    root = copy_tree(tmp_path)
    config = load_config(root)
    tree = load_docs(root, ignore=config.ignore)
    resolved = resolve_strategy(config, "recursive", {"chunk_size": 60})
    cache = CutCache(root, tmp_path / "cache")
    plain = session.chunk_tree(list(tree.documents), resolved, config, tree=tree)
    first = session.chunk_tree(list(tree.documents), resolved, config, tree=tree, cache=cache)
    assert plain is not None and first is not None
    fresh = fresh_cuts(list(tree.documents), resolved.strategy)
    # Lint marks the tree's chunks with its rule ids; the store keeps the cut as the strategy made it.
    assert any(e.chunks != fresh[p] for p, e in first.entries.items())
    assert cache.lookup(resolved.strategy, tree.documents) == fresh

    def no_cut(doc: Document, resolved: object) -> tuple[list[Chunk], str | None]:
        raise AssertionError(f"{doc.path} was cut again")

    monkeypatch.setattr(session, "_safe_chunk", no_cut)  # every file unchanged: every cut comes from the store
    again = session.chunk_tree(list(tree.documents), resolved, config, tree=tree, cache=cache)
    assert again is not None
    assert {p: e.chunks for p, e in again.entries.items()} == {p: e.chunks for p, e in plain.entries.items()}
    assert again.lint.findings == plain.lint.findings


#: A second start of the app in a fresh interpreter: the first file's chunks as they reach the screen, and whether
#: a tokenizer was loaded by then.
SECOND_START = """
import asyncio, json, sys
from pathlib import Path
from tests.pilot import make_app, wait_for
from chunkscope.tui.screens.explorer import ExplorerScreen

async def main():
    seen = {}
    app = make_app(Path(sys.argv[1]))
    def hook(m):
        if isinstance(m, ExplorerScreen.FileChunked) and not m.result.complete and not seen:
            seen.update(path=m.result.doc.path, tiktoken="tiktoken" in sys.modules,
                        chunks=[[c.start, c.end, c.tokens] for c in m.result.chunks])
    async with app.run_test(size=(160, 50), message_hook=hook) as pilot:
        await wait_for(pilot, lambda: bool(seen), what="the first file's chunks")
    print(json.dumps(seen))

asyncio.run(main())
"""


@pytest.mark.anyio
async def test_a_second_start_shows_the_first_file_without_loading_a_tokenizer(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.pilot import make_app, wait_for

    root = copy_tree(tmp_path)
    cache = tmp_path / "cache"
    monkeypatch.setenv("CHUNKSCOPE_CACHE", str(cache))  # this test's own: a cut stored by another test is no help
    app = make_app(root)
    async with app.run_test(size=(160, 50)) as pilot:  # a first start: the tree's cuts are stored
        await wait_for(pilot, lambda: app.explorer.tree_result is not None, what="the tree's cut")
        resolved, first = app.explorer.resolved, app.explorer.docs.documents[0]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "PYTHONPATH": str(REPO)}
    run = subprocess.run([sys.executable, "-c", SECOND_START, str(root)], cwd=REPO, env=env, capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    seen = json.loads(run.stdout.strip().splitlines()[-1])
    assert seen["path"] == first.path
    assert seen["chunks"] == [[c.start, c.end, c.tokens] for c in resolved.strategy.chunk(first)]
    assert seen["tiktoken"] is False


def test_tuning_one_tree_keeps_the_other_trees_cuts_and_old_temporary_files_go(tmp_path: Path) -> None:
    """Each value typed while tuning stores a cut under a key of its own: past `KEEP` keys, one tree's oldest go,
    never another tree's; a temporary file a process left behind (the app ends at once on a quit) goes once it is
    an hour old, a recent one (a write under way in another process) stays."""
    import os
    import time

    from chunkscope.chunking.cut_cache import KEEP

    folder = tmp_path / "cuts"
    other = tmp_path / "other"
    other.mkdir()
    (other / "a.md").write_text("# Other\n\nA page of another tree.\n", encoding="utf-8")
    other_docs = load_docs(other).documents
    store_tree(other, folder, get_strategy("recursive"), other_docs)
    mine = copy_tree(tmp_path)
    docs = load_docs(mine).documents[:2]
    (folder / ".cuts-old.tmp").write_text("half", encoding="utf-8")
    (folder / ".cuts-new.tmp").write_text("half", encoding="utf-8")
    hours_ago = time.time() - 7200
    os.utime(folder / ".cuts-old.tmp", (hours_ago, hours_ago))
    for size in range(100, 100 + KEEP + 3):  # the values typed while tuning chunk_size
        store_tree(mine, folder, get_strategy("recursive", chunk_size=size), docs)
    assert CutCache(other, folder).lookup(get_strategy("recursive"), other_docs)  # the other tree's cut stays
    newest = get_strategy("recursive", chunk_size=100 + KEEP + 2)
    assert CutCache(mine, folder).lookup(newest, docs)
    assert not CutCache(mine, folder).lookup(get_strategy("recursive", chunk_size=100), docs)  # the oldest went
    assert len(list(folder.glob("*.json"))) == KEEP + 1
    assert not (folder / ".cuts-old.tmp").exists() and (folder / ".cuts-new.tmp").exists()
