"""The explorer app, driven with Textual's Pilot: real state and messages, not pixels (see test_tui_snapshots)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from chunkscope.chunking.cut_cache import CutCache
from chunkscope.chunking.drivers import chunk_documents
from chunkscope.config.reader import parse_config, resolve_strategy

pytest.importorskip("textual")

from textual.widgets import Input, OptionList  # noqa: E402

from chunkscope.tui.app import ChunkscopeApp  # noqa: E402
from chunkscope.tui.screens.compare import CompareScreen  # noqa: E402
from chunkscope.tui.screens.explorer import ExplorerScreen  # noqa: E402
from chunkscope.tui.screens.help import HelpScreen  # noqa: E402
from chunkscope.tui.widgets.chunk_table import ChunkTable  # noqa: E402
from chunkscope.tui.widgets.docs_tree import DocsTreeView  # noqa: E402
from chunkscope.tui.widgets.source_view import SourceView  # noqa: E402
from tests.pilot import make_app, wait_for  # noqa: E402

pytestmark = pytest.mark.anyio

REPO = Path(__file__).resolve().parents[1]
SAMPLE = REPO / "sample_docs"
SIZE = (160, 50)
FK = "module-1-foundations/02-forward-kinematics.md"





def explorer(app: ChunkscopeApp) -> ExplorerScreen:
    return app.explorer


async def open_file(pilot, app: ChunkscopeApp, path: str) -> None:
    """Choose a file the way a person does: put the tree's cursor on it."""
    ex = explorer(app)
    tree = ex.query_one(DocsTreeView)
    tree.move_cursor(tree._leaves[path])  # noqa: SLF001 - the leaf of that path
    # open_file shows the text at once with an empty placeholder result; wait for the finished cut of this file.
    await wait_for(pilot, lambda: ex.result is not None and ex.result.doc.path == path
                   and (ex.result.complete or ex.result.error is not None)
                   and ex.layout_data is not None and ex.layout_data.chunks is ex.result.chunks,
                   what=f"{path} to open")


async def ready(pilot, app: ChunkscopeApp) -> None:
    ex = explorer(app)
    await wait_for(pilot, lambda: ex.result is not None and ex.tree_result is not None, what="first file and tree")


# --- the explorer ---------------------------------------------------------------------------------------------


async def test_selecting_a_file_fills_the_table_with_the_cores_chunks():
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        await open_file(pilot, app, FK)
        ex = explorer(app)
        doc = app.docs.get(FK)
        expected = chunk_documents([doc], resolve_strategy(app.config).strategy)[0].chunks
        shown = ex.result.chunks
        assert [(c.start, c.end, c.tokens) for c in shown] == [(c.start, c.end, c.tokens) for c in expected]
        table = ex.query_one(ChunkTable)
        assert table.row_count == len(expected) > 1
        for i, c in enumerate(expected):
            # By column: the table gives its words column up at this width (the detail pane shows the words).
            assert str(table.get_cell(str(i), "index")) == str(c.index)
            assert str(table.get_cell(str(i), "tokens")) == str(c.tokens)
        # The tree shows the same count beside the file.
        label = ex.query_one(DocsTreeView)._leaves[FK].label.plain  # noqa: SLF001
        assert label.split()[0] == str(len(expected))


async def test_fast_moves_in_the_tree_end_on_the_right_file_with_its_chunks():
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        ex = explorer(app)
        tree = ex.query_one(DocsTreeView)
        tree.focus()
        await pilot.pause()
        await pilot.press(*["down"] * 7)
        await wait_for(pilot, lambda: tree.cursor_node is not None and tree.cursor_node.data is not None
                       and ex.current_path == tree.cursor_node.data and ex.result.doc.path == ex.current_path
                       and ex.result.complete and ex.layout_data.chunks is ex.result.chunks, what="the last file")
        assert ex.query_one(ChunkTable).row_count == len(ex.result.chunks) > 0


async def test_table_row_and_source_click_select_the_same_chunk():
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        await open_file(pilot, app, FK)
        ex = explorer(app)
        table = ex.query_one(ChunkTable)
        view = ex.query_one(SourceView)
        table.focus()
        await pilot.pause()
        assert table.cursor_row == 0 and ex.selected == 0
        await pilot.press("down", "down", "down")
        await wait_for(pilot, lambda: ex.selected == 3, what="row 3 to select chunk 3")
        first = view.row_of_line(ex.layout_data.chunk_lines(3)[0])  # rows are not lines when long lines wrap
        assert round(view.scroll_y) <= first < round(view.scroll_y) + view.scrollable_content_region.height
        # Click the first line of chunk 1 in the source: the table's cursor follows.
        line = ex.layout_data.chunk_line(1) + 1  # the line after its first, inside chunk 1 only
        view.scroll_to(y=max(view.row_of_line(line) - 2, 0), animate=False, immediate=True)  # rows are not lines
        await pilot.pause()
        target_y = view.row_of_line(line) - round(view.scroll_y)
        assert 0 <= target_y < view.scrollable_content_region.height
        await pilot.click(SourceView, offset=(ex.layout_data.gutter_width + 3 + 1, target_y + 1))
        await wait_for(pilot, lambda: ex.selected == 1 and table.cursor_row == 1, what="click to select chunk 1")


