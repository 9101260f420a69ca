"""Files that appear, vanish, move or are saved by an editor while the explorer is open (the watcher)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

pytest.importorskip("textual")

from chunkscope.tui.widgets.docs_tree import DocsTreeView  # noqa: E402
from chunkscope.tui.widgets.lint_pane import LintPane  # noqa: E402
from tests.pilot import make_app, wait_for  # noqa: E402

pytestmark = pytest.mark.anyio

SIZE = (160, 45)
#: Over 256 word pieces: the embedder truncates it, so lint reports an `embed-truncation` warning on the page.
LONG = "# Long\n\n" + " ".join(f"word{i}" for i in range(400)) + "\n"


def page(title: str, paragraphs: int = 1) -> str:
    return f"# {title}\n\n" + "\n\n".join(f"Paragraph {i} of {title}. " + "text " * 150 for i in range(paragraphs)) + "\n"


def make_tree(tmp_path: Path) -> Path:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "01-alpha.md").write_text(page("Alpha", 6), encoding="utf-8")
    (docs / "02-beta.md").write_text(page("Beta", 6), encoding="utf-8")
    (docs / "03-gamma.md").write_text(page("Gamma", 2), encoding="utf-8")
    return docs


def bump(path: Path) -> None:
    """A modification time the poll cannot mistake for the old one (coarse file-system clocks)."""
    t = time.time_ns() + 50_000_000
    os.utime(path, ns=(t, t))


def tree_paths(app) -> list[str]:
    return list(app.explorer.query_one(DocsTreeView)._leaves)  # noqa: SLF001


def notes(app) -> list[str]:
    return [f"{n.title or ''}: {n.message}" for n in app._notifications]  # noqa: SLF001


async def ready(pilot, app, path: str | None = None) -> None:
    ex = app.explorer
    await wait_for(pilot, lambda: ex.result is not None and ex.result.complete and ex.tree_result is not None
                   and (path is None or ex.result.doc.path == path), what="file and tree")


async def open_and_select(pilot, app, path: str, chunk: int) -> None:
    ex = app.explorer
    tree = ex.query_one(DocsTreeView)
    tree.move_cursor(tree._leaves[path])  # noqa: SLF001
    await ready(pilot, app, path)
    ex.selected = chunk
    await pilot.pause()


async def test_a_new_file_appears_in_the_tree_with_its_count_and_lint(tmp_path):
    docs = make_tree(tmp_path)
    app = make_app(docs)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        ex = app.explorer
        await pilot.press("l")
        (docs / "04-delta.md").write_text(LONG, encoding="utf-8")
        (docs / "sub").mkdir()
        (docs / "sub" / "01-nested.md").write_text(page("Nested"), encoding="utf-8")
        ex.poll_files()
        await wait_for(pilot, lambda: "04-delta.md" in tree_paths(app) and "sub/01-nested.md" in tree_paths(app),
                       what="the new files in the tree")
        # Reading order, as a fresh start would show it.
        assert tree_paths(app) == ["01-alpha.md", "02-beta.md", "03-gamma.md", "04-delta.md", "sub/01-nested.md"]
        await wait_for(pilot, lambda: ex.tree_result is not None and "04-delta.md" in ex.tree_result.entries,
                       what="counts with the new file")
        label = str(ex.query_one(DocsTreeView)._leaves["04-delta.md"].label)  # noqa: SLF001
        assert label.split()[0] == str(len(ex.tree_result.entries["04-delta.md"].chunks))
        pane = ex.query_one(LintPane)
        await wait_for(pilot, lambda: any(f.path == "04-delta.md" for f in pane._all), what="lint of the new file")  # noqa: SLF001
        # The open file and its selection are untouched.
        assert ex.current_path == "01-alpha.md"


async def test_a_deleted_file_leaves_the_tree_the_counts_and_lint(tmp_path):
    docs = make_tree(tmp_path)
    (docs / "04-delta.md").write_text(LONG, encoding="utf-8")
    app = make_app(docs)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        ex = app.explorer
        await pilot.press("l")
        pane = ex.query_one(LintPane)
        await wait_for(pilot, lambda: any(f.path == "04-delta.md" for f in pane._all), what="lint")  # noqa: SLF001
        (docs / "04-delta.md").unlink()
        ex.poll_files()
        await wait_for(pilot, lambda: "04-delta.md" not in tree_paths(app), what="the file gone from the tree")
        assert ex.docs.get("04-delta.md") is None
        await wait_for(pilot, lambda: ex.tree_result is not None and "04-delta.md" not in ex.tree_result.entries,
                       what="counts without it")
        await wait_for(pilot, lambda: not any(f.path == "04-delta.md" for f in pane._all), what="lint without it")  # noqa: SLF001
        assert ex.current_path == "01-alpha.md"


async def test_deleting_the_open_file_says_so_and_moves_to_a_neighbour(tmp_path):
    docs = make_tree(tmp_path)
    app = make_app(docs)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        ex = app.explorer
        await open_and_select(pilot, app, "02-beta.md", 1)
        (docs / "02-beta.md").unlink()
        ex.poll_files()
        await wait_for(pilot, lambda: ex.current_path != "02-beta.md", what="a neighbour opened")
        assert ex.current_path == "03-gamma.md"
        assert any("02-beta.md" in n and "deleted" in n for n in notes(app)), notes(app)
        tree = ex.query_one(DocsTreeView)
        assert tree.cursor_node is not None and tree.cursor_node.data == "03-gamma.md"
        await ready(pilot, app, "03-gamma.md")


async def test_renaming_the_open_file_follows_it_and_keeps_the_chunk(tmp_path):
    docs = make_tree(tmp_path)
    app = make_app(docs)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        ex = app.explorer
        await open_and_select(pilot, app, "02-beta.md", 1)
        (docs / "02-beta.md").rename(docs / "05-beta-renamed.md")
        ex.poll_files()
        await wait_for(pilot, lambda: ex.current_path == "05-beta-renamed.md", what="the open file followed")
        await ready(pilot, app, "05-beta-renamed.md")
        assert len(ex.result.chunks) > 1 and ex.selected == 1
        assert tree_paths(app) == ["01-alpha.md", "03-gamma.md", "05-beta-renamed.md"]
        assert not any("deleted" in n for n in notes(app)), notes(app)
        assert any("05-beta-renamed.md" in n for n in notes(app)), notes(app)


async def test_an_editors_save_by_temp_file_and_rename_is_an_edit(tmp_path):
    """Vim/VS Code-style saves: the new text goes to a temporary file that replaces the original, and for a
    moment the original name may not exist at all. That must read as an edit: same file, same chunk selected."""
    docs = make_tree(tmp_path)
    app = make_app(docs)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        ex = app.explorer
        await open_and_select(pilot, app, "02-beta.md", 1)
        target = docs / "02-beta.md"
        # The moment between "old file moved aside" and "new file renamed into place", caught by a poll.
        target.rename(docs / "02-beta.md~")
        tmp = docs / "02-beta.md.tmp"
        tmp.write_text(page("Beta edited", 6), encoding="utf-8")
        ex.poll_files()
        await pilot.pause(0.05)
        os.replace(tmp, target)
        bump(target)
        (docs / "02-beta.md~").unlink()
        await wait_for(pilot, lambda: ex.result is not None and "Beta edited" in ex.result.doc.text
                       and ex.result.complete, what="the edited text")
        assert ex.current_path == "02-beta.md"
        assert ex.selected == 1
        assert tree_paths(app) == ["01-alpha.md", "02-beta.md", "03-gamma.md"]
        assert not any("deleted" in n or "gone" in n for n in notes(app)), notes(app)


async def test_ignored_hidden_and_skipped_files_never_appear(tmp_path):
    docs = make_tree(tmp_path)
    (docs / "chunkscope.toml").write_text('ignore = ["drafts/**"]\n', encoding="utf-8")
    app = make_app(docs)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        ex = app.explorer
        for rel in ("drafts/wip.md", "node_modules/pkg/readme.md", ".hidden.md", ".cache/x.md"):
            (docs / rel).parent.mkdir(parents=True, exist_ok=True)
            (docs / rel).write_text(page("Nope"), encoding="utf-8")
        (docs / "04-visible.md").write_text(page("Visible"), encoding="utf-8")
        ex.poll_files()
        await wait_for(pilot, lambda: "04-visible.md" in tree_paths(app), what="the visible new file")
        assert tree_paths(app) == ["01-alpha.md", "02-beta.md", "03-gamma.md", "04-visible.md"]
        assert [d.path for d in ex.docs.documents] == tree_paths(app)


async def test_a_single_file_in_a_marked_tree_is_watched_under_its_tree_path(tmp_path):
    # Opened on one file of a marked docs root, the document's path is relative to that root
    # ("part/04-delta.md"); the watcher must know the file by that path, or its first poll calls the open file
    # deleted. An edit is still seen as an edit.
    docs = make_tree(tmp_path)
    (docs / "chunkscope.toml").write_text("", encoding="utf-8")
    (docs / "part").mkdir()
    one = docs / "part" / "04-delta.md"
    one.write_text(page("Delta", 2), encoding="utf-8")
    app = make_app(one)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app, "part/04-delta.md")
        ex = app.explorer
        ex.poll_files()
        await wait_for(pilot, lambda: not ex._scanning, what="the first poll")  # noqa: SLF001
        assert not any("deleted" in n for n in notes(app)), notes(app)
        assert ex.current_path == "part/04-delta.md"
        one.write_text(page("Delta", 3), encoding="utf-8")
        bump(one)
        ex.poll_files()
        await wait_for(pilot, lambda: ex.result is not None and "Paragraph 2 of Delta" in ex.result.doc.text,
                       what="the edit read")
        assert not any("deleted" in n for n in notes(app)), notes(app)
