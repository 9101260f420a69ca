"""Snapshots of the explorer's main views on sample_docs (pytest-textual-snapshot, fixed size and settings).

Regenerate after an intended change of the views with ``pytest tests/test_tui_snapshots.py --snapshot-update``
and look at the SVGs under ``tests/__snapshots__/`` before committing them.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

pytest.importorskip("pytest_textual_snapshot")

from chunkscope.tui.screens.compare import CompareScreen  # noqa: E402
from chunkscope.tui.widgets.docs_tree import DocsTreeView  # noqa: E402
from tests.pilot import make_app  # noqa: E402

SAMPLE = Path(__file__).resolve().parents[1] / "sample_docs"
SIZE = (160, 50)
FK = "module-1-foundations/02-forward-kinematics.md"




async def until(pilot, cond, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError("the view did not settle")
        await pilot.pause(0.02)
    await pilot.pause()


async def settle(pilot, path: str = FK, chunk: int | None = 2) -> None:
    """Open ``path`` as a person would, wait for every worker, select a chunk."""
    app = pilot.app
    ex = app.explorer
    await until(pilot, lambda: ex.result is not None and ex.result.complete and ex.tree_result is not None)
    tree = ex.query_one(DocsTreeView)
    tree.move_cursor(tree._leaves[path])  # noqa: SLF001
    await until(pilot, lambda: ex.result.doc.path == path and ex.result.complete and ex.tree_result is not None)
    if chunk is not None:
        ex.selected = chunk
        ex.query_one("#source").scroll_to_chunk(chunk)
    ex.query_one("#source").focus()
    await pilot.pause()


def test_explorer_view(snap_compare):
    async def run_before(pilot):
        await settle(pilot)

    assert snap_compare(make_app(), terminal_size=SIZE, run_before=run_before)


def test_lint_view(snap_compare):
    async def run_before(pilot):
        await settle(pilot, chunk=None)
        await pilot.press("l")
        await until(pilot, lambda: pilot.app.explorer.query("#findings")
                    and pilot.app.explorer.query_one("#findings").option_count > 0)

    assert snap_compare(make_app(), terminal_size=SIZE, run_before=run_before)


def test_compare_view(snap_compare):
    async def run_before(pilot):
        await settle(pilot, chunk=None)
        pilot.app.explorer.action_compare("fixed")
        # Both sides cut and the tree's totals counted (their workers finish in either order).
        await until(pilot, lambda: isinstance(pilot.app.screen, CompareScreen) and pilot.app.screen.diff is not None
                    and all(pilot.app.screen.totals.values()))
        pilot.app.screen.query_one("#side-a").focus()
        await pilot.pause()

    assert snap_compare(make_app(), terminal_size=SIZE, run_before=run_before)


def test_query_view_before_the_first_question(snap_compare):
    async def run_before(pilot):
        await settle(pilot, chunk=3)
        await pilot.press("e")
        await until(pilot, lambda: pilot.app.explorer.query("#expect-status"))
        pilot.app.explorer.query_one("#source").focus()
        await pilot.pause()
        # Toasts time out on their own clock: clear them so the picture does not depend on timing.
        pilot.app.clear_notifications()
        await pilot.pause()

    assert snap_compare(make_app(), terminal_size=SIZE, run_before=run_before)


def test_files_view_at_80x24(snap_compare):
    """The files view at the smallest size: paths cut from the left, every figure on screen."""
    from chunkscope.tui.screens.files import FilesScreen

    async def run_before(pilot):
        await settle(pilot, chunk=None)
        await pilot.press("F")
        await until(pilot, lambda: isinstance(pilot.app.screen, FilesScreen) and pilot.app.screen.shown)
        pilot.app.clear_notifications()
        await pilot.pause()

    assert snap_compare(make_app(), terminal_size=(80, 24), run_before=run_before)


def test_lint_pane_at_80x24_lists_several_findings(snap_compare):
    """At the smallest size the pane takes two thirds of the rows and each finding keeps to one row."""
    async def run_before(pilot):
        await settle(pilot, chunk=None)
        await pilot.press("l")
        await until(pilot, lambda: pilot.app.explorer.query("#findings")
                    and pilot.app.explorer.query_one("#findings").option_count > 0)
        assert pilot.app.explorer.query_one("#findings").scrollable_content_region.height >= 8
        pilot.app.clear_notifications()
        await pilot.pause()

    assert snap_compare(make_app(), terminal_size=(80, 24), run_before=run_before)


def test_query_results_at_80x24(snap_compare, monkeypatch):
    """A real question on the real index (the bundled model, Qdrant's local engine) at the smallest size: the pane
    takes the rows it needs, one line per status, and four results are in view."""
    from dataclasses import replace

    from chunkscope.tui.headless.search import SearchSession, retrieval_available

    missing = retrieval_available()
    if missing is not None:
        pytest.skip(missing)
    real_ask = SearchSession.ask

    def ask(self, *args, **kwargs):
        return replace(real_ask(self, *args, **kwargs), seconds=0.0)  # the search's time: the one moving figure

    monkeypatch.setattr(SearchSession, "ask", ask)

    async def run_before(pilot):
        await settle(pilot, path="intro.md", chunk=None)
        await pilot.press("slash")
        await pilot.pause(0.2)
        for key in "forward kinematics":
            await pilot.press("space" if key == " " else key)
        await pilot.press("enter")
        pane = pilot.app.explorer.query_one("#query-pane")
        await until(pilot, lambda: pane.query_one("#hits").option_count >= 5, timeout=600)
        await pilot.press("down")
        await until(pilot, lambda: pane.query_one("#hits").has_focus)
        pilot.app.clear_notifications()
        await pilot.pause(0.2)

    assert snap_compare(make_app(), terminal_size=(80, 24), run_before=run_before)
