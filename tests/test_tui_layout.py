"""The explorer's layout at real terminal sizes, driven with Pilot: the source stays readable down to 80x24."""

from __future__ import annotations

from pathlib import Path

import pytest


pytest.importorskip("textual")

from textual.widgets import Input  # noqa: E402

from chunkscope.tui.app import ChunkscopeApp  # noqa: E402
from chunkscope.tui.widgets.docs_tree import DocsTreeView  # noqa: E402
from chunkscope.tui.widgets.key_bar import KeyBar  # noqa: E402
from chunkscope.tui.widgets.source_view import SourceView  # noqa: E402
from tests.pilot import make_app, wait_for  # noqa: E402

pytestmark = pytest.mark.anyio

SAMPLE = Path(__file__).resolve().parents[1] / "sample_docs"
FK = "module-1-foundations/02-forward-kinematics.md"
#: Columns of text (gutter excluded) the source must keep at every size: enough to read a sentence.
MIN_TEXT_COLUMNS = 30





async def ready(pilot, app: ChunkscopeApp) -> None:
    ex = app.explorer
    await wait_for(pilot, lambda: ex.result is not None and ex.result.complete and ex.tree_result is not None
                   and ex.query("#chunks") and ex.query("#detail"), what="first file, tree and side panes")


def footer_text(app: ChunkscopeApp) -> str:
    """The footer as drawn at its width."""
    return app.screen.query_one(KeyBar).render().plain


def assert_on_screen(app: ChunkscopeApp, *selectors: str) -> None:
    """Each widget is displayed with a real size, entirely inside the terminal."""
    width, height = app.size
    for sel in selectors:
        w = app.explorer.query_one(sel)
        r = w.region
        assert w.display and r.width > 0 and r.height > 0, f"{sel} is not shown ({r})"
        assert r.x >= 0 and r.y >= 0 and r.right <= width and r.bottom <= height, f"{sel} runs off screen ({r})"


@pytest.mark.parametrize("size", [(80, 24), (100, 30), (120, 40), (160, 45)])
async def test_the_source_keeps_a_readable_width_and_nothing_runs_off_screen(size):
    app = make_app()
    async with app.run_test(size=size) as pilot:
        await ready(pilot, app)
        ex = app.explorer
        view = ex.query_one(SourceView)
        text_columns = view.scrollable_content_region.width - ex.layout_data.gutter_width
        assert text_columns >= MIN_TEXT_COLUMNS, f"only {text_columns} columns of text at {size}"
        assert view.scrollable_content_region.height >= 6
        # The chunk table and the detail are there too, with room for a few rows, and inside the terminal.
        assert_on_screen(app, "#source", "#chunks", "#detail", "#strategy-bar")
        assert ex.query_one("#chunks").region.height >= 5 and ex.query_one("#detail").region.height >= 5
        # The footer keeps how to get help and how to leave, whatever else it has to cut.
        footer = footer_text(app)
        assert "? Help" in footer and "q Quit" in footer, footer
        # The docs tree is a column on a wide terminal; narrower, it waits behind `f`.
        tree = ex.query_one(DocsTreeView)
        if size[0] >= 140:
            assert_on_screen(app, "#docs")
            assert tree.region.width >= 26
        else:
            assert not tree.display


async def test_a_narrow_terminal_opens_the_docs_tree_over_the_source_and_closes_it_on_a_pick():
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot, app)
        ex = app.explorer
        tree = ex.query_one(DocsTreeView)
        view = ex.query_one(SourceView)
        assert view.has_focus and not tree.display  # keys start in the source where the tree is a drawer
        await pilot.press("f")
        await wait_for(pilot, lambda: tree.has_focus and tree.display and tree.region.width >= 26, what="the drawer")
        assert_on_screen(app, "#docs")
        # Pick a file as a person does: move to it, Enter. The drawer closes onto the source showing that file.
        tree.move_cursor(tree._leaves[FK])  # noqa: SLF001 - the leaf of that path
        await pilot.press("enter")
        await wait_for(pilot, lambda: view.has_focus and not tree.display and ex.current_path == FK
                       and ex.result.doc.path == FK, what="the file, the drawer closed")
        # Escape from the drawer closes it too.
        await pilot.press("f")
        await wait_for(pilot, lambda: tree.display, what="the drawer again")
        await pilot.press("escape")
        await wait_for(pilot, lambda: not tree.display and view.has_focus, what="the drawer closed by escape")