async def test_changing_chunk_size_in_the_editor_changes_the_boundaries():
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        await open_file(pilot, app, FK)
        ex = explorer(app)
        before = [(c.start, c.end) for c in ex.result.chunks]
        box = ex.query_one("#param-chunk_size", Input)
        box.focus()
        box.value = ""
        await pilot.press(*"128")
        await wait_for(pilot, lambda: ex.result.resolved.params["chunk_size"] == 128, what="re-chunk at 128")
        after = ex.result.chunks
        assert [(c.start, c.end) for c in after] != before and len(after) > len(before)
        assert all(c.tokens <= 128 or "oversize" in c.warnings for c in after)
        assert ex.query_one(ChunkTable).row_count == len(after)
        assert ex.layout_data.chunks is after
        # The tree worker follows with the new counts.
        await wait_for(pilot, lambda: ex.tree_result is not None and ex.tree_result.resolved is ex.resolved,
                       what="tree re-chunked")
        assert len(ex.tree_result.entries[FK].chunks) == len(after)
        # An invalid value is refused inline and the chunks stay.
        box.value = ""
        await pilot.press(*"abc")
        await pilot.pause()
        assert box.has_class("-invalid")
        assert "chunk_size must be an integer" in str(ex.query_one("#param-status").render()) or \
            "chunk_size" in str(ex.query_one("#param-status").render())
        assert ex.result.chunks is after
        # Out of range (chunk_overlap >= chunk_size is the strategy's own check) is refused too.
        box.value = "40"
        await pilot.pause()
        assert "✖" in str(ex.query_one("#param-status").render())
        assert ex.resolved.params["chunk_size"] == 128


async def test_strategy_picker_switches_strategy():
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        ex = explorer(app)
        app.choose_strategy("fixed")
        await wait_for(pilot, lambda: ex.result.resolved.name == "fixed", what="fixed strategy")
        assert ex.query_one("#strategy-select").value == "fixed"
        await wait_for(pilot, lambda: ex.query_one("#param-chunk_size", Input) is not None, what="fixed's editor")


async def test_compare_mode_counts_differences():
    # Plain `recursive` (512/50), not the `default` preset (recursive at 200): B's `recursive` must match A exactly.
    app = make_app(strategy="recursive")
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        await open_file(pilot, app, FK)
        await pilot.press("c")
        await wait_for(pilot, lambda: isinstance(app.screen, CompareScreen), what="compare screen")
        screen = app.screen
        await wait_for(pilot, lambda: screen.diff is not None, what="both sides chunked")
        a, b = screen.results["a"], screen.results["b"]
        assert a.resolved.name == "recursive" and b.resolved.name != "recursive"
        spans_a = {(c.start, c.end) for c in a.chunks}
        spans_b = {(c.start, c.end) for c in b.chunks}
        assert len(screen.diff.only_a) == len(spans_a - spans_b)
        assert len(screen.diff.only_b) == len(spans_b - spans_a)
        summary = str(screen.query_one("#compare-summary").render())
        assert f"{len(spans_a ^ spans_b)} chunks differ" in summary
        # Two parameter sets of one strategy: B's chunk_size changes, the count follows.
        box = screen.query_one("#bar-b").query_one("#strategy-select")
        box.value = "recursive"
        await wait_for(pilot, lambda: screen.results["b"] is not None and screen.results["b"].resolved.name == "recursive",
                       what="B switched to recursive")
        await wait_for(pilot, lambda: screen.diff is not None and not screen.diff.only_a and not screen.diff.only_b,
                       what="identical sides")
        assert "0 chunks differ" in str(screen.query_one("#compare-summary").render())
        size_b = screen.query_one("#bar-b").query_one("#param-chunk_size", Input)
        size_b.value = "200"
        await wait_for(pilot, lambda: screen.results["b"].resolved.params["chunk_size"] == 200 and screen.diff.only_b,
                       what="B at 200")
        # Scrolling one side scrolls the other to the same line: the boundaries stay aligned.
        left, right = screen.query_one("#side-a", SourceView), screen.query_one("#side-b", SourceView)
        left.scroll_to(y=40, animate=False, immediate=True)
        await wait_for(pilot, lambda: round(right.scroll_y) == 40, what="right side to follow")
        await pilot.press("escape")
        await wait_for(pilot, lambda: isinstance(app.screen, ExplorerScreen), what="back to the explorer")


