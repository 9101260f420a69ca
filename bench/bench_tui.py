"""Benchmark the explorer: first paint on a corpus against a bare Textual app, and live re-chunking.

    python bench/bench_tui.py [CORPUS] [--runs N] [--changes N]

1. First paint. Each app runs headless in a fresh process (imports included, nothing cached in memory). The
   clock starts at the first line of the child process and stops inside the first render of content: for
   chunkscope, the first line of the first file's source (drawn with the docs tree in the same frame; its
   chunk boundaries follow once the tokenizer is loaded, and are reported too); for the baseline, a bare
   Textual app with a ``DirectoryTree`` of the same folder, its first line once the folder is listed.
   Target: chunkscope <= 1.5x the baseline (the median of the per-round ratios; each round runs both apps).
2. Live tuning. In one app, the largest file of the corpus is open; a new ``chunk_size`` is typed into the
   parameter editor and applied with Enter, again and again. Measured from the Enter key to the first line of
   the source view drawn with the new chunks, then to the first line drawn with the completed cut (word-piece
   counts, truncation marks, lint). Target: median < 50 ms.

Both clocks stop inside ``SourceView.render_line``, which this script wraps in its own process: the app itself
carries no timing code.

Prints a markdown table. Default corpus: ../shared/corpus/rust-book beside the repository.
"""

from __future__ import annotations

import time

T0 = time.perf_counter()  # the child's clock starts before any import below

import argparse  # noqa: E402
import asyncio  # noqa: E402
import os  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
DEFAULT_CORPUS = REPO.parent / "shared" / "corpus" / "rust-book"
SIZE = (200, 50)


# --- children: one app each, print seconds to first content ---------------------------------------------------


async def _until(pilot, cond, timeout: float = 60.0) -> None:
    """Poll without touching the app (``pilot.pause`` would force screen refreshes of its own)."""
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise TimeoutError("no content")
        await asyncio.sleep(0.005)


def child_chunkscope(corpus: str) -> None:
    from chunkscope.config.reader import load_config, resolve_strategy
    from chunkscope.document.loader import load_docs
    from chunkscope.tui.app import ChunkscopeApp
    from chunkscope.tui.widgets.source_view import SourceView

    # The clock stops inside the first render of a source line that holds text (then: with chunk labels).
    stamps: dict[str, float] = {}
    render_line = SourceView.render_line

    def timed(self, y: int):
        layout = self.layout_data
        if layout is not None:
            stamps.setdefault("text", time.perf_counter() - T0)
            if layout.chunks:
                stamps.setdefault("chunks", time.perf_counter() - T0)
        return render_line(self, y)

    SourceView.render_line = timed
    cfg = load_config(corpus)
    app = ChunkscopeApp(load_docs(corpus, ignore=cfg.ignore), cfg, resolve_strategy(cfg))

    async def run() -> float:
        async with app.run_test(size=SIZE) as pilot:
            ex = app.explorer
            await _until(pilot, lambda: "chunks" in stamps)
            await _until(pilot, lambda: ex.tree_result is not None)
            await pilot.pause(0)
            return time.perf_counter() - T0

    counts = asyncio.run(run())
    print(f"{stamps['text']:.4f} {stamps['chunks']:.4f} {counts:.4f}")


def child_bare(corpus: str) -> None:
    from textual.app import App, ComposeResult
    from textual.widgets import DirectoryTree

    stamps: dict[str, float] = {}
    render_line = DirectoryTree.render_line

    def timed(self, y: int):
        if self.root.children:
            stamps.setdefault("tree", time.perf_counter() - T0)
        return render_line(self, y)

    DirectoryTree.render_line = timed

    class Bare(App):
        def compose(self) -> ComposeResult:
            yield DirectoryTree(corpus)

    app = Bare()

    async def run() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await _until(pilot, lambda: "tree" in stamps)

    asyncio.run(run())
    print(f"{stamps['tree']:.4f} 0 0")


# --- the parent -----------------------------------------------------------------------------------------------


def first_paint(corpus: Path, runs: int) -> dict[str, list[float]]:
    env = {**os.environ, "CHUNKSCOPE_CACHE": os.environ.get("CHUNKSCOPE_CACHE", "/tmp/cs-bench-tui")}
    times: dict[str, list[float]] = {"chunkscope": [], "chunkscope-chunks": [], "chunkscope-counts": [], "bare": []}
    for i in range(runs + 1):  # the first round warms the OS file cache and the tiktoken rank file; dropped
        for kind in ("bare", "chunkscope"):
            out = subprocess.run([sys.executable, __file__, "--child", kind, str(corpus)], capture_output=True,
                                 text=True, env=env, timeout=300)
            if out.returncode != 0:
                raise SystemExit(f"{kind} child failed:\n{out.stderr[-2000:]}")
            first, chunks, counts = map(float, out.stdout.split()[-3:])
            if i == 0:
                continue
            times[kind].append(first)
            if kind == "chunkscope":
                times["chunkscope-chunks"].append(chunks)
                times["chunkscope-counts"].append(counts)
    return times


