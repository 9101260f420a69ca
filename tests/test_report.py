"""`chunkscope report`: one self-contained HTML page whose chunk elements are exactly the chunks, safe for
hostile documents, checked in a real headless Chromium (skipped, with the reason, where none is installed)."""

from __future__ import annotations

import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest

from chunkscope.chunking.drivers import chunk_documents
from chunkscope.chunking.registry import get_strategy
from chunkscope.cli import main
from chunkscope.document.loader import load_docs
from tests.conftest import SAMPLE_DOCS

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None, reason="Chromium is not installed (scripts/setup.sh --test installs it with apt-get)")

HOSTILE_TITLE = "</title><script>document.title='pwned'</script>"
HOSTILE_BODY = (
    "# Intro <script>window.pwned = 1</script>\r\n\r\n"
    "Some text with <img src=x onerror=\"window.pwned=2\"> and &amp; entities &lt;b&gt;.\r\n\r\n"
    "```html\r\n</pre></div><script>window.pwned=3</script>\r\n```\r\n\r\n"
    "## Second\r\n\r\n" + "A sentence that goes on. " * 60 + "\r\n"
)


class ChunkDom(HTMLParser):
    """The chunk elements of a report (or of Chromium's DOM dump): per file path, each chunk's (start, end, text),
    the text being its ``pre.t`` pieces joined; and every script element's text."""

    def __init__(self, dumped: bool) -> None:
        super().__init__(convert_charrefs=True)
        #: Chromium's dump writes the DOM's text as it is, with no line feed added after <pre>.
        self.dumped = dumped
        self.files: dict[str, list[tuple[int, int, str]]] = {}
        self.scripts: list[str] = []
        self._path: str | None = None
        self._depth = 0  # open <div>s
        self._chunk: tuple[int, int, int] | None = None  # start, end, the div depth it opened at
        self._text: list[str] = []
        self._in_pre = False
        self._pre_start = False
        self._in_script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        self._pre_start = False
        classes = (a.get("class") or "").split()
        if tag == "section" and "file" in classes:
            self._path = a["data-path"]
            self.files[self._path or ""] = []
        elif tag == "div":
            self._depth += 1
            if "chunk" in classes:
                self._chunk = (int(a["data-start"] or 0), int(a["data-end"] or 0), self._depth)
                self._text = []
        elif tag == "pre" and "t" in classes and self._chunk is not None:
            self._in_pre = self._pre_start = True
        elif tag == "script":
            self._in_script = True
            self.scripts.append("")

    def handle_endtag(self, tag: str) -> None:
        if tag == "div":
            if self._chunk is not None and self._chunk[2] == self._depth:
                self.files[self._path or ""].append((self._chunk[0], self._chunk[1], "".join(self._text)))
                self._chunk = None
            self._depth -= 1
        elif tag == "pre":
            self._in_pre = False
        elif tag == "script":
            self._in_script = False

    def handle_data(self, data: str) -> None:
        if self._in_pre:
            # As in a browser: in the page's source, a line feed right after <pre> is not content.
            drop = self._pre_start and not self.dumped and data.startswith("\n")
            self._text.append(data[1:] if drop else data)
            self._pre_start = False
        if self._in_script:
            self.scripts[-1] += data


def expected_chunks(docs: Path, strategy: str) -> dict[str, list[tuple[int, int, str]]]:
    results = chunk_documents(load_docs(str(docs)).documents, get_strategy(strategy))
    return {r.doc.path: [(c.start, c.end, c.text) for c in sorted(r.chunks, key=lambda c: (c.start, c.end))]
            for r in results}


def write_report(docs: Path, out: Path, strategy: str, capsys: pytest.CaptureFixture[str]) -> str:
    assert main(["report", str(docs), "--html", str(out), "-s", strategy]) == 0
    assert f"{out}:" in capsys.readouterr().out
    return out.read_text(encoding="utf-8")


@pytest.fixture
def hostile_tree(tmp_path: Path) -> Path:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "<img src=x onerror=alert(1)>.md").write_bytes(
        f"---\ntitle: \"{HOSTILE_TITLE}\"\n---\n".encode() + HOSTILE_BODY.encode())
    (docs / "plain.md").write_text("# Plain\n\nNothing to see.\n", encoding="utf-8")
    return docs


def parse(page: str, dumped: bool = False) -> ChunkDom:
    dom = ChunkDom(dumped)
    dom.feed(page)
    dom.close()
    return dom


