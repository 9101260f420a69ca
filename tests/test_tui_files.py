"""Finding the worst file (issue #13): the files view (F, the palette), Enter to its first finding, the lint pane
grouped by file, and the docs tree's marks before the names. Driven with Pilot at 80x24 and 200x50."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("textual")

from rich.cells import cell_len  # noqa: E402
from textual.widgets import Checkbox, OptionList  # noqa: E402

from chunkscope.tui.headless.file_report import file_summaries, group_by_file, sort_files  # noqa: E402
from chunkscope.chunking.model import ChunkedDoc  # noqa: E402
from chunkscope.tui.app import ChunkscopeApp  # noqa: E402
from chunkscope.tui.screens.explorer import ExplorerScreen  # noqa: E402
from chunkscope.tui.screens.files import FilesScreen, FilesTable, left_cut  # noqa: E402
from chunkscope.tui.screens.help import HelpScreen  # noqa: E402
from chunkscope.tui.widgets.docs_tree import DocsTreeView  # noqa: E402
from chunkscope.tui.widgets.key_bar import KeyBar  # noqa: E402
from chunkscope.tui.widgets.source_view import SourceView  # noqa: E402
from tests.pilot import make_app, press_burst, wait_for  # noqa: E402

pytestmark = pytest.mark.anyio

#: The worst file: several code blocks longer than a window, so several split-fence errors; its name is longer
#: than the docs drawer is wide.
WORST = "guide/03-a-very-long-file-name-that-the-narrow-docs-drawer-cuts-off.md"
#: Windows of 120 tokens cut the long code blocks; nothing is over the limit (fixed never exceeds it).
STRATEGY = dict(strategy="fixed", chunk_size=120, chunk_overlap=0)
SIZES = [(80, 24), (200, 50)]


@pytest.fixture()
def worst_tree(tmp_path: Path) -> Path:
    """A small tree where one file, the last in reading order and with a long name, is clearly the worst."""
    docs = tmp_path / "docs"
    (docs / "guide").mkdir(parents=True)
    (docs / "intro.md").write_text("# Introduction\n\nA short page that fits in one chunk.\n", encoding="utf-8")
    (docs / "guide" / "02-short.md").write_text(
        "# Short\n\nSome prose before a list.\n\n- one\n- two\n- three\n", encoding="utf-8")
    code = "\n".join(f'    let value_{i} = compute_something({i}, "argument number {i}");' for i in range(30))
    parts = ["# Setting up the long example", ""]
    for k in range(4):
        parts += [f"## Part {k}", "", "Some words before the code block say what the block does.", "",
                  "```rust", "fn main() {", code, "}", "```", ""]
    (docs / WORST).write_text("\n".join(parts), encoding="utf-8")
    return docs


def rows_of(app: ChunkscopeApp):
    """The core's rows for the explorer's current tree run (the oracle for the view)."""
    ex = app.explorer
    tree = ex.tree_result
    results = [ChunkedDoc(d, tree.entries[d.path].chunks, tree.entries[d.path].error) for d in ex.docs.documents]
    return file_summaries(results, tree.resolved.strategy.limits().max, tree.lint.findings, ex.config.embed_model)


async def ready(pilot, app: ChunkscopeApp) -> None:
    ex = app.explorer
    await wait_for(pilot, lambda: ex.result is not None and ex.result.complete and ex.tree_result is not None
                   and ex.tree_result.lint is not None, what="the first file and the tree's lint")


async def open_files_view(pilot, app: ChunkscopeApp) -> FilesScreen:
    await pilot.press("F")
    await wait_for(pilot, lambda: isinstance(app.screen, FilesScreen) and app.screen.shown, what="the files view")
    return app.screen


def line_in_view(view: SourceView, line: int) -> bool:
    row = view.row_of_line(line - 1)
    top = round(view.scroll_y)
    return top <= row < top + view.scrollable_content_region.height


@pytest.mark.parametrize("size", SIZES)
async def test_two_keys_reach_the_worst_file_at_its_first_finding(worst_tree, size):
    app = make_app(worst_tree, **STRATEGY)
    async with app.run_test(size=size) as pilot:
        await ready(pilot, app)
        ex = app.explorer
        assert ex.current_path != WORST
        expected = sort_files(rows_of(app))
        assert expected[0].path == WORST and expected[0].errors >= 3, "the fixture's worst file"
        first = expected[0].first_finding
        # The key is offered in the footer, whatever the width.
        assert "F Worst files" in ex.query_one(KeyBar).render().plain
        # Key one: the files view, worst first, its cursor on the worst file.
        screen = await open_files_view(pilot, app)
        table = screen.query_one(FilesTable)
        assert table.has_focus and table.cursor_row == 0
        assert [r.path for r in screen.shown] == [r.path for r in expected]
        # Every figure is on screen: the table fits its width (the path gives way, from the left).
        assert table.virtual_size.width <= table.scrollable_content_region.width
        top = [str(cell) for cell in table.get_row_at(0)]
        assert top[0].endswith("cuts-off.md")
        assert top[1:5] == [str(expected[0].chunks), str(expected[0].over_limit), str(expected[0].errors),
                            str(expected[0].warnings)]
        assert top[5].endswith("%")
        # Key two: Enter opens the file at its first finding, its line in view, the source focused.
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, ExplorerScreen) and ex.current_path == WORST
                       and ex.result.doc.path == WORST and ex.result.chunks and ex.selected == first.chunk_index,
                       what="the worst file at its first finding")
        view = ex.query_one(SourceView)
        await wait_for(pilot, lambda: line_in_view(view, first.line) and view.has_focus,
                       what="the finding's line in view")
        assert first.severity == "error"


async def test_sorting_by_each_column_and_back(worst_tree):
    app = make_app(worst_tree, **STRATEGY)
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot, app)
        rows = rows_of(app)
        screen = await open_files_view(pilot, app)
        table = screen.query_one(FilesTable)
        assert str(table.columns["errors"].label) == "errors▼"  # the sorted column says so
        seen = []
        for _ in range(6):
            await pilot.press("s")
            seen.append(screen.sort)
            assert [r.path for r in screen.shown] == [r.path for r in sort_files(rows, screen.sort)]
            assert table.cursor_row == 0
        assert seen == ["warnings", "over limit", "unread", "chunks", "path", "worst"]
        # r: best first.
        await pilot.press("r")
        assert [r.path for r in screen.shown] == [r.path for r in sort_files(rows, reverse=True)]
        assert screen.shown[-1].path == WORST
        # Escape goes back without opening anything.
        before = app.explorer.current_path
        await pilot.press("escape")
        await wait_for(pilot, lambda: isinstance(app.screen, ExplorerScreen), what="back to the explorer")
        assert app.explorer.current_path == before


async def test_the_files_view_follows_a_new_tree_run_and_posts_its_failures(worst_tree, monkeypatch):
    """The view is given the tree run (not the explorer): a new strategy's run lands in it; a failure of its worker
    is posted and becomes the app's one notification."""
    from chunkscope.tui.headless.session import resolve
    from chunkscope.tui.screens import files

    app = make_app(worst_tree, **STRATEGY)
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(pilot, app)
        ex = app.explorer
        screen = await open_files_view(pilot, app)
        before = {r.path: r.chunks for r in screen.rows}
        ex.set_strategy(resolve(app.config, "fixed", {"chunk_size": 60, "chunk_overlap": 0}))
        await wait_for(pilot, lambda: screen.tree_run is ex.tree_result is not None and screen.rows is not None
                       and screen.tree_run.resolved.strategy.limits().max == 60
                       and {r.path: r.chunks for r in screen.rows} != before, what="the new run in the view")
        assert {r.path: r.chunks for r in screen.rows} == {r.path: r.chunks for r in rows_of(app)}
        assert sum(r.chunks for r in screen.rows) > sum(before.values())

        def broken(*args, **kwargs):
            raise RuntimeError("the figures could not be summed up")

        monkeypatch.setattr(files, "file_summaries", broken)
        ex.set_strategy(resolve(app.config, "fixed", {"chunk_size": 90, "chunk_overlap": 0}))
        await wait_for(pilot, lambda: any("summing up the files failed" in str(n.title)
                                          for n in app._notifications), what="the failure's notification")
        note = next(n for n in app._notifications if "summing up the files failed" in str(n.title))
        assert note.message == "RuntimeError: the figures could not be summed up" and note.severity == "error"
        assert isinstance(app.screen, FilesScreen)  # the view stays, with the rows it had


