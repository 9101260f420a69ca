"""Where a person waits on the app: a second start shows the tree's stored totals, and quitting never waits for
background work (the probe's store, the tree's count). Speed itself is measured by bench/bench_tui.py."""

from __future__ import annotations

import shutil
import threading
from pathlib import Path

import pytest

pytest.importorskip("textual")

from textual.message import Message  # noqa: E402
from textual.worker import WorkerState  # noqa: E402

from chunkscope.tui.headless.search import SearchSession  # noqa: E402

from chunkscope.tui.screens.explorer import ExplorerScreen  # noqa: E402
from tests.pilot import make_app, wait_for  # noqa: E402

pytestmark = pytest.mark.anyio

SAMPLE = Path(__file__).resolve().parents[1] / "sample_docs"
CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus" / "rust-book"
SIZE = (160, 50)


async def test_a_second_start_shows_the_stored_totals_of_an_unchanged_tree(tmp_path: Path) -> None:
    root = tmp_path / "docs"
    shutil.copytree(SAMPLE, root)
    app = make_app(root)
    async with app.run_test(size=SIZE) as pilot:
        ex = app.explorer
        await wait_for(pilot, lambda: ex.tree_result is not None, what="the tree's count")
        fresh = ex.tree_result.token_counts()
        per_file = {p: len(e.chunks) for p, e in ex.tree_result.entries.items()}

    stored: list[ExplorerScreen.TreeCounted] = []

    def hook(message: Message) -> None:
        if isinstance(message, ExplorerScreen.TreeCounted):
            stored.append(message)

    app = make_app(root)
    async with app.run_test(size=SIZE, message_hook=hook) as pilot:
        ex = app.explorer
        await wait_for(pilot, lambda: bool(stored), what="the stored totals")
        counts = stored[0].counts
        assert [t for s in counts.values() for t in s.tokens] == fresh
        assert {p: len(s.tokens) for p, s in counts.items()} == per_file
        await wait_for(pilot, lambda: ex.tree_result is not None, what="the tree's own count")
        assert ex.tree_result.token_counts() == fresh

    # An edited file: its stored counts are stale, so the totals wait for the tree's own count.
    first = sorted(per_file)[0]
    with open(root / first, "a", encoding="utf-8") as f:
        f.write("\n\n## Added later\n\n" + "Another sentence to count. " * 60)
    stored.clear()
    app = make_app(root)
    async with app.run_test(size=SIZE, message_hook=hook) as pilot:
        ex = app.explorer
        await wait_for(pilot, lambda: ex.tree_result is not None, what="the tree's count after the edit")
        assert not stored
        assert len(ex.tree_result.entries[first].chunks) > per_file[first]


async def test_quit_does_not_wait_for_a_probe_holding_the_store() -> None:
    """A probe (or an index build) holds the query session's lock until its batch ends; q leaves at once, and the
    session is left to that worker, which the app cancelled."""
    app = make_app(SAMPLE)
    holding, app_gone = threading.Event(), threading.Event()
    gone_while_held: list[bool] = []

    def probe_batch(search: SearchSession) -> None:
        with search.lock:
            holding.set()
            # The batch ends once the app is gone; without the fix the app waits for the batch, which then ends
            # at the timeout instead.
            gone_while_held.append(app_gone.wait(timeout=30))

    async with app.run_test(size=SIZE) as pilot:
        ex = app.explorer
        await wait_for(pilot, lambda: ex.result is not None and ex.result.complete, what="the first file")
        batch = threading.Thread(target=probe_batch, args=(ex.search,))
        batch.start()
        await wait_for(pilot, holding.is_set, what="the batch to hold the store")
        await pilot.press("q")
    app_gone.set()
    batch.join()
    assert gone_while_held == [True]


