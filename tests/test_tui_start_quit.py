"""Where a person waits on the app: a second start shows the tree's stored totals, and quitting never waits for
background work (the probe's store, the tree's count). Speed itself is measured by bench/bench_tui.py."""

from __future__ import annotations

import shutil
import threading
from pathlib import Path

import pytest

pytest.importorskip("textual")

from textual.message import Message  # noqa: E402
from textual.worker import WorkerState  # noqa: E402

from chunkscope.tui.headless.search import SearchSession  # noqa: E402

from chunkscope.tui.screens.explorer import ExplorerScreen  # noqa: E402
from tests.pilot import make_app, wait_for  # noqa: E402

pytestmark = pytest.mark.anyio

SAMPLE = Path(__file__).resolve().parents[1] / "sample_docs"
CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus" / "rust-book"
SIZE = (160, 50)


async def test_a_second_start_shows_the_stored_totals_of_an_unchanged_tree(tmp_path: Path) -> None:
    root = tmp_path / "docs"
    shutil.copytree(SAMPLE, root)
    app = make_app(root)
    async with app.run_test(size=SIZE) as pilot:
        ex = app.explorer
        await wait_for(pilot, lambda: ex.tree_result is not None, what="the tree's count")
        fresh = ex.tree_result.token_counts()
        per_file = {p: len(e.chunks) for p, e in ex.tree_result.entries.items()}

    stored: list[ExplorerScreen.TreeCounted] = []

    def hook(message: Message) -> None:
        if isinstance(message, ExplorerScreen.TreeCounted):
            stored.append(message)

    app = make_app(root)
    async with app.run_test(size=SIZE, message_hook=hook) as pilot:
        ex = app.explorer
        await wait_for(pilot, lambda: bool(stored), what="the stored totals")
        counts = stored[0].counts
        assert [t for s in counts.values() for t in s.tokens] == fresh
        assert {p: len(s.tokens) for p, s in counts.items()} == per_file
        await wait_for(pilot, lambda: ex.tree_result is not None, what="the tree's own count")
        assert ex.tree_result.token_counts() == fresh

    # An edited file: its stored counts are stale, so the totals wait for the tree's own count.
    first = sorted(per_file)[0]
    with open(root / first, "a", encoding="utf-8") as f:
        f.write("\n\n## Added later\n\n" + "Another sentence to count. " * 60)
    stored.clear()
    app = make_app(root)
    async with app.run_test(size=SIZE, message_hook=hook) as pilot:
        ex = app.explorer
        await wait_for(pilot, lambda: ex.tree_result is not None, what="the tree's count after the edit")
        assert not stored
        assert len(ex.tree_result.entries[first].chunks) > per_file[first]


async def test_quit_does_not_wait_for_a_probe_holding_the_store() -> None:
    """A probe (or an index build) holds the query session's lock until its batch ends; q leaves at once, and the
    session is left to that worker, which the app cancelled."""
    app = make_app(SAMPLE)
    holding, app_gone = threading.Event(), threading.Event()
    gone_while_held: list[bool] = []

    def probe_batch(search: SearchSession) -> None:
        with search.lock:
            holding.set()
            # The batch ends once the app is gone; without the fix the app waits for the batch, which then ends
            # at the timeout instead.
            gone_while_held.append(app_gone.wait(timeout=30))

    async with app.run_test(size=SIZE) as pilot:
        ex = app.explorer
        await wait_for(pilot, lambda: ex.result is not None and ex.result.complete, what="the first file")
        batch = threading.Thread(target=probe_batch, args=(ex.search,))
        batch.start()
        await wait_for(pilot, holding.is_set, what="the batch to hold the store")
        await pilot.press("q")
    app_gone.set()
    batch.join()
    assert gone_while_held == [True]


@pytest.mark.corpus
async def test_quit_while_the_tree_is_counted_cancels_the_count(monkeypatch: pytest.MonkeyPatch) -> None:
    if not CORPUS.is_dir():
        pytest.skip(f"needs the Rust book at {CORPUS}")
    import time

    import chunkscope.tui.screens.explorer as explorer

    # The count is held at its start until it is cancelled, so the quit always meets it running (a quiet machine
    # counts the book in about a second, sometimes before the key arrives).
    real = explorer.chunk_tree

    def held(docs, resolved, config, cancelled, **kw):  # type: ignore[no-untyped-def]
        while not cancelled():
            time.sleep(0.01)
        return real(docs, resolved, config, cancelled, **kw)

    monkeypatch.setattr(explorer, "chunk_tree", held)
    app = make_app(CORPUS)
    async with app.run_test(size=SIZE) as pilot:
        ex = app.explorer
        running: list = []

        def counting() -> bool:  # the worker itself, held: the manager forgets it once it ends
            running[:] = [w for w in ex.workers if w.group == "tree" and w.is_running]
            return bool(running)

        await wait_for(pilot, counting, timeout=60, what="the tree's count to start")
        tree = running[0]
        await pilot.press("q")
    assert not app.is_running
    assert tree.is_cancelled
    assert tree.state == WorkerState.CANCELLED
    assert ex.tree_result is None  # the count stopped half-way: nothing was shown or stored after the quit
