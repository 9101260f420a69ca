"""Live tuning in the explorer, driven with Pilot: typed parameters are never lost, the work waits for a pause in
typing and runs off the UI thread, a stale cut never replaces a newer one, and the source follows the selection."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest


pytest.importorskip("textual")

from textual.widgets import Input, Select  # noqa: E402

from chunkscope.tui import debounce  # noqa: E402
from chunkscope.tui.app import ChunkscopeApp  # noqa: E402
from chunkscope.tui.screens import explorer as explorer_module  # noqa: E402
from chunkscope.tui.widgets.docs_tree import DocsTreeView  # noqa: E402
from chunkscope.tui.widgets.source_view import SourceView  # noqa: E402
from chunkscope.tui.widgets.strategy_bar import StrategyBar  # noqa: E402
from tests.pilot import make_app, press_burst, wait_for  # noqa: E402

pytestmark = pytest.mark.anyio

SAMPLE = Path(__file__).resolve().parents[1] / "sample_docs"
FK = "module-1-foundations/02-forward-kinematics.md"
SIZE = (160, 45)
# Every test here opens plain `recursive` (512/50), not the `default` preset (recursive at 200): the values typed
# below start from 512, and 200 must differ from the starting size.





async def open_fk(pilot, app: ChunkscopeApp) -> None:
    """Wait for the first file and the tree, then open FK as a person does (the tree's cursor)."""
    ex = app.explorer
    await wait_for(pilot, lambda: ex.result is not None and ex.result.complete and ex.tree_result is not None
                   and ex.query_one(StrategyBar).editor_ready, what="the explorer")
    tree = ex.query_one(DocsTreeView)
    tree.move_cursor(tree._leaves[FK])  # noqa: SLF001 - the leaf of that path
    await wait_for(pilot, lambda: ex.result.doc.path == FK and ex.result.complete
                   and ex.layout_data.chunks is ex.result.chunks, what=f"{FK} to open")


def record_cuts(monkeypatch) -> list[tuple[int | None, bool]]:
    """Every cut of the open file: (chunk_size asked for, whether it ran on the UI thread)."""
    calls: list[tuple[int | None, bool]] = []
    original = explorer_module.cut_file

    def cut(doc, resolved, *cache):
        calls.append((resolved.params.get("chunk_size"), threading.current_thread() is threading.main_thread()))
        return original(doc, resolved, *cache)

    monkeypatch.setattr(explorer_module, "cut_file", cut)
    return calls


async def focus_param(pilot, app: ChunkscopeApp, name: str) -> Input:
    box = app.explorer.query_one(f"#param-{name}", Input)
    box.focus()
    await pilot.pause()
    await pilot.press("end")  # the field selects its text on focus: keep it, type at the end
    return box


async def test_typing_fast_in_a_parameter_keeps_every_key_and_cuts_only_the_final_value(monkeypatch):
    app = make_app(strategy="recursive")
    async with app.run_test(size=SIZE) as pilot:
        await open_fk(pilot, app)
        ex = app.explorer
        assert ex.resolved.params["chunk_size"] == 512
        box = await focus_param(pilot, app, "chunk_size")
        calls = record_cuts(monkeypatch)
        # The keys arrive together, as from a terminal while the app is busy: backspace must not be overtaken
        # by the digits typed after it (Textual runs an Input's editing keys only once they reach the app).
        await press_burst(pilot, "backspace", "backspace", "7", "9")
        assert box.value == "579"
        await wait_for(pilot, lambda: ex.result.resolved.params["chunk_size"] == 579 and ex.result.complete
                       and ex.layout_data.chunks is ex.result.chunks, what="the cut at 579")
        assert box.value == "579"
        assert ex.query_one(StrategyBar).resolved.params["chunk_size"] == 579
        # The work ran in a worker thread, never on the thread that handles the keys.
        assert calls and not any(on_ui for _, on_ui in calls)
        assert calls[-1][0] == 579


async def test_a_late_echo_of_an_older_value_never_rewrites_the_field_being_typed(monkeypatch):
    """The explorer used to set the bar back to the value a (late) message carried, rebuilding the fields under
    the typist's fingers: 512 → ⌫⌫79 ended as 517. A change that came from the bar is never sent back to it."""
    app = make_app(strategy="recursive")
    async with app.run_test(size=SIZE) as pilot:
        await open_fk(pilot, app)
        ex = app.explorer
        bar = ex.query_one(StrategyBar)
        box = await focus_param(pilot, app, "chunk_size")
        older = bar.resolved  # chunk_size 512: the value a message still in the queue would carry
        await pilot.press("backspace", "backspace", "7")
        assert box.value == "57"
        # That message arrives now, while the field holds 57 and the typist goes on.
        ex.post_message(StrategyBar.Changed(bar, older))
        await pilot.press("9")
        await wait_for(pilot, lambda: ex.result.resolved.params["chunk_size"] == 579 and ex.result.complete,
                       what="the cut at 579")
        assert box.value == "579" and box.has_focus
        assert ex.resolved.params["chunk_size"] == 579


async def test_typed_values_wait_for_a_pause_and_enter_applies_at_once(monkeypatch):
    monkeypatch.setattr(debounce, "DEBOUNCE_SECONDS", 600.0)  # a pause that never comes during the test
    app = make_app(strategy="recursive")
    async with app.run_test(size=SIZE) as pilot:
        await open_fk(pilot, app)
        ex = app.explorer
        bar = ex.query_one(StrategyBar)
        box = await focus_param(pilot, app, "chunk_size")
        calls = record_cuts(monkeypatch)
        box.action_delete_left_all()
        await pilot.press(*"128")
        await pilot.pause()
        # Every keystroke was checked (1, 12, 128 are valid) but none was cut: the typist has not paused.
        assert box.value == "128" and not box.has_class("-invalid")
        assert calls == [] and ex.resolved.params["chunk_size"] == 512 and bar.typing_pending
        await pilot.press("enter")
        await wait_for(pilot, lambda: ex.result.resolved.params["chunk_size"] == 128 and ex.result.complete,
                       what="the cut at 128")
        assert [size for size, _ in calls] == [128] and not bar.typing_pending
        # An invalid value is still flagged at once, and nothing waits to be posted.
        await pilot.press("backspace", "backspace", "backspace")
        assert box.has_class("-invalid") and not bar.typing_pending


async def test_a_slow_cut_of_an_older_value_never_replaces_the_newer_one(monkeypatch):
    app = make_app(strategy="recursive")
    async with app.run_test(size=SIZE) as pilot:
        await open_fk(pilot, app)
        ex = app.explorer
        original = explorer_module.cut_file
        gate, started, finished = threading.Event(), threading.Event(), threading.Event()

        def cut(doc, resolved, *cache):
            if resolved.params.get("chunk_size") == 200:
                started.set()
                gate.wait(20)
                try:
                    return original(doc, resolved, *cache)
                finally:
                    finished.set()
            return original(doc, resolved, *cache)

        monkeypatch.setattr(explorer_module, "cut_file", cut)
        box = await focus_param(pilot, app, "chunk_size")
        box.value = "200"
        await pilot.press("enter")
        await wait_for(pilot, started.is_set, what="the slow cut at 200 to start")
        box.value = "300"
        await pilot.press("enter")
        await wait_for(pilot, lambda: ex.result.resolved.params["chunk_size"] == 300 and ex.result.complete,
                       what="the cut at 300")
        shown = ex.result
        gate.set()  # the cut at 200 ends now, after the newer one is on screen
        await wait_for(pilot, finished.is_set, what="the slow cut to end")
        await wait_for(pilot, lambda: not any(w.is_running for w in app.explorer.workers if w.group == "file"),
                       what="the file workers to settle")
        assert ex.result is shown and ex.result.resolved.params["chunk_size"] == 300
        assert ex.layout_data.chunks is shown.chunks and box.value == "300"


async def test_switching_strategy_scrolls_the_source_to_the_selected_chunk():
    app = make_app(strategy="recursive")
    async with app.run_test(size=(80, 24)) as pilot:
        await open_fk(pilot, app)
        ex = app.explorer
        view = ex.query_one(SourceView)
        view.focus()
        await pilot.pause()
        await pilot.press(*"n" * 7)  # recursive's chunk 7 starts at line 209
        await wait_for(pilot, lambda: ex.selected == 7, what="chunk 7")
        before = round(view.scroll_y)
        height = view.scrollable_content_region.height
        # The section strategy cuts 7 chunks: the selection becomes its last, #6 at line 298, off screen.
        ex.query_one("#strategy-select", Select).value = "section"
        await wait_for(pilot, lambda: ex.result.resolved.name == "section" and ex.result.complete
                       and ex.layout_data.chunks is ex.result.chunks, what="the section strategy's chunks")
        assert ex.selected == len(ex.result.chunks) - 1 == 6
        first_row = view.row_of_line(ex.layout_data.chunk_line(ex.selected))
        assert not before <= first_row < before + height, "the test needs the new selection off screen"

        def shown() -> bool:
            top = round(view.scroll_y)
            return top <= first_row < top + view.scrollable_content_region.height

        await wait_for(pilot, shown, what="the source to scroll to the selected chunk")
        assert ex.query_one("#chunks").cursor_row == ex.selected