@pytest.mark.corpus
async def test_quit_while_the_tree_is_counted_cancels_the_count(monkeypatch: pytest.MonkeyPatch) -> None:
    if not CORPUS.is_dir():
        pytest.skip(f"needs the Rust book at {CORPUS}")
    import time

    import chunkscope.tui.screens.explorer as explorer

    # The count is held at its start until it is cancelled, so the quit always meets it running (a quiet machine
    # counts the book in about a second, sometimes before the key arrives).
    real = explorer.chunk_tree

    def held(docs, resolved, config, cancelled, **kw):  # type: ignore[no-untyped-def]
        while not cancelled():
            time.sleep(0.01)
        return real(docs, resolved, config, cancelled, **kw)

    monkeypatch.setattr(explorer, "chunk_tree", held)
    app = make_app(CORPUS)
    async with app.run_test(size=SIZE) as pilot:
        ex = app.explorer
        running: list = []

        def counting() -> bool:  # the worker itself, held: the manager forgets it once it ends
            running[:] = [w for w in ex.workers if w.group == "tree" and w.is_running]
            return bool(running)

        await wait_for(pilot, counting, timeout=60, what="the tree's count to start")
        tree = running[0]
        await pilot.press("q")
    assert not app.is_running
    assert tree.is_cancelled
    assert tree.state == WorkerState.CANCELLED
    assert ex.tree_result is None  # the count stopped half-way: nothing was shown or stored after the quit


#: The child: `run_app` (what `chunkscope DOCS` runs) on a terminal of its own. It notes in a log file when the
#: explorer is mounted, when the query session is closed, when the explorer is unmounted and when the driver
#: waits for its input thread to end; sys.argv[3] == "fail": the lint key raises, the app ends on that error.
QUIT_CHILD = """
import sys
from pathlib import Path
from chunkscope.config.reader import load_config, resolve_strategy
from chunkscope.document.loader import load_docs
from chunkscope.tui.app import run_app
from chunkscope.tui.screens.explorer import ExplorerScreen

log = Path(sys.argv[2])
note = lambda line: log.open("a").write(line + "\\n")
mount, close, unmount = ExplorerScreen.on_mount, ExplorerScreen.close_session, ExplorerScreen.on_unmount
def mounted(self):
    note("mounted")
    mount(self)
def closed(self):
    note("closed")
    close(self)
def unmounted(self):
    note("unmounted")
    unmount(self)
def failing(self):
    raise RuntimeError("lint broke on purpose")
ExplorerScreen.on_mount, ExplorerScreen.close_session = mounted, closed
ExplorerScreen.on_unmount = unmounted
from textual.drivers.linux_driver import LinuxDriver
disable_input = LinuxDriver.disable_input
def waits_for_input_thread(self):
    note("input thread joined")
    disable_input(self)
LinuxDriver.disable_input = waits_for_input_thread
if sys.argv[3] == "fail":
    ExplorerScreen.action_lint = failing
note("started")
cfg = load_config(sys.argv[1])
run_app(load_docs(sys.argv[1], ignore=cfg.ignore), cfg, resolve_strategy(cfg))
"""


def _run_app_on_a_terminal(tmp_path: Path, key: str, mode: str = "ok") -> tuple[int, bytes, list[str], bool]:
    """`run_app` in a child on a pseudo-terminal: ``key`` a second after the explorer is mounted; its exit code,
    its output, its log, and whether the terminal's attributes afterwards are those it had before."""
    import os
    import pty
    import select
    import subprocess
    import sys
    import time

    log = tmp_path / "log.txt"
    import termios

    master, slave = pty.openpty()
    terminal = os.ttyname(slave)
    before = termios.tcgetattr(slave)
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "120", "LINES": "40",
           "CHUNKSCOPE_CACHE": str(tmp_path / "cache")}
    child = subprocess.Popen([sys.executable, "-c", QUIT_CHILD, str(SAMPLE), str(log), mode], stdin=slave,
                             stdout=slave, stderr=slave, env=env, cwd=Path(__file__).resolve().parents[1],
                             close_fds=True)
    os.close(slave)
    out = bytearray()
    sent = False
    deadline = time.monotonic() + 60
    try:
        while time.monotonic() < deadline:
            if not sent and log.exists() and "mounted" in log.read_text():
                time.sleep(1.0)
                os.write(master, key.encode())
                sent = True
            ready, _, _ = select.select([master], [], [], 0.05)
            if ready:
                try:
                    data = os.read(master, 65536)
                except OSError:  # the child is gone: the terminal's other end is closed
                    break
                if not data:
                    break
                out += data
        code = child.wait(timeout=30)
        again = os.open(terminal, os.O_RDWR | os.O_NOCTTY)
        try:
            after = termios.tcgetattr(again)
        finally:
            os.close(again)
    finally:
        if child.poll() is None:
            child.kill()
        os.close(master)
    return code, bytes(out), log.read_text().splitlines(), after == before


