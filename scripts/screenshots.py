"""Make SVG screenshots of the explorer's main views from the real app over sample_docs.

    python scripts/screenshots.py [--docs sample_docs] [--out screenshots] [--no-query]

Writes explorer.svg, files.svg (the files view, worst first), query.svg, compare.svg and lint.svg. The query view asks a real question, so it loads
the embedding model and indexes the docs into a local Qdrant under CHUNKSCOPE_CACHE (default: a temporary
folder); ``--no-query`` shows the query pane before the first question instead.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SIZE = (200, 50)
FILE = "module-1-foundations/02-forward-kinematics.md"
QUESTION = "how do I compute the pose of the foot from the joint angles?"


async def until(pilot, cond, timeout: float = 300.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise TimeoutError("the view did not settle")
        await pilot.pause(0.05)
    await pilot.pause()


async def shoot(docs: Path, out: Path, view: str, ask: bool) -> Path:
    from chunkscope.config.reader import load_config, resolve_strategy
    from chunkscope.document.loader import load_docs
    from chunkscope.tui.app import ChunkscopeApp
    from chunkscope.tui.screens.compare import CompareScreen
    from chunkscope.tui.widgets.docs_tree import DocsTreeView

    cfg = load_config(docs)
    app = ChunkscopeApp(load_docs(docs, ignore=cfg.ignore), cfg, resolve_strategy(cfg))
    async with app.run_test(size=SIZE) as pilot:
        ex = app.explorer
        await until(pilot, lambda: ex.result is not None and ex.result.complete and ex.tree_result is not None)
        path = FILE if ex.docs.get(FILE) else ex.docs.documents[0].path
        tree = ex.query_one(DocsTreeView)
        tree.move_cursor(tree._leaves[path])  # noqa: SLF001
        await until(pilot, lambda: ex.result.doc.path == path and ex.result.complete and ex.tree_result is not None)
        ex.selected = min(2, len(ex.result.chunks) - 1)
        ex.query_one("#source").scroll_to_chunk(ex.selected)
        ex.query_one("#source").focus()
        if view == "lint":
            await pilot.press("l")
            await until(pilot, lambda: ex.query("#findings") and ex.query_one("#findings").option_count > 0)
        elif view == "files":
            from chunkscope.tui.screens.files import FilesScreen

            await pilot.press("F")
            await until(pilot, lambda: isinstance(app.screen, FilesScreen)
                        and app.screen.query_one("#files-table").row_count > 0)
        elif view == "compare":
            ex.action_compare("fixed")
            await until(pilot, lambda: isinstance(app.screen, CompareScreen) and app.screen.diff is not None)
            app.screen.query_one("#side-a").focus()
        elif view == "query":
            await pilot.press("e")
            await until(pilot, lambda: ex.query("#query-input"))
            if ask:
                box = ex.query_one("#query-input")
                box.value = QUESTION
                await pilot.press("enter")
                pane = ex.query_one("#query-pane")
                await until(pilot, lambda: pane._answer is not None)  # noqa: SLF001
                ex.query_one("#hits").focus()
        app.clear_notifications()
        await pilot.pause(0.3)
        target = out / f"{view}.svg"
        app.save_screenshot(str(target))
        return target


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--docs", default=str(REPO / "sample_docs"))
    ap.add_argument("--out", default=str(REPO / "screenshots"))
    ap.add_argument("--no-query", action="store_true", help="do not load the model; show the pane before a question")
    args = ap.parse_args()
    os.environ.setdefault("CHUNKSCOPE_CACHE", tempfile.mkdtemp(prefix="chunkscope-shots-"))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for view in ("explorer", "files", "compare", "lint", "query"):
        print(asyncio.run(shoot(Path(args.docs), out, view, ask=not args.no_query)))


if __name__ == "__main__":
    main()