async def test_lint_pane_lists_findings_and_jumps_to_them():
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        ex = explorer(app)
        report = ex.tree_result.lint
        assert report is not None, ex.tree_result.lint_error  # lint is part of every build: None is a failure
        assert report.findings, "sample_docs should give lint findings with the default strategy"
        await pilot.press("l")
        findings = ex.query_one("#findings", OptionList)
        await wait_for(pilot, lambda: findings.option_count > 0 and findings.has_focus, what="lint pane")
        # Pick a finding in another file than the open one, and jump.
        pane = ex.query_one("#lint-pane")
        target = next(i for i, f in enumerate(pane._findings) if f.path != ex.current_path)  # noqa: SLF001
        finding = pane._findings[target]  # noqa: SLF001
        findings.highlighted = target
        await pilot.press("enter")
        await wait_for(pilot, lambda: ex.current_path == finding.path and ex.result.doc.path == finding.path
                       and ex.selected is not None, what="jump to the finding")
        if finding.chunk_index is not None:
            assert ex.selected == finding.chunk_index
        else:
            chunk = ex.result.chunks[ex.selected]
            assert chunk.start_line <= finding.line <= chunk.end_line
        view = ex.query_one(SourceView)
        row = view.row_of_line(finding.line - 1)  # rows are not lines when long lines wrap
        assert round(view.scroll_y) <= row < round(view.scroll_y) + view.scrollable_content_region.height
        # The tree marks files with lint errors.
        with_errors = {f.path for f in report.findings if f.severity == "error"}
        for path in with_errors:
            assert "●" in ex.query_one(DocsTreeView)._leaves[path].label.plain  # noqa: SLF001


async def test_help_and_keymap_override(tmp_path):
    cfg = parse_config({"tui": {"keymap": {"explorer.query": "ctrl+f", "explorer.lint": "L"}}})
    app = make_app(config=cfg)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        ex = explorer(app)
        await pilot.press("ctrl+f")
        await wait_for(pilot, lambda: ex.pane_open, what="query pane via ctrl+f")
        assert ex.query_one("#query-input", Input).has_focus
        await pilot.press("escape")
        await pilot.press("question_mark")
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen), what="help")
        from rich.console import Console

        from chunkscope.tui.screens.help import binding_rows

        con = Console(width=200, record=True, file=open(os.devnull, "w"))
        con.print(binding_rows(app.screen.groups, app.screen.keymap))
        text = con.export_text()
        assert "ctrl+f" in text and "Expect chunk" in text and "Query" in text
        await pilot.press("escape")
        await wait_for(pilot, lambda: isinstance(app.screen, ExplorerScreen), what="help closed")