def live_tuning(corpus: Path, changes: int) -> tuple[str, list[float], int, int, list[float]]:
    from chunkscope.config.reader import load_config, resolve_strategy
    from chunkscope.document.loader import load_docs
    from chunkscope.tui import debounce
    from chunkscope.tui.app import ChunkscopeApp
    from chunkscope.tui.widgets.source_view import SourceView

    # A typed value waits for Enter alone (not for a pause in typing): the clock starts at the key.
    debounce.DEBOUNCE_SECONDS = 600.0
    # The first time each layout of the explorer's source view has a line drawn (the frame that shows it).
    drawn: list[tuple[float, object]] = []
    seen: set[int] = set()
    render_line = SourceView.render_line

    def timed(self, y: int):
        layout = self.layout_data
        if layout is not None and self.id == "source" and id(layout) not in seen:
            seen.add(id(layout))
            drawn.append((time.perf_counter(), layout))  # the layout is kept alive here: its id is never reused
        return render_line(self, y)

    SourceView.render_line = timed
    cfg = load_config(corpus)
    tree = load_docs(corpus, ignore=cfg.ignore)
    largest = max(tree.documents, key=lambda d: len(d.text))
    app = ChunkscopeApp(tree, cfg, resolve_strategy(cfg))
    sizes = [384, 256, 448, 320, 512, 300, 400, 200]
    times: list[float] = []
    complete: list[float] = []
    chunks = 0

    def drawn_after(t0: float, layout: object | None = None) -> float | None:
        """When the first layout drawn after ``t0`` (or ``layout``, once drawn) had its first line drawn."""
        return next((t for t, shown in drawn if t > t0 and (layout is None or shown is layout)), None)

    async def run() -> None:
        nonlocal chunks
        async with app.run_test(size=SIZE) as pilot:
            ex = app.explorer
            view = ex.query_one("#source", SourceView)
            await _until(pilot, lambda: ex.tree_result is not None)
            ex.open_file(largest.path)
            await _until(pilot, lambda: ex.result is not None and ex.result.doc is largest and ex.result.complete)
            await _until(pilot, lambda: ex.tree_result is not None)
            box = ex.query_one("#param-chunk_size")
            for n in range(changes):
                size = sizes[n % len(sizes)]
                if box.value == str(size):
                    size += 1
                box.focus()
                await pilot.pause()
                box.value = ""
                await pilot.press(*str(size))
                await pilot.pause()
                t0 = time.perf_counter()
                await pilot.press("enter")
                await _until(pilot, lambda: drawn_after(t0) is not None)
                times.append(drawn_after(t0) - t0)
                await _until(pilot, lambda: ex.result.complete and ex.result.resolved.params["chunk_size"] == size
                             and view.layout_data is not None and view.layout_data.chunks is ex.result.chunks
                             and drawn_after(t0, view.layout_data) is not None)
                complete.append(drawn_after(t0, view.layout_data) - t0)
                chunks = len(ex.result.chunks)
                # Let the tree worker finish so it does not compete with the next measurement.
                await _until(pilot, lambda: ex.tree_result is not None)

    asyncio.run(run())
    return largest.path, times, len(largest.text), chunks, complete


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("corpus", nargs="?", default=str(DEFAULT_CORPUS))
    ap.add_argument("--runs", type=int, default=9, help="first-paint runs per app (default 9)")
    ap.add_argument("--changes", type=int, default=20, help="parameter changes to time (default 20)")
    ap.add_argument("--child", choices=("chunkscope", "bare"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child == "chunkscope":
        return child_chunkscope(args.corpus)
    if args.child == "bare":
        return child_bare(args.corpus)
    corpus = Path(args.corpus)
    if not corpus.is_dir():
        raise SystemExit(f"{corpus}: corpus folder not found")
    n_files = sum(1 for p in corpus.rglob("*") if p.suffix in (".md", ".mdx"))
    fp = first_paint(corpus, args.runs)
    path, tune, chars, n_chunks, complete = live_tuning(corpus, args.changes)
    bare = statistics.median(fp["bare"])
    ours = statistics.median(fp["chunkscope"])
    counts = statistics.median(fp["chunkscope-counts"])
    chunks = statistics.median(fp["chunkscope-chunks"])
    tune_ms = statistics.median(tune) * 1000
    print(f"\n### chunkscope TUI on {corpus.name} ({n_files} Markdown files), terminal {SIZE[0]}x{SIZE[1]}\n")
    print("| measure | result | target | |")
    print("| --- | --- | --- | --- |")
    print(f"| first paint, bare Textual DirectoryTree (median of {args.runs}) | {bare * 1000:.0f} ms | baseline | |")
    # Each round runs the two apps back to back: the median of the rounds' ratios is steadier than the ratio
    # of the medians when the machine's speed drifts from round to round.
    ratio = statistics.median(o / b for o, b in zip(fp["chunkscope"], fp["bare"]))
    print(f"| first paint, chunkscope: docs tree + first file's text (median of {args.runs}) | {ours * 1000:.0f} ms "
          f"({ours / bare:.2f}x) | | |")
    print(f"| first paint ratio, chunkscope / bare, median of the {args.runs} back-to-back rounds | {ratio:.2f}x "
          f"| <= 1.5x | {'ok' if ratio <= 1.5 else 'MISSED'} |")
    print(f"| chunkscope: first file's chunk boundaries drawn | {chunks * 1000:.0f} ms ({chunks / bare:.2f}x) | | |")
    print(f"| chunkscope: every file's chunk count and the tree's lint shown | {counts * 1000:.0f} ms | | |")
    print(f"| Enter on a new chunk_size to its chunks drawn, {path} ({chars} chars, ~{n_chunks} chunks), "
          f"median of {len(tune)} | {tune_ms:.1f} ms (p90 {sorted(tune)[int(0.9 * (len(tune) - 1))] * 1000:.1f} ms) "
          f"| < 50 ms | {'ok' if tune_ms < 50 else 'MISSED'} |")
    print(f"| ... then embedder counts, truncation marks and lint of that file drawn too (median) | "
          f"{statistics.median(complete) * 1000:.0f} ms | | |")


if __name__ == "__main__":
    main()
