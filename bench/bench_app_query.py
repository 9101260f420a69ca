"""The app's questions on a large indexed tree: the first answer after Enter, then answers as you type (Pilot).

    python bench/bench_app_query.py [--copies 28] [--tree DIR] [--cache DIR] [--runs 3] [--search dense,hybrid]
                                    [--busy] [--cps N] [--before] [--out FILE]

The tree is the Rust book copied under N folder names (``copy-00/`` …, as ``bench_query.py`` builds it) in a
temporary folder, or ``--tree`` (built there when missing, kept afterwards: its index can be reused). ``--cache``
(default ``CHUNKSCOPE_CACHE``) should hold the book's vectors; the tree is indexed once with ``chunkscope index``
(cheap when it already is). Then each run is one fresh process with the real app (``app.run_test``) on that tree,
its clock read inside the process:

* the app is started as ``chunkscope DOCS`` starts it and left until the tree's counts are in (idle; with
  ``--busy`` the question is asked right after the first file is drawn, while the tree is still being counted);
* ``/`` opens the query pane and the question is typed; the clock starts at Enter and stops when the answer is
  shown (`QueryPane._show_answer`): "first answer" (the store opened, the model loaded, the manifest checked —
  nothing re-chunked — and the question asked);
* the pane starts opening the index when it opens (`SearchSession.warm`), so how long the question takes to type
  matters: ``--cps`` sets the pace (default 8 characters a second; 0 as fast as Pilot can; -1 pasted at once,
  Enter right after the pane opens: the first answer then pays for opening the store and loading the model);
* then words are added one key at a time, each followed by a pause longer than the debounce: each answer is timed
  from the moment the pause fires the search (`QueryPane._typed_pause`) to the answer shown ("as you type"; the
  debounce, `tui.debounce.DEBOUNCE_SECONDS`, comes before that by design), with the process's CPU time over the
  same span and the search worker's own time (`Answer.seconds`: embedding the question, the exact search, the
  hits' payloads).

``--before`` runs the first question's path as it was before the index was opened ahead (no warm-up as the pane
opens, every document hashed on Enter, the model loaded after the store), for a before/after table in one session.

Each run also reports its CPU time (user + system, the process's own) over the measured span: the fairer figure
on a loaded machine. Prints Markdown tables with the load average.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import _setup
from _setup import emit, load, table

DEFAULT_CORPUS = _setup.REPO.parent / "shared" / "corpus" / "rust-book"
QUESTION = "how do I borrow a value"
#: Typed after the first answer, one key at a time; a search fires after each word (the pause after its last key).
MORE_WORDS = [" without", " taking", " ownership", " of", " it"]
SIZE = (160, 50)


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


# --- the child: one app, one question, then more words ----------------------------------------------------------


def child(tree: str, mode: str, busy: bool, cps: float, before: bool = False) -> None:
    """Print one JSON line of the figures of one app run."""
    from textual.widgets import Input

    from chunkscope.config.reader import load_config, resolve_strategy
    from chunkscope.document.loader import load_docs
    from chunkscope.tui.app import ChunkscopeApp
    from chunkscope.tui.debounce import DEBOUNCE_SECONDS
    from chunkscope.tui.headless.search import SearchSession
    from chunkscope.tui.widgets.query_pane import QueryPane

    shown: list[tuple[float, float, float]] = []  # (perf_counter, answer.seconds, CPU) of every answer shown
    fired: list[tuple[float, float]] = []  # (perf_counter, CPU) when a typing pause started a search
    show, pause = QueryPane._show_answer, QueryPane._typed_pause  # noqa: SLF001

    def timed_show(self, a):  # type: ignore[no-untyped-def]
        shown.append((time.perf_counter(), a.seconds, _cpu()))
        return show(self, a)

    def timed_pause(self):  # type: ignore[no-untyped-def]
        fired.append((time.perf_counter(), _cpu()))
        return pause(self)

    warmed: list[tuple[float, bool]] = []  # when the pane's warm-up (`SearchSession.warm`) ended, and its answer
    warm = SearchSession.warm

    def timed_warm(self, *args, **kw):  # type: ignore[no-untyped-def]
        ok = warm(self, *args, **kw)
        warmed.append((time.perf_counter(), ok))
        return ok

    QueryPane._show_answer = timed_show  # noqa: SLF001
    QueryPane._typed_pause = timed_pause  # noqa: SLF001
    SearchSession.warm = timed_warm  # type: ignore[method-assign]
    if before:  # the first question's path as it was: no warm-up, every document hashed, the model after the store
        from chunkscope.retrieval.retriever import Retriever

        QueryPane._warm = lambda self, resolved: None  # noqa: SLF001
        Retriever.in_step = lambda self: None  # type: ignore[method-assign]
        SearchSession._load_model_meanwhile = lambda self: None  # noqa: SLF001
    cfg = load_config(tree).with_command_line(query__search=mode)
    t_load = time.perf_counter()
    docs = load_docs(tree, ignore=cfg.ignore)
    load_s = time.perf_counter() - t_load
    app = ChunkscopeApp(docs, cfg, resolve_strategy(cfg))
    out: dict[str, object] = {"mode": mode, "docs": len(docs.documents), "load_docs_s": load_s}

    async def until(cond, timeout: float = 600.0) -> None:  # type: ignore[no-untyped-def]
        deadline = time.monotonic() + timeout
        while not cond():
            if time.monotonic() > deadline:
                raise TimeoutError("timed out")
            await asyncio.sleep(0.005)

    async def run() -> None:
        async with app.run_test(size=SIZE) as pilot:
            ex = app.explorer
            t = time.perf_counter()
            await until(lambda: ex.result is not None)
            if not busy:
                await until(lambda: ex.tree_result is not None and not any(w.is_running for w in app.workers))
            out["idle_after_s"] = time.perf_counter() - t
            cpu_slash, t_slash = _cpu(), time.perf_counter()
            await pilot.press("slash")
            await until(lambda: bool(ex.query("#query-input")) and ex.query_one("#query-input", Input).has_focus)
            out["pane_open_s"] = time.perf_counter() - t_slash
            pane = ex.query_one("#query-pane", QueryPane)
            if cps < 0:  # pasted at once: Enter follows the pane's opening (its warm-up has only just begun)
                ex.query_one("#query-input", Input).insert_text_at_cursor(QUESTION)
                await pilot.pause(0)
            for ch in QUESTION if cps >= 0 else "":  # at a typist's pace (cps a second), or as fast as Pilot can
                t_ch = time.perf_counter()
                await pilot.press("space" if ch == " " else ch)
                if cps > 0:
                    await asyncio.sleep(max(0.0, 1 / cps - (time.perf_counter() - t_ch)))
            cpu0, t0 = _cpu(), time.perf_counter()
            out["typing_s"] = t0 - t_slash
            before = len(shown)  # answers to the words typed so far, once the warm-up made the tree answer as you type
            await pilot.press("enter")
            await until(lambda: len(shown) > before)
            out["answers_while_typing"] = before
            out["first_answer_s"] = shown[before][0] - t0
            out["first_answer_cpu_s"] = _cpu() - cpu0
            out["slash_to_answer_cpu_s"] = _cpu() - cpu_slash
            out["first_search_s"] = shown[before][1]
            out["warm_done_before_enter_s"] = round(t0 - warmed[0][0], 3) if warmed else None
            out["warm_ok"] = warmed[0][1] if warmed else None
            out["hits"] = len(pane._answer.hits) if pane._answer is not None else 0  # noqa: SLF001
            typed: list[dict[str, float]] = []
            for words in MORE_WORDS:
                n, k = len(shown), len(fired)
                for ch in words:
                    await pilot.press("space" if ch == " " else ch)
                t_key = time.perf_counter()
                await until(lambda: len(shown) > n and len(fired) > k, timeout=60)
                at, seconds, cpu_at = shown[-1]
                typed.append({"from_pause_s": at - fired[-1][0], "from_key_s": at - t_key, "search_s": seconds,
                              "cpu_s": cpu_at - fired[-1][1]})
                await pilot.pause(DEBOUNCE_SECONDS)
            out["typed"] = typed

    asyncio.run(run())
    print(json.dumps(out), flush=True)


# --- the parent: build and index the tree, run the children, the tables -------------------------------------------


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--copies", type=int, default=28, help="copies of the book (28 ≈ 20,000 chunks)")
    ap.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    ap.add_argument("--tree", type=Path, default=None, help="build (or reuse) the tree here and keep it")
    ap.add_argument("--cache", type=Path, default=None, help="chunkscope's cache (holding the book's vectors)")
    ap.add_argument("--runs", type=int, default=3, help="fresh app processes per search mode")
    ap.add_argument("--search", default="dense,hybrid", help="search modes, comma-separated")
    ap.add_argument("--busy", action="store_true", help="ask while the tree is still being counted")
    ap.add_argument("--out", type=Path, default=None, help="also write the report here")
    ap.add_argument("--cps", type=float, default=8.0,
                    help="typing pace of the question, characters a second (0: as fast as Pilot can; -1: pasted, "
                         "Enter at once)")
    ap.add_argument("--before", action="store_true",
                    help="for comparison, the first question's path before the index was opened ahead (no warm-up "
                         "as the pane opens, every document hashed on Enter, the model loaded after the store)")
    ap.add_argument("--child", nargs="+", metavar="ARG", help=argparse.SUPPRESS)  # TREE MODE BUSY CPS [BEFORE]
    a = ap.parse_args()
    if a.child:
        child(a.child[0], a.child[1], a.child[2] == "1", float(a.child[3]), a.child[4:5] == ["1"])
        return
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "PYTHONPATH": str(_setup.REPO / "src")}
    if a.cache is not None:
        env["CHUNKSCOPE_CACHE"] = str(a.cache)
    from bench_query import build_tree

    with tempfile.TemporaryDirectory(prefix="chunkscope-bench-app-") as tmp:
        tree = a.tree if a.tree is not None else Path(tmp) / f"tree-{a.copies}"
        if not tree.is_dir():
            tree = build_tree(a.corpus, tree.parent, a.copies)
            if a.tree is not None and tree != a.tree:
                tree.rename(a.tree)
                tree = a.tree
        emit(f"# bench_app_query: {tree} ({a.copies} copies), load {load()}, {os.cpu_count()} CPUs, "
             f"cache {env.get('CHUNKSCOPE_CACHE', 'default')}")
        t = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "chunkscope", "index", str(tree)], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if proc.returncode != 0:
            raise SystemExit(f"chunkscope index failed ({proc.returncode}): {proc.stderr.strip()[-400:]}")
        emit(f"`chunkscope index` first: {time.perf_counter() - t:.1f} s wall ({proc.stdout.strip().splitlines()[-1:]})")
        runs: dict[str, list[dict]] = {}
        for i in range(a.runs):
            for mode in a.search.split(","):
                proc = subprocess.run([sys.executable, __file__, "--child", str(tree), mode, "1" if a.busy else "0",
                                       str(a.cps), "1" if a.before else "0"],
                                      env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                if proc.returncode != 0:
                    raise SystemExit(f"app run failed ({proc.returncode}): {proc.stderr.strip()[-1500:]}")
                r = json.loads(proc.stdout.strip().splitlines()[-1])
                runs.setdefault(mode, []).append(r)
                emit(f"<!-- run {i + 1} {mode}, load {load()}: {json.dumps(r)} -->")
    rows = []
    for mode, rs in runs.items():
        first = [r["first_answer_s"] for r in rs]
        first_cpu = [r["first_answer_cpu_s"] for r in rs]
        typed = [t for r in rs for t in r["typed"]]
        pause = sorted(t["from_pause_s"] for t in typed)
        p95 = pause[min(len(pause) - 1, round(0.95 * (len(pause) - 1)))]
        warm = [r["warm_done_before_enter_s"] for r in rs if r.get("warm_done_before_enter_s") is not None]
        rows.append([mode, rs[0]["docs"], f"{statistics.median(r['typing_s'] for r in rs):.1f}",
                     f"{statistics.median(warm):+.1f}" if warm else "-",
                     f"{statistics.median(first):.2f} (max {max(first):.2f})",
                     f"{statistics.median(first_cpu):.2f} / {statistics.median(r['slash_to_answer_cpu_s'] for r in rs):.2f}",
                     f"{statistics.median(pause) * 1000:.0f} / {p95 * 1000:.0f} (max {pause[-1] * 1000:.0f})",
                     f"{statistics.median(t['search_s'] for t in typed) * 1000:.0f}",
                     f"{statistics.median(t['cpu_s'] for t in typed) * 1000:.0f}"])
    emit("")
    pace = (f"typed at {a.cps:g} characters a second" if a.cps > 0 else "typed as fast as Pilot can" if a.cps == 0
            else "pasted, Enter at once")
    emit(f"{a.runs} fresh app runs per mode ({'asked while the tree is counted' if a.busy else 'app idle'}; "
         f"question {pace}{'; the path before the warm-up, for comparison' if a.before else ''}); load {load()}")
    emit(table(["search", "files", "`/` → Enter s", "warm-up done before Enter s", "first answer after Enter, s (median)",
                "CPU s: Enter → answer / `/` → answer",
                "as you type: pause → answer, ms median / p95", "search worker ms", "CPU ms, pause → answer"], rows))
    if a.out is not None:
        _setup.write_report(a.out)


if __name__ == "__main__":
    main()