async def test_export_writes_every_chunk(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        ex = explorer(app)
        ex.export_chunks()
        await wait_for(pilot, lambda: list(tmp_path.glob("*.jsonl")), what="export file")
        out = next(tmp_path.glob("*.jsonl"))
        await wait_for(pilot, lambda: out.read_text().count("\n") == ex.tree_result.chunk_count, what="export written")
        first = json.loads(out.read_text().splitlines()[0])
        assert first["path"] == app.docs.documents[0].path and first["index"] == 0


async def test_edited_file_is_reread_and_rechunked(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    page = docs / "page.md"
    page.write_text("# Title\n\nA short page.\n", encoding="utf-8")
    app = make_app(docs)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        ex = explorer(app)
        assert len(ex.result.chunks) == 1
        page.write_text("# Title\n\n" + "\n\n".join(f"Paragraph {i} " + "word " * 120 for i in range(8)) + "\n",
                        encoding="utf-8")
        os.utime(page, ns=(time.time_ns(), time.time_ns() + 10_000_000))
        ex.poll_files()
        await wait_for(pilot, lambda: len(ex.result.chunks) > 1, what="re-chunk after the edit")
        assert ex.result.doc.text.startswith("# Title\n\nParagraph 0")


async def test_bad_files_and_failing_strategy_never_crash(tmp_path, monkeypatch):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# Good\n\nFine text.\n", encoding="utf-8")
    (docs / "b.md").write_bytes(b"# Bad\n\n\xff\xfe not utf-8\n")
    (docs / "c.md").write_text("# Escapes\n\nA bell \x07 and \x1b[31mred\x1b[0m text.\n", encoding="utf-8")
    app = make_app(docs)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        ex = explorer(app)
        # The unreadable file is listed as a problem and announced, never opened.
        assert any("invalid-utf8" in n.message or "skipped" in (n.title or "") for n in app._notifications)  # noqa: SLF001
        await open_file(pilot, app, "c.md")
        # Control characters are drawn as visible pictures, never sent raw.
        strip = ex.query_one(SourceView).render_line(2)
        assert "\x1b" not in strip.text and "\x07" not in strip.text and "␛" in strip.text
        # A strategy that raises on a file: the error is shown, the app goes on.
        from chunkscope.tui.headless import session

        original = session.chunk_documents

        def boom(docs, strategy):
            raise RuntimeError("strategy bug")

        # a.md's cut is stored by now (the cut cache): this strategy changed under it, so the store must not answer.
        monkeypatch.setattr(CutCache, "lookup", lambda self, strategy, docs: {})
        session.chunk_documents = boom
        try:
            await open_file(pilot, app, "a.md")
            assert ex.result.error and "strategy bug" in ex.result.error
            assert ex.result.chunks == []
        finally:
            session.chunk_documents = original


async def test_a_slow_strategy_is_announced_and_the_app_stays_usable(monkeypatch):
    from chunkscope.tui.headless import session
    from chunkscope.tui.screens import explorer as explorer_module

    monkeypatch.setattr(explorer_module, "SLOW_CUT_SECONDS", 0.5)
    release = __import__("threading").Event()
    original = session.chunk_documents

    def slow(docs, strategy):
        release.wait(10)
        return original(docs, strategy)

    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        ex = explorer(app)
        await wait_for(pilot, lambda: ex.layout_data is not None, what="the first file's text")
        monkeypatch.setattr(session, "chunk_documents", slow)
        monkeypatch.setattr(CutCache, "lookup", lambda self, strategy, docs: {})  # a stored cut is never slow
        ex.query_one(DocsTreeView).move_cursor(ex.query_one(DocsTreeView)._leaves[FK])  # noqa: SLF001
        await wait_for(pilot, lambda: any(n.title == "slow strategy" for n in app._notifications),  # noqa: SLF001
                       timeout=10, what="the slow-strategy notice")
        # The text is there and keys still work while the cut runs.
        assert ex.layout_data.doc.path == FK
        await pilot.press("question_mark")
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen), what="help while cutting")
        await pilot.press("escape")
        release.set()
        await wait_for(pilot, lambda: ex.result.doc.path == FK and ex.result.complete, what="the cut to finish")


async def test_query_pane_without_an_index_shows_what_to_do():
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        ex = explorer(app)
        await pilot.press("slash")
        await wait_for(pilot, lambda: ex.query_one("#query-input", Input).has_focus, what="query input")
        status = str(ex.query_one("#query-status").render())
        assert "first one indexes" in status or "not available" in status


async def test_unreachable_qdrant_is_a_notification_not_a_crash():
    cfg = parse_config({"qdrant": {"url": "http://127.0.0.1:9", "timeout": 1}})
    app = make_app(config=cfg)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        ex = explorer(app)
        await pilot.press("slash")
        await wait_for(pilot, lambda: ex.query("#query-input") and ex.query_one("#query-input", Input).has_focus,
                       what="query input")
        await pilot.press(*"where is the pelvis", "enter")
        await wait_for(pilot, lambda: any("failed" in (n.title or "") for n in app._notifications),  # noqa: SLF001
                       timeout=30, what="a notification of the failure")
        note = next(n for n in app._notifications if "failed" in (n.title or ""))  # noqa: SLF001
        assert "127.0.0.1:9" in note.message
        assert "failed" in str(ex.query_one("#query-status").render())
        assert not ex.query_one("#index-row").has_class("-busy")
        # The chunk views keep working.
        await pilot.press("escape", "n")
        await wait_for(pilot, lambda: ex.selected == 1, what="next chunk after the failure")


# --- torch stays unloaded until the first query ---------------------------------------------------------------