def _modes_left_changed(out: bytes) -> set[str]:
    """The terminal modes the app set up before it first drew (DEC private modes: ``ESC[?1049h`` on,
    ``ESC[?1049l`` off; the cursor hidden with ``ESC[?25l``; and Kitty keyboard pushes, ``ESC[>1u``) that the
    output does not put back as they were by its end (a query such as ``ESC[?2026$p`` changes nothing; a reset of
    a mode the app never set is harmless)."""
    import re

    modes = re.compile(rb"\x1b\[(\?[\d;]+[hl]|>\d*u|<\d*u)")
    first_draw = re.search(rb"\x1b\[\d+;\d+H", out)
    setup = out[:first_draw.start()] if first_draw else out
    found: dict[str, bool] = {}  # the state the app found each mode in: the opposite of its first change
    for m in modes.finditer(setup):
        seq = m.group(1).decode()
        if seq.startswith("?"):
            for mode in seq[1:-1].split(";"):
                found.setdefault(mode, not seq.endswith("h"))
    last = dict(found)
    kitty = 0
    for m in modes.finditer(out):
        seq = m.group(1).decode()
        if seq.startswith("?"):
            for mode in seq[1:-1].split(";"):
                last[mode] = seq.endswith("h")
        elif seq.startswith(">"):
            kitty += 1
        else:
            kitty -= 1 if kitty else 0
    return {f"?{m}" for m in found if last[m] != found[m]} | ({"kitty keyboard"} if kitty else set())


def test_q_ends_the_process_once_the_terminal_is_restored(tmp_path: Path) -> None:
    """q on a real terminal: the terminal is given back (the alternate screen left, the cursor shown), the query
    session is closed, the exit code is 0, and the process ends there, without Textual's unmounting of every
    widget first (most of what a quit cost past restoring the terminal)."""
    code, out, log, same_terminal = _run_app_on_a_terminal(tmp_path, "q")
    assert code == 0, out[-3000:]
    # Closed, never unmounted, and never waiting for Textual's input thread (100-200 ms of a quit).
    assert log == ["started", "mounted", "closed"], log
    restored = out.rindex(b"\x1b[?1049l")  # the alternate screen left...
    assert b"\x1b[?25h" in out[restored:]  # ...and the cursor shown after it
    # Everything else the app turned on is off again (mouse, paste, focus, keyboard protocol, line wrap...), and
    # the terminal's line discipline (echo, canonical input) is back as it was.
    assert not _modes_left_changed(out), _modes_left_changed(out)
    assert same_terminal


def test_an_app_ending_on_an_error_still_gets_textual_whole_teardown(tmp_path: Path) -> None:
    """The quick end is for a quit alone: an app that ends on an error is unmounted as before, its error is
    printed on the restored terminal, and the exit code says it failed."""
    code, out, log, same_terminal = _run_app_on_a_terminal(tmp_path, "l", mode="fail")
    assert code == 1, out[-3000:]
    assert "unmounted" in log, log
    assert not _modes_left_changed(out), _modes_left_changed(out)
    assert same_terminal
    assert b"lint broke on purpose" in out[out.rindex(b"\x1b[?1049l"):]

