"""Benchmark the explorer where a person waits, from outside in tmux, against a bare Textual app in the same run.

    python bench/bench_tui.py [CORPUS] [--runs N] [--probe] [--changes N] [--headless]

1. From outside (the default table). Each app is started in a detached tmux session of this script's own tmux
   server (``new-session -d -x 120 -y 40``), keys are sent with ``send-keys`` and the screen is read back with
   ``capture-pane`` in a tight loop until the expected text shows. The baseline, ``bench/bare_app.py``, is a
   ten-line Textual app showing a ``DirectoryTree`` of the same folder (``l`` shows a one-line pane, Escape hides
   it, ``q`` quits). Rounds alternate the two apps; the first round warms the OS file cache and is dropped; each
   ratio is the median of the per-round ratios (the machine's speed drifts from round to round).

   - first paint: the command starts -> the first file's first line shows (bare: a file name of the folder);
   - first file chunked: -> the source's title counts that file's chunks (target against the bare first paint);
     from its stored cut (``chunk-cuts``) on a start after the first, and, with nothing stored, cut afresh;
   - tree totals: -> the tree line of the histogram counts every file's chunks (likewise), stored and not;
   - Escape: ``l`` opens the lint pane, Escape -> the pane is gone (bare: its own pane);
   - quit: ``q`` once the app is idle -> the shell after the app prints a marker; and ``q`` right after the first
     paint, while the tree is still counted (background work running);
   - ``--probe``: the in-app probe (``v`` -> "done in") against ``chunkscope probe`` on the same tree, each with
     its own copy of a cache that holds the exported model but no vectors (cold), then again (warm); and ``q``
     after the probe.
2. Live tuning (in process). In one app, the largest file of the corpus is open; a new ``chunk_size`` is typed
   into the parameter editor and applied with Enter, again and again. Measured from the Enter key to the first
   line of the source view drawn with the new chunks, then to the first line drawn with the completed cut.
   Target: median < 50 ms.
3. ``--headless``: first paint headless in a fresh process, the clock inside ``SourceView.render_line`` (no
   terminal in between: what the app itself costs).

Prints markdown tables. Default corpus: ../shared/corpus/rust-book beside the repository.
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


# --- from outside: the real apps in tmux -----------------------------------------------------------------------

TERM_SIZE = (120, 40)
EXIT_MARK = "__bench_app_exited__"
BARE_APP = REPO / "bench" / "bare_app.py"


class Tmux:
    """Apps in detached sessions of a tmux server of this script's own (its socket), read with capture-pane."""

    def __init__(self) -> None:
        self.socket = f"chunkscope-bench-{os.getpid()}"
        # A session that outlives the apps: the server (started once) stays up between them.
        self._tmux("new-session", "-d", "-s", "keep", "sleep 86400")
        self._tmux("set-option", "-g", "escape-time", "0")
        self.name = ""
        self._n = 0

    def _tmux(self, *args: str) -> str:
        return subprocess.run(["tmux", "-L", self.socket, *args], capture_output=True, text=True).stdout

    def start(self, argv: list[str], env: dict[str, str]) -> float:
        """Start ``argv`` in a new 120x40 session; returns the clock's start (just before tmux is asked)."""
        import shlex

        self._n += 1
        self.name = f"app{self._n}"
        assigns = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
        line = f"env {assigns} {shlex.join(argv)}; echo {EXIT_MARK}; sleep 86400"
        t0 = time.perf_counter()
        self._tmux("new-session", "-d", "-s", self.name, "-x", str(TERM_SIZE[0]), "-y", str(TERM_SIZE[1]), line)
        return t0

    def screen(self) -> str:
        return self._tmux("capture-pane", "-p", "-t", self.name)

    def wait(self, cond, timeout: float = 120.0) -> float:
        """The clock when a capture first satisfies ``cond`` (taken after that capture returned)."""
        deadline = time.perf_counter() + timeout
        while True:
            text = self.screen()
            now = time.perf_counter()
            if cond(text):
                return now
            if now > deadline:
                raise SystemExit(f"timed out waiting in tmux; the screen was:\n{text}")

    def keys(self, *keys: str) -> float:
        t = time.perf_counter()
        self._tmux("send-keys", "-t", self.name, *keys)
        return t

    def close(self) -> None:
        self._tmux("kill-session", "-t", self.name)

    def shutdown(self) -> None:
        self._tmux("kill-server")


def _has(text: str):
    return lambda screen: text in screen


def _lacks(text: str):
    return lambda screen: text not in screen


