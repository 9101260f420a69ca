"""What the explorer says about its keys and counts, driven with Pilot: the footer offers only keys that work where
the focus is, help says how to close it, `e` toggles, counts agree in number, Evaluate says what it runs."""

from __future__ import annotations

import os
from pathlib import Path

import pytest


pytest.importorskip("textual")

from rich.console import Console  # noqa: E402
from textual.widgets import Input  # noqa: E402

from chunkscope.tui.app import ChunkscopeApp  # noqa: E402
from chunkscope.tui.screens.help import HelpScreen, binding_rows  # noqa: E402
from chunkscope.tui.widgets.docs_tree import DocsTreeView  # noqa: E402
from chunkscope.tui.widgets.histogram import TokenHistogram  # noqa: E402
from chunkscope.tui.widgets.key_bar import KeyBar  # noqa: E402
from chunkscope.tui.widgets.source_view import SourceView  # noqa: E402
from tests.pilot import make_app, wait_for  # noqa: E402

pytestmark = pytest.mark.anyio

SAMPLE = Path(__file__).resolve().parents[1] / "sample_docs"
SIZE = (160, 45)
#: A page plain `recursive` (512 tokens) cuts into exactly one chunk.
ONE_CHUNK = "module-2-motion/index.md"





async def ready(pilot, app: ChunkscopeApp) -> None:
    ex = app.explorer
    await wait_for(pilot, lambda: ex.result is not None and ex.result.complete and ex.tree_result is not None
                   and ex.query("#param-separators"), what="the explorer and its parameter editor")


def footer(app: ChunkscopeApp) -> str:
    return app.screen.query_one(KeyBar).render().plain


async def test_a_text_field_types_slash_and_the_footer_does_not_offer_it():
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        ex = app.explorer
        ex.query_one(SourceView).focus()
        await pilot.pause()
        assert "/ Query" in footer(app)
        box = ex.query_one("#param-separators", Input)  # a JSON list: "/" is a character it may hold
        box.focus()
        await pilot.pause()
        shown = footer(app)
        assert "Query" not in shown, shown
        assert "Help" in shown and "Quit" in shown  # f1 and ctrl+q: the keys that still work in a text field
        before = box.value
        await pilot.press("end", "slash")
        assert box.value == before + "/"
        assert not ex.pane_open


async def test_help_says_how_to_close_it_and_lists_the_new_keys():
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        await pilot.press("question_mark")
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen), what="help")
        hint = str(app.screen.query_one("#help-close-hint").render())
        assert "esc" in hint and "closes this help" in hint
        con = Console(width=240, record=True, file=open(os.devnull, "w"))
        con.print(binding_rows(app.screen.groups, app.screen.keymap))
        text = con.export_text()
        assert "Jump to source" in text and "Results" in text  # the query results: down, then enter
        assert "clears the mark" in text  # e toggles
        # Evaluate says what it probes: the current strategy and the configured presets, not "every strategy".
        assert "every strategy" not in text and "each configured preset" in text
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, HelpScreen), what="help closed")


async def test_e_on_the_expected_chunk_clears_the_mark():
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        ex = app.explorer
        view = ex.query_one(SourceView)
        view.focus()
        await pilot.press("n")
        await wait_for(pilot, lambda: ex.selected == 1, what="chunk 1")
        await pilot.press("e")
        await wait_for(pilot, lambda: ex.expected is not None and ex.query("#expect-status"), what="the mark")
        assert ex.expected.index == 1
        verdict = ex.query_one("#expect-status")
        await wait_for(pilot, lambda: verdict.has_class("-shown"), what="the verdict line")
        await pilot.press("escape")  # out of the question field the mark opened
        assert view.has_focus
        await pilot.press("e")
        await wait_for(pilot, lambda: ex.expected is None, what="the mark cleared")
        assert not verdict.has_class("-shown")
        # Another chunk is marked, not cleared.
        await pilot.press("p", "e")
        await wait_for(pilot, lambda: ex.expected is not None and ex.expected.index == 0, what="chunk 0 marked")


async def test_one_chunk_is_counted_in_the_singular():
    # Plain `recursive` (512 tokens) keeps that page in one chunk; the `default` preset (200) would cut it in two.
    app = make_app(strategy="recursive")
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        ex = app.explorer
        tree = ex.query_one(DocsTreeView)
        tree.move_cursor(tree._leaves[ONE_CHUNK])  # noqa: SLF001 - the leaf of that path
        await wait_for(pilot, lambda: ex.result.doc.path == ONE_CHUNK and ex.result.complete, what="the page")
        assert len(ex.result.chunks) == 1
        title = ex.query_one(SourceView).border_title
        assert title.endswith("· 1 chunk"), title
        histogram = ex.query_one(TokenHistogram).render().plain
        assert " 1 chunk · " in histogram, histogram
        detail_hint = "1 chunk."
        ex.selected = None
        await pilot.pause()
        assert any(detail_hint in strip.text for strip in ex.query_one("#detail").lines)
