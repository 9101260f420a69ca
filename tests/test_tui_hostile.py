"""The app on hostile pages: a YAML "billion laughs" front matter paints at once in bounded memory, and no worker
is named or described from its arguments (Textual's default is repr() of them: a whole document per cut)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("textual")

from tests.pilot import make_app, wait_for  # noqa: E402

pytestmark = pytest.mark.anyio

REPO = Path(__file__).resolve().parents[1]


def laughs_page(levels: int = 9) -> str:
    """A 391-byte page whose front matter stands for 9**9 strings once its aliases are expanded."""
    names = "abcdefghijklmnopqrstuvwxyz"[:levels]
    lines = ["---", 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for prev, cur in zip(names, names[1:]):
        lines.append(f"{cur}: &{cur} [" + ",".join([f"*{prev}"] * 9) + "]")
    return "\n".join([*lines, "title: Laughs", "---", "", "# Laughs", "", "Some honest text under it.", ""])


#: The child: run the real app on the tree with a watchdog on its resident memory; print what it saw as JSON.
CHILD = textwrap.dedent("""
    import json, os, resource, sys, threading, time
    from pathlib import Path

    LIMIT = 1_500_000_000
    # A hard ceiling too: a repr() holding the interpreter starves the watchdog (MemoryError instead of 6 GB).
    resource.setrlimit(resource.RLIMIT_AS, (4_000_000_000, 4_000_000_000))
    peak = [0]

    def rss() -> int:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

    def watch() -> None:
        while True:
            peak[0] = max(peak[0], rss())
            if peak[0] > LIMIT:
                print(json.dumps({"over": peak[0]}), flush=True)
                os._exit(3)
            time.sleep(0.01)

    import chunkscope.document.loader as loader
    if sys.argv[2] == "unguarded":
        loader.MAX_FRONT_MATTER_VALUES = 10 ** 18  # the aliases reach the app: only the app's care saves it
    from tests.pilot import make_app, wait_for

    async def main() -> None:
        base = rss()
        threading.Thread(target=watch, daemon=True).start()
        start = time.monotonic()
        app = make_app(Path(sys.argv[1]))
        async with app.run_test(size=(100, 30)) as pilot:
            ex = app.explorer
            await wait_for(pilot, lambda: ex.layout_data is not None and ex.layout_data.doc.path == "laughs.md",
                           timeout=30, what="the page's text")  # wait_for lets a frame pass after it holds
            shown = time.monotonic() - start
            await wait_for(pilot, lambda: ex.result is not None and ex.result.complete
                           and ex.layout_data is not None and ex.layout_data.chunks is ex.result.chunks,
                           timeout=30, what="the page's chunks")
            painted = time.monotonic() - start
            fm = app.docs.documents[0].front_matter
            print(json.dumps({"shown": shown, "painted": painted, "growth": peak[0] - base,
                              "chunks": len(ex.result.chunks), "front_matter_keys": sorted(fm),
                              "problems": [str(p) for p in app.docs.problems]}), flush=True)

    import asyncio
    asyncio.run(main())
    os._exit(0)
""")


@pytest.mark.parametrize("guard", ["guarded", "unguarded"])
def test_a_billion_laughs_page_paints_in_seconds_in_bounded_memory(tmp_path, guard):
    (tmp_path / "laughs.md").write_text(laughs_page(), encoding="utf-8")
    run = subprocess.run([sys.executable, "-c", CHILD, str(tmp_path), guard], cwd=REPO, capture_output=True,
                         text=True, timeout=90)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-3000:]
    seen = json.loads(run.stdout.strip().splitlines()[-1])
    # Generous bounds for a busy test machine: without the care it never paints (repr() of 9**9 strings).
    assert seen["shown"] < 20 and seen["painted"] < 30, seen
    assert seen["growth"] < 800_000_000, seen
    assert seen["chunks"] >= 1
    if guard == "guarded":
        # The loader refuses the block (one problem naming the file), so nothing downstream ever walks it.
        assert seen["front_matter_keys"] == []
        assert seen["problems"] == ["laughs.md: front-matter: front matter expands to more than 10,000 values "
                                    "through YAML aliases; it is ignored"]
    else:
        assert seen["front_matter_keys"] == ["a", "b", "c", "d", "e", "f", "g", "h", "i", "title"]


def test_the_loader_keeps_honest_aliases_and_refuses_endless_ones():
    from chunkscope.document.loader import split_front_matter

    honest = "---\ntitle: T\nbase: &b {x: 1}\nd: {<<: *b, y: 2}\ntags: &t [a, b]\nagain: *t\n---\nbody\n"
    fm, body, err = split_front_matter(honest)
    assert err is None and fm == {"title": "T", "base": {"x": 1}, "d": {"x": 1, "y": 2}, "tags": ["a", "b"],
                                  "again": ["a", "b"]}
    assert honest[body:] == "body\n"
    fm, body, err = split_front_matter("---\nr: &r [*r]\n---\nbody\n")
    assert fm == {} and "expands to more than" in (err or "")
    fm, body, err = split_front_matter(laughs_page(4))  # 9**4 = 6,561 strings: an odd page, not an attack
    assert err is None and len(fm["d"]) == 9


async def test_no_worker_is_described_by_its_arguments(monkeypatch):
    """Every worker the app starts (opening a file, cutting it, the tree, the files view, compare, a pane) has a
    short description of its own, never one built from repr() of a document or a cut."""
    from textual.worker import Worker

    seen: list[tuple[str, str]] = []
    original = Worker.__init__

    def recording(self, *args, **kwargs):
        original(self, *args, **kwargs)
        seen.append((self.name, self.description))

    monkeypatch.setattr(Worker, "__init__", recording)
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        ex = app.explorer
        await wait_for(pilot, lambda: ex.result is not None and ex.result.complete and ex.tree_result is not None,
                       what="first file and tree")
        await pilot.press("F")
        await wait_for(pilot, lambda: getattr(app.screen, "rows", None) is not None, what="the files view")
        await pilot.press("escape")
        await pilot.press("l")
        await pilot.pause(0.3)
    names = {name for name, _ in seen}
    assert {"chunking the file", "counting word pieces", "chunking the tree", "summing up the files"} <= names
    for name, description in seen:
        assert len(description) <= 60 and "Document(" not in description and "FileResult(" not in description, \
            (name, description[:200])