def outside(corpus: Path, runs: int, env: dict[str, str]) -> dict[str, list[float]]:
    """The apps driven in tmux, rounds alternating; seconds per measure (the warm-up round dropped)."""
    import re
    import shutil

    from chunkscope.config.reader import load_config
    from chunkscope.document.loader import load_docs

    docs = load_docs(corpus, ignore=load_config(corpus).ignore).documents
    first = docs[0]
    # The first line of the first file, short enough never to be wrapped; and a name the bare tree lists.
    line = next(ln for ln in first.text.splitlines() if ln.strip()).strip()[:24]
    listed = min((p.name for p in corpus.iterdir() if p.is_file() and not p.name.startswith(".")), key=str.lower)
    chunked = re.compile(re.escape(first.path) + r" · \d+ chunks?")
    totals = re.compile(r"^\s*tree\b.*\d+ chunks?", re.M)
    py = sys.executable
    ours = [str(Path(py).parent / "chunkscope"), str(corpus)]
    bare = [py, str(BARE_APP), str(corpus)]
    t: dict[str, list[float]] = {"load": [os.getloadavg()[0]]}

    def add(key: str, seconds: float, i: int) -> None:
        if i > 0:
            t.setdefault(key, []).append(seconds)

    tm = Tmux()
    try:
        for i in range(runs + 1):
            # The bare app.
            t0 = tm.start(bare, env)
            add("bare paint", tm.wait(_has(listed)) - t0, i)
            tm.keys("l")
            tm.wait(_has("BARE PANE OPEN"))
            k = tm.keys("Escape")
            add("bare escape", tm.wait(_lacks("BARE PANE OPEN")) - k, i)
            k = tm.keys("q")
            add("bare quit", tm.wait(_has(EXIT_MARK)) - k, i)
            tm.close()
            # chunkscope, left to finish its start-up.
            t0 = tm.start(ours, env)
            add("paint", tm.wait(_has(line)) - t0, i)
            add("chunked", tm.wait(lambda s: chunked.search(s) is not None) - t0, i)
            add("totals", tm.wait(lambda s: totals.search(s) is not None) - t0, i)
            time.sleep(1.0)  # the tree's lint and the file's word-piece counts finish
            tm.keys("l")
            tm.wait(_has("Next rule"))
            time.sleep(0.3)
            k = tm.keys("Escape")
            add("escape", tm.wait(_lacks("Next rule")) - k, i)
            time.sleep(0.3)
            k = tm.keys("q")
            add("quit", tm.wait(_has(EXIT_MARK)) - k, i)
            tm.close()
            # chunkscope quit at once: q as soon as the first file's text shows (the cut and the tree count run).
            t0 = tm.start(ours, env)
            tm.wait(_has(line))
            k = tm.keys("q")
            add("quit busy", tm.wait(_has(EXIT_MARK)) - k, i)
            tm.close()
            # chunkscope with nothing stored (a first start, or a tree that changed): the first file is cut (the
            # tokenizer loads) and the tree is cut to count; its counts and cuts are stored for the next round's start.
            for stored in ("chunk-stats", "chunk-cuts"):
                shutil.rmtree(Path(env["CHUNKSCOPE_CACHE"]) / stored, ignore_errors=True)
            t0 = tm.start(ours, env)
            add("chunked cold", tm.wait(lambda s: chunked.search(s) is not None) - t0, i)
            add("totals cold", tm.wait(lambda s: totals.search(s) is not None) - t0, i)
            time.sleep(1.0)  # the counts are stored
            tm.keys("q")
            tm.wait(_has(EXIT_MARK))
            tm.close()
    finally:
        tm.shutdown()
    return t


