"""Hostile input: files that are not files, chunkers that drop text or exit, credentials inside URLs.

Each case once hung, exhausted memory, passed silently or printed a secret; each is now one line naming the file
or the plugin, with the documented exit code.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from chunkscope.cli import main
from chunkscope.document.loader import load_docs, read_document
from chunkscope.safe_text import redact_url, redact_urls

SRC = str(Path(__file__).resolve().parents[1] / "src")
PAGE = "# Guide\n\nInstall the tools first.\n\nThen run the build and read its report.\n"


def tree(tmp_path: Path, toml: str = "") -> Path:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "guide.md").write_text(PAGE, encoding="utf-8")
    if toml:
        (docs / "chunkscope.toml").write_text(toml, encoding="utf-8")
    return docs


def run_cli(*args: str, timeout: float = 120, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """The real command in a child process, so that a hang fails the test instead of stopping the suite."""
    return subprocess.run([sys.executable, "-m", "chunkscope", *args], capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, "PYTHONPATH": SRC, **(env or {})})


# --- only regular files are read ----------------------------------------------------------------------------------


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes are POSIX")
@pytest.mark.parametrize("command", ["stats", "lint"])
def test_a_fifo_named_md_is_a_problem_never_a_hang(tmp_path: Path, command: str) -> None:
    docs = tree(tmp_path)
    os.mkfifo(docs / "pipe.md")  # nobody ever writes to it: opening it for reading would wait forever
    done = run_cli(command, str(docs), timeout=60)
    assert done.returncode == 1, done.stderr  # a file that could not be read: CI never passes on it
    if command == "lint":
        assert "pipe.md:1:1: error load-problem not-a-file: a named pipe (FIFO)" in done.stdout
    else:
        assert "pipe.md: not-a-file: a named pipe (FIFO), not a regular file; not read" in done.stderr


def test_a_character_device_is_a_problem_never_read(tmp_path: Path) -> None:
    docs = tree(tmp_path)
    try:
        os.mknod(docs / "zero.md", stat.S_IFCHR | 0o644, os.makedev(1, 5))  # /dev/zero's numbers
    except (OSError, AttributeError):
        pytest.skip("cannot make a device node here")
    t = load_docs(docs)
    assert [d.path for d in t.documents] == ["guide.md"]
    assert [str(p) for p in t.problems] == ["zero.md: not-a-file: a character device, not a regular file; not read"]


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="needs /dev/zero")
def test_a_link_to_dev_zero_is_never_read(tmp_path: Path) -> None:
    link = tmp_path / "zero.md"
    link.symlink_to("/dev/zero")
    doc, problems = read_document(link, "zero.md")
    assert doc is None and [p.code for p in problems] == ["not-a-file"]
    # Given alone on the command line: one line naming it, exit 2, at once.
    done = run_cli("stats", str(link), timeout=60)
    assert done.returncode == 2 and str(link) in done.stderr and done.stderr.count("\n") == 1


@pytest.mark.skipif(not Path("/proc/self/status").is_file(), reason="needs Linux's /proc")
def test_the_size_limit_holds_for_the_bytes_read_not_the_reported_size() -> None:
    status = Path("/proc/self/status")
    assert status.stat().st_size == 0  # what a size check alone would let through
    doc, problems = read_document(status, "status.md", max_bytes=64)
    assert doc is None and [p.code for p in problems] == ["too-large"]
    assert "64-byte limit" in problems[0].message


def test_a_regular_file_under_the_limit_reads_as_before(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_bytes(b"\xef\xbb\xbf# T\r\n\r\nbody\r\n")
    doc, problems = read_document(page, "page.md", max_bytes=len(page.read_bytes()))
    assert problems == [] and doc is not None and doc.text == "# T\r\n\r\nbody\r\n"


# --- custom chunkers are checked like built-ins --------------------------------------------------------------------


def chunker(docs: Path, body: str) -> str:
    (docs.parent / "mychunker.py").write_text(body, encoding="utf-8")
    return f"{docs.parent / 'mychunker.py'}:chunk"


def test_a_chunker_that_drops_most_of_a_page_fails_lint(tmp_path: Path, capsys) -> None:
    docs = tree(tmp_path)
    spec = chunker(docs, "def chunk(text):\n    return [text[:7]]\n")  # "# Guide": a few percent of the page
    code = main(["lint", str(docs), "-s", "custom", "-p", f"callable={spec}"])
    out = capsys.readouterr().out
    assert code == 1
    assert "guide.md:3:1: error uncovered " in out and "are in no chunk: Install the tools first." in out


def test_a_chunker_whose_chunks_overlap_unasked_fails(tmp_path: Path, capsys) -> None:
    docs = tree(tmp_path)
    spec = chunker(docs, "def chunk(text):\n    return [(0, 30), (20, len(text))]\n")
    assert main(["lint", str(docs), "-s", "custom", "-p", f"callable={spec}"]) == 2
    assert "overlaps chunk 1 (0, 30); set overlap = true" in capsys.readouterr().err


@pytest.mark.parametrize("exit_code", [0, 3])
def test_system_exit_in_a_chunker_is_its_failure_never_exit_0(tmp_path: Path, exit_code: int) -> None:
    docs = tree(tmp_path)
    spec = chunker(docs, f"import sys\ndef chunk(text):\n    sys.exit({exit_code})\n")
    done = run_cli("lint", str(docs), "-s", "custom", "-p", f"callable={spec}")
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert f"guide.md: chunk-error: custom: {spec} raised SystemExit: {exit_code}" in done.stderr
    assert "could chunk none of the 1 files" in done.stderr


# --- credentials in URLs are never printed -------------------------------------------------------------------------


@pytest.mark.parametrize(("url", "shown"), [
    ("http://alice:s3cret@127.0.0.1:9/v1", "http://***@127.0.0.1:9/v1"),
    ("https://q.example:6333/?api-key=s3cret&x=1", "https://q.example:6333/?api-key=***&x=1"),
    ("https://e.example/v1?api_key=s3cret", "https://e.example/v1?api_key=***"),
    ("https://e.example/v1?token=s3cret#frag", "https://e.example/v1?token=***#frag"),
    ("https://api.openai.com/v1", "https://api.openai.com/v1"),
])
def test_redact_url(url: str, shown: str) -> None:
    assert redact_url(url) == shown
    assert redact_urls(f"cannot reach {url}: refused") == f"cannot reach {shown}: refused"


SECRET_EMBED_URL = "http://alice:s3cret@127.0.0.1:9/v1?api-key=s3cret"
SECRET_QDRANT_URL = "http://bob:s3cret@127.0.0.1:9/?api-key=s3cret"


@pytest.mark.parametrize("args", [
    ["query", "{docs}", "bread", "--embedder", "openai:m", "--embed-url", SECRET_EMBED_URL],
    ["query", "{docs}", "bread", "--embedder", "openai:m", "--embed-url", SECRET_EMBED_URL, "--json"],
    ["query", "{docs}", "bread", "--qdrant-url", SECRET_QDRANT_URL],
    ["query", "{docs}", "bread", "--embedder", "openai:m", "--embed-url", "ftp://alice:s3cret@x/v1"],
])
def test_credentials_in_urls_never_reach_a_message(tmp_path: Path, args: list[str]) -> None:
    docs = tree(tmp_path)
    argv = [a.format(docs=docs) for a in args]
    for debug in ("", "1"):
        done = run_cli(*argv, env={"CHUNKSCOPE_DEBUG": debug, "QDRANT_API_KEY": "", "OPENAI_API_KEY": ""})
        assert done.returncode in (2, 3), (done.stdout, done.stderr)
        assert "s3cret" not in done.stdout + done.stderr, done.stderr
        assert "***" in done.stderr
        if debug:
            assert "Traceback" in done.stderr


def test_a_plugin_strategy_exiting_is_its_failure_never_the_end_of_the_run() -> None:
    from chunkscope.chunking.drivers import chunk_documents
    from chunkscope.chunking.strategy import Strategy
    from chunkscope.document.loader import Document

    class Quitter(Strategy):
        name = "quitter"
        description = "test plugin: exits"

        def spans(self, doc: Document) -> list:
            raise SystemExit(0)

    docs = [Document.from_text(PAGE, "a.md"), Document.from_text(PAGE, "b.md")]
    results = chunk_documents(docs, Quitter())
    assert [(r.chunks, r.error) for r in results] == [([], "quitter raised SystemExit: 0")] * 2