@pytest.mark.parametrize("strategy", ["section-sentence", "recursive"])
def test_chunk_elements_are_the_chunks(tmp_path: Path, capsys: pytest.CaptureFixture[str], strategy: str) -> None:
    page = write_report(SAMPLE_DOCS, tmp_path / "r.html", strategy, capsys)
    assert parse(page).files == expected_chunks(SAMPLE_DOCS, strategy)
    # Self-contained: nothing is loaded from anywhere when the page is viewed.
    assert not re.search(r"\b(?:src|href)\s*=", page)
    assert "@import" not in page and "url(" not in page


def test_overlap_is_marked(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "r.html"
    assert main(["report", str(SAMPLE_DOCS), "--html", str(out), "-s", "recursive", "-p", "chunk_size=200",
                 "-p", "chunk_overlap=40"]) == 0
    page = out.read_text(encoding="utf-8")
    results = chunk_documents(load_docs(str(SAMPLE_DOCS)).documents,
                              get_strategy("recursive", chunk_size=200, chunk_overlap=40))
    overlapping = [c for r in results for c in r.chunks if c.overlap]
    # A chunk's shared start is marked where its text begins (right after its head line); a finding shown inside
    # that shared part splits the mark in two, so the marks alone may outnumber the chunks.
    marked = re.findall(r'class="chead">(?:(?!</div>).)*</div><pre class="t"><mark class="ovl"', page, re.S)
    assert overlapping and len(marked) == len(overlapping)
    # Each chunk still holds its whole slice, the part it shares with the previous one included.
    assert parse(page).files == {r.doc.path: [(c.start, c.end, c.text) for c in sorted(r.chunks, key=lambda c: (
        c.start, c.end))] for r in results}


def test_hostile_document_cannot_inject(hostile_tree: Path, tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    page = write_report(hostile_tree, tmp_path / "r.html", "section-sentence", capsys)
    dom = parse(page)
    assert len(dom.scripts) == 1 and "pwned" not in dom.scripts[0]  # only the page's own script
    assert "<script>window" not in page and "<img" not in page
    assert dom.files == expected_chunks(hostile_tree, "section-sentence")  # carriage returns included
    assert "&lt;img src=x onerror=alert(1)&gt;.md" in page
    assert "Content-Security-Policy" in page


def test_unwritable_output_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "missing" / "r.html"
    assert main(["report", str(SAMPLE_DOCS), "--html", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "cannot write the report" in err[0] and str(out) in err[0]


def run_chromium(page: Path, *extra: str) -> tuple[str, list[str]]:
    """Chromium's DOM after the page's scripts ran, and the console messages it logged at error level or any
    uncaught exception or CSP violation."""
    assert CHROMIUM is not None
    proc = subprocess.run(
        [CHROMIUM, "--headless", "--disable-gpu", "--no-sandbox", "--no-first-run", "--disable-extensions",
         "--enable-logging=stderr", "--v=0", f"--user-data-dir={page.parent / 'profile'}", *extra,
         page.as_uri()], capture_output=True, timeout=120)
    # Bytes, decoded here: text mode would turn the carriage returns of the DOM's text into line feeds.
    stderr = proc.stderr.decode("utf-8", "replace")
    console = [line for line in stderr.splitlines() if "CONSOLE" in line
               or "Uncaught" in line or "Content Security Policy" in line]
    return proc.stdout.decode("utf-8"), console


@needs_chromium
def test_console_errors_are_caught(tmp_path: Path) -> None:
    """The check itself: a page that throws is seen to throw (else a clean run below would prove nothing)."""
    bad = tmp_path / "bad.html"
    bad.write_text("<!DOCTYPE html><html><body><script>throw new Error('boom-check')</script></body></html>")
    _, console = run_chromium(bad, "--dump-dom")
    assert any("boom-check" in line for line in console), console


@needs_chromium
@pytest.mark.parametrize("tree", ["sample_docs", "hostile"])
def test_page_loads_in_chromium(tree: str, hostile_tree: Path, tmp_path: Path,
                                capsys: pytest.CaptureFixture[str]) -> None:
    docs = SAMPLE_DOCS if tree == "sample_docs" else hostile_tree
    out = tmp_path / "r.html"
    write_report(docs, out, "section-sentence", capsys)
    dumped, console = run_chromium(out, "--dump-dom")
    assert console == []
    assert 'data-ready="1"' in dumped  # the page's script ran to its end
    dom = parse(dumped, dumped=True)
    expected = expected_chunks(docs, "section-sentence")
    assert sum(map(len, dom.files.values())) == sum(map(len, expected.values()))
    assert dom.files == expected
    assert "pwned" not in "".join(dom.scripts)