async def test_the_query_pane_at_80x24_takes_the_rows_it_needs_and_keeps_the_footer_whole():
    """Issue #24: at 80x24 the open pane takes two thirds of the rows (the results were cut to one hit); the source
    shrinks to a few lines of text, still on screen."""
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot, app)
        ex = app.explorer
        await pilot.press("slash")
        await wait_for(pilot, lambda: ex.query("#query-input") and ex.query_one("#query-input", Input).has_focus,
                       what="the query input")
        bottom = ex.query_one("#bottom")
        view = ex.query_one(SourceView)
        assert bottom.region.height >= 13, f"the pane takes {bottom.region.height} of 24 rows"
        assert view.scrollable_content_region.height >= 3
        assert view.scrollable_content_region.width - ex.layout_data.gutter_width >= MIN_TEXT_COLUMNS
        assert_on_screen(app, "#source", "#bottom")
        # In the text field q and ? are typed, so the footer offers the keys that still work there.
        footer = footer_text(app)
        assert "Help" in footer and "Quit" in footer, footer
        box = ex.query_one("#query-input", Input)
        await pilot.press("q", "question_mark")
        assert box.value == "q?" and app.screen is ex


@pytest.mark.parametrize("size", [(120, 40), (140, 40), (160, 45)])
async def test_the_chunk_tables_heading_and_warnings_stay_readable(size):
    """Each row shows its first warning whole (and how many more) and the end of its heading path, at least 14
    characters of it; counts the detail pane also shows give way first."""
    from rich.cells import cell_len

    from chunkscope.tui.widgets.chunk_table import ChunkTable

    # Plain `recursive` (512 tokens): the first file then has a chunk with two warnings to lay out.
    app = make_app(strategy="recursive")
    async with app.run_test(size=size) as pilot:
        await ready(pilot, app)
        ex = app.explorer
        table = ex.query_one(ChunkTable)
        chunks = ex.result.chunks
        assert any(len(c.warnings) > 1 for c in chunks), "the first file needs a chunk with two warnings"
        rows = [table.render_line(y).text for y in range(1, min(len(chunks), table.size.height - 1) + 1)]
        assert all(cell_len(row) <= table.size.width for row in rows)
        for c, row in zip(chunks, rows):
            assert row.split()[:2] == [str(c.index), str(c.tokens)], row
            if c.warnings:
                more = f" +{len(c.warnings) - 1}" if len(c.warnings) > 1 else ""
                assert f"{c.warnings[0]}{more}" in row or ", ".join(c.warnings) in row, row
            heading = " › ".join(c.heading_path)
            shown = heading if len(heading) <= 14 else heading[-13:]  # the end of the path, after "…"
            assert shown in row, (shown, row)


async def test_h_shows_the_chunk_sizes_with_their_axis_as_stats_does():
    """The header's sparklines have no axis; h opens them as ``chunkscope stats`` draws them: every token bin with
    its range and count (the core's `histogram_lines` over the tree run's counts), the limit ruled between the
    bins, then the open file's; h again closes the pane."""
    from chunkscope.chunking.stats import histogram_lines

    app = make_app(strategy="fixed", chunk_size=120, chunk_overlap=0)
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot, app)
        ex = app.explorer
        ex.query_one(SourceView).focus()
        await pilot.press("h")
        await wait_for(pilot, lambda: ex.query("#size-pane") and ex.pane_open,
                       what="the sizes pane")
        text = str(ex.query_one("#size-pane").render())
        tree = ex.tree_result
        rows = histogram_lines(tree.token_counts(), 120, width=40)
        assert text.startswith("tree · chunk sizes in cl100k_base tokens")
        for label, bar, n, _over in rows:
            assert f"{label} {bar} {n}" in text
        assert sum(n for *_, n, _ in rows) == len(tree.token_counts()) > 10
        assert "limit 120" in text
        assert f"{ex.current_path} · chunk sizes in cl100k_base tokens" in text
        await pilot.press("h")
        await wait_for(pilot, lambda: not ex.pane_open, what="the pane closed")