def probe_outside(corpus: Path, env: dict[str, str]) -> dict[str, float]:
    """``chunkscope probe`` against the app's probe (``v``), cold then warm, each with a cache of its own."""
    import shutil
    import tempfile

    from chunkscope.config.reader import load_config
    from chunkscope.document.loader import load_docs

    first = load_docs(corpus, ignore=load_config(corpus).ignore).documents[0]
    line = next(ln for ln in first.text.splitlines() if ln.strip()).strip()[:24]
    exe = str(Path(sys.executable).parent / "chunkscope")
    work_dir = Path(tempfile.mkdtemp(prefix="cs-bench-probe-"))
    # A cache holding the exported model (a probe of one small file), no vectors of this corpus.
    base, tiny = work_dir / "base", work_dir / "tiny"
    tiny.mkdir()
    (tiny / "a.md").write_text("# A\n\n## Setting up\n\nInstall the tool and run it.\n", encoding="utf-8")
    subprocess.run([exe, "probe", str(tiny)], env={**os.environ, **env, "CHUNKSCOPE_CACHE": str(base)},
                   capture_output=True, check=True)
    caches = {kind: work_dir / kind for kind in ("cli", "app")}
    for c in caches.values():
        shutil.copytree(base, c)
    out: dict[str, float] = {}
    tm = Tmux()
    try:
        for temp in ("cold", "warm"):
            t0 = tm.start([exe, "probe", str(corpus)], {**env, "CHUNKSCOPE_CACHE": str(caches["cli"])})
            out[f"cli {temp}"] = tm.wait(_has(EXIT_MARK), timeout=1800) - t0
            tm.close()
            tm.start([exe, str(corpus)], {**env, "CHUNKSCOPE_CACHE": str(caches["app"])})
            tm.wait(_has(line))
            time.sleep(3.0)  # the start-up's own work done
            k = tm.keys("v")
            out[f"app {temp}"] = tm.wait(_has("done in"), timeout=1800) - k
            time.sleep(0.3)
            k = tm.keys("q")
            out[f"quit after probe {temp}"] = tm.wait(_has(EXIT_MARK)) - k
            tm.close()
    finally:
        tm.shutdown()
        shutil.rmtree(work_dir, ignore_errors=True)
    return out


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


def _row(name: str, ours: list[float], bare: list[float] | None, target: str, limit: float | None,
         absolute: float | None = None) -> str:
    """One table row: our median, the bare app's, the median of the per-round ratios, the target, met or not."""
    med = statistics.median(ours)
    cells = f"| {name} | {med * 1000:.0f} ms (n={len(ours)}, max {max(ours) * 1000:.0f}) |"
    met = True
    if bare is not None:
        ratio = statistics.median(o / b for o, b in zip(ours, bare))
        cells += f" {statistics.median(bare) * 1000:.0f} ms | {ratio:.2f}x |"
        if limit is not None:
            met = ratio <= limit
    else:
        cells += " | |"
    if absolute is not None:
        met = met and med <= absolute
    return cells + f" {target} | {'yes' if met else 'NO'} |"


def print_outside(corpus: Path, n_files: int, t: dict[str, list[float]], probe: dict[str, float] | None,
                  probed: Path) -> None:
    print(f"\n### From outside in tmux: chunkscope on {corpus.name} ({n_files} Markdown files), terminal "
          f"{TERM_SIZE[0]}x{TERM_SIZE[1]}, against bench/bare_app.py in the same rounds\n")
    print(f"load (1-minute average) before: {t['load'][0]:.2f}, after: {os.getloadavg()[0]:.2f}\n")
    print("| measure | chunkscope (median) | bare app (median) | ratio (median of rounds) | target | met |")
    print("| --- | --- | --- | --- | --- | --- |")
    if "paint" not in t:
        t = {**t, **{k: [] for k in ("paint", "bare paint")}}
    for row in _round_rows(t) if t["paint"] else []:
        print(row)
    if probe:
        n_probed = sum(1 for p in probed.rglob("*") if p.suffix in (".md", ".mdx"))
        for temp in ("cold", "warm"):
            app, cli = probe[f"app {temp}"], probe[f"cli {temp}"]
            print(f"| in-app probe on {probed.name} ({n_probed} files), {temp} vectors (v -> done) against "
                  f"`chunkscope probe` (start -> exit) | {app:.1f} s | CLI {cli:.1f} s | {app / cli:.2f}x | <= 1.5x | "
                  f"{'yes' if app / cli <= 1.5 else 'NO'} |")
            q = probe[f"quit after probe {temp}"]
            print(f"| q after that probe -> the shell | {q * 1000:.0f} ms | | | <= 0.2 s | {'yes' if q <= 0.2 else 'NO'} |")


