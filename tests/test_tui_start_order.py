"""The explorer's start-up order: the first frame is styled once and shows the file where the keys start, and the
first file's chunks come before the widgets that wait for them. Speed itself is measured by bench/bench_tui.py."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

pytest.importorskip("textual")

from textual import events  # noqa: E402
from textual.message import Message  # noqa: E402

from chunkscope.tui.screens.explorer import ExplorerScreen  # noqa: E402
from chunkscope.tui.widgets.docs_tree import DocsTreeView  # noqa: E402
from chunkscope.tui.widgets.source_view import SourceView  # noqa: E402
from chunkscope.tui.widgets.strategy_bar import StrategyBar  # noqa: E402
from tests.pilot import SAMPLE, make_app, wait_for  # noqa: E402

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize(("size", "first_focus", "classes"), [
    ((120, 40), SourceView, {"-medium", "-tall"}),  # the tree is a drawer: the keys start in the source
    ((160, 50), DocsTreeView, {"-wide", "-tall"}),  # the tree is a column: the keys start there
    ((90, 24), SourceView, {"-narrow", "-short"}),
])
async def test_the_first_focus_goes_where_the_keys_start_and_the_drawer_never_opens(
        size: tuple[int, int], first_focus: type, classes: set[str]) -> None:
    focused: dict[int, type] = {}  # by message: a focus event is seen again as it bubbles up
    mounted_with: list[set[str]] = []
    app = make_app()

    def hook(message: Message) -> None:
        if isinstance(message, events.DescendantFocus):
            focused.setdefault(id(message), type(message.widget))
        explorer = [s for s in app.screen_stack if isinstance(s, ExplorerScreen)]
        if isinstance(message, events.Mount) and explorer and not mounted_with:  # its first widget's mount
            mounted_with.append(set(explorer[0].classes))

    async with app.run_test(size=size, message_hook=hook) as pilot:
        ex = app.explorer
        await wait_for(pilot, lambda: ex.result is not None and ex.result.complete, what="the first file")
        # One focus, on the widget the keys start in: the docs tree, focused first, opened the drawer over the
        # source at 120 columns, and leaving it restyled the whole screen in the middle of the start-up.
        assert list(focused.values()) == [first_focus]
        assert not ex.has_class("-tree-open")
        # The width and height classes are there when the screen is mounted: the first resize changes none.
        assert mounted_with and classes <= mounted_with[0]


async def test_the_first_files_chunks_come_before_the_side_panes_and_the_strategy_editor(tmp_path: Path) -> None:
    root = tmp_path / "docs"
    shutil.copytree(SAMPLE, root)
    app = make_app(root)
    async with app.run_test(size=(160, 50)) as pilot:  # a first run: it stores the tree's totals
        await wait_for(pilot, lambda: app.explorer.tree_result is not None, what="the tree's count")

    seen: dict[int, tuple[str, bool, bool]] = {}  # by message (the hook sees one more than once): what it is,
    # whether the side panes were mounted, and the strategy editor, when it was posted

    app = make_app(root)

    def hook(message: Message) -> None:
        if isinstance(message, (ExplorerScreen.FileChunked, ExplorerScreen.TreeCounted)):
            ex = app.explorer
            name = type(message).__name__
            if isinstance(message, ExplorerScreen.FileChunked):
                name += " complete" if message.result.complete else " boundaries"
            seen.setdefault(id(message), (name, bool(ex.query("#chunks")), ex.query_one(StrategyBar).editor_ready))

    async with app.run_test(size=(160, 50), message_hook=hook) as pilot:
        ex = app.explorer
        await wait_for(pilot, lambda: ex.result is not None and ex.result.complete and ex.query("#chunks")
                       and ex.query_one(StrategyBar).editor_ready, what="the start-up")
        order = list(seen.values())
        names = [s[0] for s in order]
        # The boundaries first, with nothing else made yet; then the stored totals; the completed cut comes only
        # once the side panes and the editor are there (no one leaving then closes the app half-way through them).
        assert names[:3] == ["FileChunked boundaries", "TreeCounted", "FileChunked complete"], order
        assert order[0][1:] == (False, False)
        assert order[1][1:] == (False, False)
        assert order[2][1:] == (True, True)
        # The table shows the first file's chunks (it was bound to them when it was mounted).
        assert ex.query_one("#chunks").row_count == len(ex.result.chunks) > 0