NO_TORCH_SCRIPT = textwrap.dedent("""
    import asyncio, sys, time
    from chunkscope.config.reader import load_config, resolve_strategy
    from chunkscope.document.loader import load_docs
    from chunkscope.tui.app import ChunkscopeApp
    from chunkscope.tui.screens.compare import CompareScreen

    async def main():
        cfg = load_config(sys.argv[1])
        app = ChunkscopeApp(load_docs(sys.argv[1]), cfg, resolve_strategy(cfg))
        async with app.run_test(size=(160, 50)) as pilot:
            ex = app.explorer
            async def until(cond):
                t = time.monotonic()
                while not cond() and time.monotonic() - t < 30:
                    await pilot.pause(0.05)
                assert cond()
            await until(lambda: ex.result is not None and ex.tree_result is not None)
            for path in [d.path for d in app.docs.documents][:3]:
                ex.open_file(path)
                await until(lambda: ex.result.doc.path == path)
            await pilot.press("n", "n", "p", "l", "escape", "slash", "escape")
            ex.query_one("#param-chunk_size").value = "256"
            await until(lambda: ex.result.resolved.params["chunk_size"] == 256)
            await pilot.press("c")
            await until(lambda: isinstance(app.screen, CompareScreen) and app.screen.diff is not None)
            await pilot.press("escape", "question_mark", "escape")
            await pilot.pause(0.2)
        print(",".join(m for m in ("torch", "sentence_transformers", "transformers") if m in sys.modules) or "none")

    asyncio.run(main())
""")


def test_torch_is_not_imported_before_the_first_query(tmp_path):
    env = {**os.environ, "CHUNKSCOPE_CACHE": str(tmp_path / "cache")}
    proc = subprocess.run([sys.executable, "-c", NO_TORCH_SCRIPT, str(SAMPLE)], capture_output=True, text=True,
                          timeout=180, env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip().splitlines()[-1] == "none"


# --- a real query (the model and a local Qdrant) --------------------------------------------------------------


@pytest.mark.model
async def test_query_returns_the_expected_chunk_first(tmp_path, monkeypatch, topic_docs):
    monkeypatch.setenv("CHUNKSCOPE_CACHE", str(tmp_path / "cache"))
    docs = topic_docs
    cfg = parse_config({"query": {"k": 3, "threshold": 0.2}})
    app = make_app(docs, config=cfg)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        ex = explorer(app)
        await open_file(pilot, app, "sailing.md")
        ex.selected = 0
        await pilot.press("e")  # expect this chunk: the sailing page
        box = ex.query_one("#query-input", Input)
        box.focus()
        await pilot.press(*"how do I turn a boat through the wind", "enter")
        pane = ex.query_one("#query-pane")
        await wait_for(pilot, lambda: pane._answer is not None, timeout=240, what="indexing and the answer")  # noqa: SLF001
        hits = pane._answer.hits  # noqa: SLF001
        assert hits[0].path == "sailing.md" and hits[0].rank == 1 and hits[0].kept
        verdict = pane._answer.verdict  # noqa: SLF001
        assert verdict is not None and verdict.hit and verdict.rank == 1
        assert "found: rank 1" in str(ex.query_one("#expect-status").render())
        # "This file only": the same question, answered from the open file alone.
        await open_file(pilot, app, "taxes.md")
        first = pane._answer  # noqa: SLF001
        ex.query_one("#filter-file").value = True
        await wait_for(pilot, lambda: pane._answer is not first, timeout=60, what="the filtered answer")  # noqa: SLF001
        assert pane._answer.filters == {"path": "taxes.md"}  # noqa: SLF001
        assert pane._answer.hits and all(h.path == "taxes.md" for h in pane._answer.hits)  # noqa: SLF001
        ex.query_one("#filter-file").value = False
        await wait_for(pilot, lambda: not pane._answer.filters, timeout=60, what="the unfiltered answer")  # noqa: SLF001
        # Enter on a hit jumps to its chunk.
        await open_file(pilot, app, "baking.md")
        hits_list = ex.query_one("#hits", OptionList)
        hits_list.focus()
        hits_list.highlighted = 0
        await pilot.press("enter")
        await wait_for(pilot, lambda: ex.current_path == "sailing.md" and ex.result.doc.path == "sailing.md"
                       and ex.selected == 0, what="jump to the hit")
        assert "torch" in sys.modules  # the model loaded for the query, and only then


def test_plain_text_colour_is_the_themes() -> None:
    """The first frame draws text in `highlight.PLAIN` before pygments is loaded: it must be the theme's colour."""
    from pygments.token import Text

    from chunkscope.tui.highlight import PLAIN, token_style

    assert token_style(Text).color == PLAIN.color


def test_the_headless_part_imports_neither_textual_nor_rich():
    """tui/headless is what the screens compute off the UI thread: importing all of it in a fresh interpreter
    loads no Textual and no rich (the import-linter contract checks the import graph; this checks the run)."""
    code = ("import sys\n"
            "import chunkscope.tui.headless.session, chunkscope.tui.headless.search\n"
            "import chunkscope.tui.headless.watcher, chunkscope.tui.headless.file_report\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'rich')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.strip() == "[]", out.stdout