async def test_the_palette_opens_the_files_view(worst_tree):
    app = make_app(worst_tree, **STRATEGY)
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot, app)
        await pilot.press("ctrl+p")
        await wait_for(pilot, lambda: app.screen.query("CommandInput"), what="the palette")
        await press_burst(pilot, *"view: files")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, FilesScreen) and app.screen.shown,
                       what="the files view from the palette")


async def test_help_lists_the_files_view_and_its_keys(worst_tree):
    app = make_app(worst_tree, **STRATEGY)
    async with app.run_test(size=(200, 50)) as pilot:
        await ready(pilot, app)
        await pilot.press("question_mark")
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen), what="help")
        groups = dict(app.screen.groups)
        explorer_keys = {b.id for b in groups["Explorer"]}
        assert "explorer.files-view" in explorer_keys
        files_keys = {b.id for b in groups["Files view"]}
        assert {"files.sort", "files.reverse", "files.open", "files.back"} <= files_keys
        assert "g" in {b.key for b in groups["Lint pane"]}


async def test_lint_pane_groups_findings_by_file_worst_first(worst_tree):
    app = make_app(worst_tree, **STRATEGY)
    async with app.run_test(size=(200, 50)) as pilot:
        await ready(pilot, app)
        ex = app.explorer
        report = ex.tree_result.lint
        await pilot.press("l")
        findings = ex.query_one("#findings", OptionList)
        await wait_for(pilot, lambda: findings.option_count == len(report.findings) and findings.has_focus,
                       what="the lint pane")
        pane = ex.query_one("#lint-pane")
        await pilot.press("g")
        groups = group_by_file(report.findings, {p: i for i, p in enumerate(ex.tree_result.entries)})
        await wait_for(pilot, lambda: findings.option_count == len(report.findings) + len(groups),
                       what="a header per file")
        assert pane.by_file and pane.query_one("#lint-by-file", Checkbox).value is True
        head = str(findings.get_option_at_index(0).prompt)
        worst_path, worst_findings = groups[0]
        errors = sum(f.severity == "error" for f in worst_findings)
        assert worst_path == WORST
        assert WORST in head and f"{errors} errors" in head
        assert f"{len(worst_findings) - errors} warning" in head
        # Enter on a file's header jumps to its first finding.
        findings.highlighted = 0
        await pilot.press("enter")
        await wait_for(pilot, lambda: ex.current_path == WORST and ex.result.doc.path == WORST
                       and ex.selected == worst_findings[0].chunk_index, what="the jump from a header")
        # The filter still applies under the grouping, and g turns it off again.
        findings.focus()
        await pilot.press("E")
        n_errors = sum(f.severity == "error" for f in report.findings)
        n_files = len({f.path for f in report.findings if f.severity == "error"})
        await wait_for(pilot, lambda: findings.option_count == n_errors + n_files, what="errors only, grouped")
        await pilot.press("g")
        await wait_for(pilot, lambda: findings.option_count == n_errors and not pane.by_file, what="one list")


