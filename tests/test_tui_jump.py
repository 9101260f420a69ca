"""Enter on a query result selects the chunk the result *is*, even where overlapping chunks share its start."""

from __future__ import annotations


import pytest

pytest.importorskip("textual")

from textual.widgets import Input, OptionList  # noqa: E402

from chunkscope.retrieval.payload import chunk_payload  # noqa: E402
from chunkscope.retrieval.store import Hit  # noqa: E402
from chunkscope.tui.headless.search import Answer  # noqa: E402
from tests.pilot import make_app, wait_for  # noqa: E402

pytestmark = pytest.mark.anyio

SIZE = (160, 50)
FK = "module-1-foundations/02-forward-kinematics.md"
#: Small chunks with a wide overlap: every chunk after the first starts inside the one before it.
PARAMS = {"chunk_size": 64, "chunk_overlap": 32}


def overlapped(chunks):
    """The chunks whose start lies inside the previous chunk (a search by offset lands on that neighbour)."""
    return [c for c in chunks[1:] if chunks[c.index - 1].start <= c.start < chunks[c.index - 1].end]


def hit_of(chunk, rank: int) -> Hit:
    """The hit the store returns for a chunk: built from the chunk's own point payload."""
    return Hit.from_payload(rank, 0.9 - rank / 100, True, chunk_payload(chunk))


async def test_enter_on_a_result_selects_its_own_chunk_not_the_overlapping_neighbour(monkeypatch):
    app = make_app(strategy="recursive", **PARAMS)
    async with app.run_test(size=SIZE) as pilot:
        ex = app.explorer
        await wait_for(pilot, lambda: ex.result is not None and ex.tree_result is not None, what="the first file")
        ex.open_file(FK)
        await wait_for(pilot, lambda: ex.result.doc.path == FK and ex.result.chunks, what="the file's chunks")
        chunks = list(ex.result.chunks)
        targets = overlapped(chunks)
        assert len(targets) >= 2, "the fixture should give overlapping chunks"
        # The hits: two chunks from the middle of the file, as the real store would return them.
        hits = [hit_of(targets[-1], 1), hit_of(targets[len(targets) // 2], 2)]

        def ask(resolved, question, *, path=None, chapter=None, expected=None) -> Answer:
            return Answer(question, hits, 0.2, 5, resolved.label)

        monkeypatch.setattr(ex.search, "ask", ask)
        ex.search.indexed.add(ex.resolved.fingerprint())
        ex.open_file("intro.md")  # start elsewhere: the jump opens the file too
        await wait_for(pilot, lambda: ex.result.doc.path == "intro.md", what="another file")
        await pilot.press("slash")
        await wait_for(pilot, lambda: ex.query("#query-input") and ex.query_one("#query-input", Input).has_focus,
                       what="the query input")
        await pilot.press(*"joints", "enter")
        pane = ex.query_one("#query-pane")
        await wait_for(pilot, lambda: pane._answer is not None, what="an answer")  # noqa: SLF001
        results = pane.query_one("#hits", OptionList)
        for n, hit in enumerate(hits):
            await pilot.press("down")
            assert results.get_option_at_index(results.highlighted).id == f"hit-{n}"
            await pilot.press("enter")
            await wait_for(pilot, lambda: ex.result.doc.path == FK and ex.selected is not None
                           and ex._pending_jump is None, what="the jump")  # noqa: SLF001
            assert ex.selected == hit.chunk_index, (
                f"selected #{ex.selected}, the result is #{hit.chunk_index}")
            chosen = ex.result.chunks[ex.selected]
            assert (chosen.start, chosen.end) == (hit.start, hit.end)
            results.focus()
            await pilot.pause()


def test_a_hit_from_an_older_cut_lands_on_the_chunk_holding_most_of_its_text():
    from types import SimpleNamespace

    from chunkscope.tui.jump import Jump, jump_index

    def chunk(i, start, end):
        return SimpleNamespace(index=i, start=start, end=end, start_line=1 + start // 10, end_line=1 + end // 10)

    # Re-cut since the search (other sizes): index 1 is now another span; [70, 150) lies mostly in chunk 2.
    now = [chunk(0, 0, 60), chunk(1, 40, 100), chunk(2, 80, 160)]
    assert jump_index(now, Jump("a.md", 70, None, 1, 150)) == 2
    # Same cut: the index names the chunk, although its start lies inside the previous chunk as well.
    assert jump_index(now, Jump("a.md", 40, None, 1, 100)) == 1
    # A lint finding (an index, no span) keeps its index; one with no index goes by its offset.
    assert jump_index(now, Jump("a.md", 45, 5, 2)) == 2
    assert jump_index(now, Jump("a.md", 45, 5)) == 0


# --- going to a page by name, and / from any field --------------------------------------------------------------


async def test_a_page_is_found_by_name_in_three_keys():
    """ctrl+g, a letter of the page's name, Enter: the page is open in the source (intro.md is open at the start);
    the same pages are in the ctrl+p palette as ``open: <path>``."""
    from textual.command import CommandPalette

    from chunkscope.tui.widgets.source_view import SourceView

    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        ex = app.explorer
        await wait_for(pilot, lambda: ex.result is not None and ex.result.complete, what="the first file")
        assert ex.current_path == "intro.md"
        target = "module-2-motion/ch04-trajectory-planning.md"  # the one page whose name or title holds a 4
        await pilot.press("ctrl+g")
        await wait_for(pilot, lambda: isinstance(app.screen, CommandPalette), what="the finder")
        await pilot.press("4")
        await wait_for(pilot, lambda: app.screen.query("CommandList")
                       and app.screen.query_one("CommandList").option_count == 1, what="one page left")
        await pilot.press("enter")
        await wait_for(pilot, lambda: ex.current_path == target and ex.result.doc.path == target
                       and ex.result.complete, what="the page open")
        assert app.screen is ex and ex.query_one(SourceView).has_focus
        # In the palette too, beside the commands, by a few letters of the name.
        await pilot.press("ctrl+p")
        await wait_for(pilot, lambda: isinstance(app.screen, CommandPalette), what="the palette")
        await pilot.press(*"inverse")
        await wait_for(pilot, lambda: app.screen.query_one("CommandList").option_count >= 1, what="a page")
        top = str(app.screen.query_one("CommandList").get_option_at_index(0).prompt)
        assert "open: module-2-motion/ch03-inverse-kinematics.mdx" in top
        await pilot.press("enter")
        await wait_for(pilot, lambda: ex.current_path == "module-2-motion/ch03-inverse-kinematics.mdx",
                       what="the palette's page open")


async def test_slash_reaches_the_question_from_a_number_field_and_types_in_a_text_field():
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        ex = app.explorer
        await wait_for(pilot, lambda: ex.result is not None and ex.result.complete, what="the first file")
        size = ex.query_one("#param-chunk_size", Input)  # a number field: "/" is no character of it
        size.focus()
        before = size.value
        await pilot.press("slash")
        await wait_for(pilot, lambda: ex.query("#query-input") and ex.query_one("#query-input", Input).has_focus,
                       what="the question from the size field")
        assert size.value == before
        threshold = ex.query_one("#threshold-input", Input)
        threshold.focus()
        await pilot.pause()
        value = threshold.value
        await pilot.press("slash")
        await wait_for(pilot, lambda: ex.query_one("#query-input", Input).has_focus, what="the question again")
        assert threshold.value == value
        question = ex.query_one("#query-input", Input)
        await pilot.press(*"a", "slash", "b")  # the question itself holds "/"
        assert question.value.endswith("a/b")