def _round_rows(t: dict[str, list[float]]) -> list[str]:
    return [
        _row("first paint (start -> first file's text)", t["paint"], t["bare paint"], "<= 1.5x", 1.5),
        _row("first file chunked (start -> its chunk count)", t["chunked"], t["bare paint"], "<= 2x", 2.0),
        _row("first file chunked, nothing stored (first start: the file is cut)", t["chunked cold"], t["bare paint"],
             "(<= 2x)", 2.0),
        _row("whole-tree totals (start -> the tree's chunk count), stored totals", t["totals"], t["bare paint"],
           "<= 3x", 3.0),
        _row("whole-tree totals, nothing stored (first start: the tree is cut)", t["totals cold"], t["bare paint"],
           "(<= 3x)", 3.0),
        _row("Escape closes the lint pane", t["escape"], t["bare escape"], "<= 0.2 s", None, 0.2),
        _row("q, idle -> the shell", t["quit"], t["bare quit"], "<= 0.2 s", None, 0.2),
        _row("q at the first paint (cut and tree count running) -> the shell", t["quit busy"], t["bare quit"],
           "<= 0.2 s", None, 0.2),
    ]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("corpus", nargs="?", default=str(DEFAULT_CORPUS))
    ap.add_argument("--runs", type=int, default=7, help="rounds of each app (default 7)")
    ap.add_argument("--probe", action="store_true", help="also time the in-app probe against the CLI's (minutes)")
    ap.add_argument("--probe-on", metavar="DIR", help="probe this tree instead of CORPUS (a part of it: the probe "
                    "embeds every chunk, tens of minutes for the whole book on a busy machine)")
    ap.add_argument("--changes", type=int, default=20, help="parameter changes to time (default 20; 0 skips)")
    ap.add_argument("--headless", action="store_true", help="also time first paint headless, in process")
    ap.add_argument("--child", choices=("chunkscope", "bare"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child == "chunkscope":
        return child_chunkscope(args.corpus)
    if args.child == "bare":
        return child_bare(args.corpus)
    corpus = Path(args.corpus).resolve()
    if not corpus.is_dir():
        raise SystemExit(f"{corpus}: corpus folder not found")
    n_files = sum(1 for p in corpus.rglob("*") if p.suffix in (".md", ".mdx"))
    env = {"CHUNKSCOPE_CACHE": os.environ.get("CHUNKSCOPE_CACHE", "/tmp/cs-bench-tui"), "HF_HUB_OFFLINE": "1",
           "TERM": "xterm-256color"}
    probed = Path(args.probe_on).resolve() if args.probe_on else corpus
    rounds = outside(corpus, args.runs, env) if args.runs else {"load": [os.getloadavg()[0]]}
    print_outside(corpus, n_files, rounds, probe_outside(probed, env) if args.probe or args.probe_on else None, probed)
    if args.headless:
        print_headless(corpus, args.runs)
    if args.changes:
        print_tuning(corpus, args.changes)


def print_headless(corpus: Path, runs: int) -> None:
    fp = first_paint(corpus, runs)
    bare = statistics.median(fp["bare"])
    ours = statistics.median(fp["chunkscope"])
    counts = statistics.median(fp["chunkscope-counts"])
    chunks = statistics.median(fp["chunkscope-chunks"])
    ratio = statistics.median(o / b for o, b in zip(fp["chunkscope"], fp["bare"]))
    print(f"\n### Headless, in a fresh process (clock inside render_line), {corpus.name}, {SIZE[0]}x{SIZE[1]}\n")
    print("| measure | result | target | |")
    print("| --- | --- | --- | --- |")
    print(f"| first paint, bare Textual DirectoryTree (median of {runs}) | {bare * 1000:.0f} ms | baseline | |")
    print(f"| first paint, chunkscope: first file's text (median of {runs}) | {ours * 1000:.0f} ms | | |")
    print(f"| first paint ratio, median of the {runs} back-to-back rounds | {ratio:.2f}x "
          f"| <= 1.5x | {'ok' if ratio <= 1.5 else 'MISSED'} |")
    print(f"| chunkscope: first file's chunk boundaries drawn | {chunks * 1000:.0f} ms ({chunks / bare:.2f}x) | | |")
    print(f"| chunkscope: every file's chunk count and the tree's lint shown | {counts * 1000:.0f} ms | | |")


def print_tuning(corpus: Path, changes: int) -> None:
    path, tune, chars, n_chunks, complete = live_tuning(corpus, changes)
    tune_ms = statistics.median(tune) * 1000
    print(f"\n### Live tuning, in process, {corpus.name}\n")
    print("| measure | result | target | |")
    print("| --- | --- | --- | --- |")
    print(f"| Enter on a new chunk_size to its chunks drawn, {path} ({chars} chars, ~{n_chunks} chunks), "
          f"median of {len(tune)} | {tune_ms:.1f} ms (p90 {sorted(tune)[int(0.9 * (len(tune) - 1))] * 1000:.1f} ms) "
          f"| < 50 ms | {'ok' if tune_ms < 50 else 'MISSED'} |")
    print(f"| ... then embedder counts, truncation marks and lint of that file drawn too (median) | "
          f"{statistics.median(complete) * 1000:.0f} ms | | |")


if __name__ == "__main__":
    main()