@pytest.mark.parametrize("size", SIZES)
async def test_the_docs_tree_shows_the_error_mark_before_a_long_name(worst_tree, size):
    app = make_app(worst_tree, **STRATEGY)
    async with app.run_test(size=size) as pilot:
        await ready(pilot, app)
        ex = app.explorer
        errors = ex.tree_result.entries[WORST].lint_errors
        assert errors >= 3
        tree = ex.query_one(DocsTreeView)
        await wait_for(pilot, lambda: f"●{errors}" in tree._leaves[WORST].label.plain,  # noqa: SLF001
                       what="the tree's marks")
        if size[0] < 140:
            await pilot.press("f")  # the drawer
            await wait_for(pilot, lambda: tree.display and tree.has_focus, what="the docs drawer")
        await pilot.pause()
        leaf = tree._leaves[WORST]  # noqa: SLF001
        tree.scroll_to_node(leaf, animate=False)
        await pilot.pause()
        drawn = tree.render_line(leaf.line - round(tree.scroll_y)).text
        assert f"●{errors}" in drawn, drawn  # on screen, not past the edge with the end of the name
        assert drawn.index(f"●{errors}") < drawn.index("03-a-very")


def test_left_cut_keeps_the_end_of_a_path():
    assert left_cut("guide/file.md", 20) == "guide/file.md"
    assert left_cut("guide/very-long-name.md", 10) == "…g-name.md"
    wide = left_cut("a/" + "界" * 10, 9)  # two cells a character
    assert cell_len(wide) <= 9 and wide.startswith("…") and wide.endswith("界")
