"""The command line's tables at 80 columns and wider: every number and every name a user types stays whole
(``chunk``, ``strategies``, ``stats``, ``compare``, ``probe``, ``sweep``), the output fits the width, and wrong
strategy counts are one-line usage errors (``compare`` with three, ``sweep`` with two).

The commands run in-process through `chunkscope.cli.main` with ``COLUMNS`` set (rich reads it for every
console), except one real pipe; ``probe`` and ``sweep`` use the bag-of-words embedder of `tests.test_tuning`.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest
from rich.cells import cell_len

from chunkscope.chunking.registry import list_strategies
from chunkscope.cli import main

from .conftest import SAMPLE_DOCS
from .test_tuning import PROBE_DOCS, BowEmbedder, write_docs

WIDTHS = (80, 100, 120, 200)
SIX = ("section-sentence", "header-window", "section", "content-type", "recursive", "fixed")


# --- helpers --------------------------------------------------------------------------------------------------


def run(argv: list[str], capsys, monkeypatch, width: int | None) -> tuple[int, str, str]:
    """`main(argv)` at `width` columns (None: width unknown, as when piped with no terminal anywhere)."""
    if width is None:
        monkeypatch.delenv("COLUMNS", raising=False)

        def no_terminal(fd: int = 0) -> os.terminal_size:
            raise OSError("not a terminal")

        monkeypatch.setattr(os, "get_terminal_size", no_terminal)
    else:
        monkeypatch.setenv("COLUMNS", str(width))
    rc = main(argv)
    out, err = capsys.readouterr()
    return rc, out, err


def widest(out: str) -> int:
    return max((cell_len(line) for line in out.splitlines()), default=0)


def tables(out: str) -> list[dict]:
    """rich's boxed tables in `out`: each as its header cells and body rows (cells per line, as printed)."""
    found: list[dict] = []
    for line in out.splitlines():
        if line.startswith("┏"):
            found.append({"header": [], "rows": []})
        elif line.startswith("┃") and found:
            found[-1]["header"].append([c.strip() for c in line[1:-1].split("┃")])
        elif line.startswith("│") and found:
            found[-1]["rows"].append([c.strip() for c in line[1:-1].split("│")])
    return found


def one_table(out: str) -> tuple[list[str], list[list[str]]]:
    """The only table in `out`, whose header must be on one line (a wrapped header is the bug)."""
    (t,) = tables(out)
    assert len(t["header"]) == 1, f"the header wrapped: {t['header']}"
    return t["header"][0], t["rows"]


def path_shown(cell: str, path: str) -> bool:
    """A path cell shows the path, or pieces of it around "…": its start, and an end of at least the file
    name's last characters."""
    if cell == path:
        return True
    head, tail = cell.split("…")[0], cell.split("…")[-1]
    return "…" in cell and len(tail) >= 3 and path.startswith(head) and path.endswith(tail)


@pytest.fixture()
def bow(monkeypatch, tmp_path):
    """`probe` and `sweep` with the bag-of-words embedder in place of the model."""
    from chunkscope.cli import retrieval_setup

    monkeypatch.setattr(retrieval_setup, "make_embedder", lambda ctx, args: BowEmbedder(tmp_path / "emb"))


# --- chunk ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("width", [*WIDTHS, None])
@pytest.mark.parametrize("docs", [SAMPLE_DOCS, SAMPLE_DOCS / "intro.md"], ids=["tree", "file"])
def test_chunk_table_keeps_every_number(docs, width, capsys, monkeypatch):
    rc, out, err = run(["chunk", str(docs), "--format", "jsonl"], capsys, monkeypatch, width)
    assert rc == 0, err
    chunks = [json.loads(line) for line in out.splitlines()]
    rc, out, err = run(["chunk", str(docs)], capsys, monkeypatch, width)
    assert rc == 0, err
    assert widest(out) <= (width or 80)
    header, rows = one_table(out)
    assert header[:5] == ["path", "#", "lines", "tokens", "embed"]
    if not width or width < 100:
        # The table gives way before a path does: the preview goes, and the note says where it is.
        assert "left out at this width; --format jsonl has every field" in out
    else:
        assert header[-2:] == ["warnings", "text"]
    assert len(rows) == len(chunks)
    for cells, c in zip(rows, chunks):
        assert path_shown(cells[0], c["path"]), (cells[0], c["path"])
        assert cells[0].endswith(c["path"].rpartition("/")[2]), "a file name is never cut"
        assert cells[1:5] == [str(c["index"]), f"{c['start_line']}-{c['end_line']}", str(c["tokens"]),
                              str(c["embed_tokens"])]
        if header[-1] == "text":
            assert cells[-1], "the text column is empty"
    if width and width >= 120:
        assert "heading" in header


def test_chunk_table_through_a_real_pipe():
    """Piped with no terminal anywhere (stdin too), rich's width is 80: the numbers are still all there."""
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    proc = subprocess.run([sys.executable, "-m", "chunkscope", "chunk", str(SAMPLE_DOCS / "intro.md"), "-s",
                           "recursive"],
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert widest(proc.stdout) <= 80
    header, rows = one_table(proc.stdout)
    assert header[:5] == ["path", "#", "lines", "tokens", "embed"]
    assert [r[:3] for r in rows] == [["intro.md", "0", "10-31"], ["intro.md", "1", "29-41"]]  # front matter: lines 1-9
    assert all(r[3].isdigit() and r[4].isdigit() for r in rows)


# --- strategies -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("width", [80, 120])
def test_strategies_never_cut_a_parameter_name(width, capsys, monkeypatch):
    rc, out, err = run(["strategies"], capsys, monkeypatch, width)
    assert rc == 0, err
    assert widest(out) <= width
    lines = out.splitlines()
    for cls in list_strategies():
        assert any(re.match(rf"{re.escape(cls.name)}(\s|$)", line) for line in lines), cls.name
        for p in cls.parameters:
            # The name whole in its own cell: at the start of a row, then the gap before its type.
            assert any(re.match(rf"\s+{re.escape(p.name)}\s{{2,}}\S", line) for line in lines), p.name
    assert "…" not in out


# --- stats ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("width", [80, 100, 200])
def test_stats_shows_every_strategy_name_and_figure(width, capsys, monkeypatch):
    argv = ["stats", str(SAMPLE_DOCS), *(a for s in SIX for a in ("-s", s))]
    rc, out, err = run([*argv, "--json"], capsys, monkeypatch, width)
    assert rc == 0, err
    expected = {s["strategy"]: s for s in json.loads(out)}
    rc, out, err = run(argv, capsys, monkeypatch, width)
    assert rc == 0, err
    assert widest(out) <= width
    seen: dict[str, dict[str, str]] = {}
    for t in tables(out):
        assert len(t["header"]) == 1, f"a header wrapped: {t['header']}"
        labels = t["header"][0][1:]
        for i, label in enumerate(labels, 1):
            seen[label] = {row[0]: row[i] for row in t["rows"]}
    assert sorted(seen) == sorted(SIX)
    for label, figures in seen.items():
        want = expected[label]
        assert figures["chunks"] == str(want["chunks"])
        assert figures["tokenizer"] == want["tokenizer"]
        for row, key in (("tokens min", "min"), ("tokens p95", "p95"), ("tokens max", "max")):
            assert figures[row] == str(want["tokens"][key])
        assert figures["over limit"] == str(want["over_limit"])
        assert figures["under minimum"] == str(want["under_min"])
    if width >= 200:
        assert len(tables(out)) == 1


def test_stats_json_counts_the_load_problems_the_text_reports(tmp_path, capsys, monkeypatch):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# A\n\nSome text to chunk.\n", encoding="utf-8")
    (docs / "broken.md").symlink_to(docs / "nowhere.md")
    (docs / "outside.md").symlink_to(tmp_path / "elsewhere.md")
    (tmp_path / "elsewhere.md").write_text("# Elsewhere\n", encoding="utf-8")
    rc, out, err = run(["stats", str(docs)], capsys, monkeypatch, 80)
    assert rc == 1  # files that could not be loaded: failures in the documents (the exit-code table)
    problems = int(re.search(r"(\d+) problems", out).group(1))
    assert problems == 2 and err.count("symlink") == 2
    rc, out, _ = run(["stats", str(docs), "--json"], capsys, monkeypatch, 80)
    (s,) = json.loads(out)
    assert (s["errors"], s["load_problems"], s["not_chunked"]) == (problems, problems, 0)


# --- compare --------------------------------------------------------------------------------------------------


def test_compare_three_strategies_is_a_usage_error(tmp_path, capsys, monkeypatch):
    # A docs path that does not exist: the strategies are refused before anything is loaded.
    for docs in (str(SAMPLE_DOCS), str(tmp_path / "missing")):
        rc, out, err = run(["compare", docs, "-s", "recursive", "-s", "section-sentence", "-s", "fixed"],
                           capsys, monkeypatch, 80)
        assert rc == 2 and out == ""
        assert err.startswith("chunkscope: error: compare takes two strategies, got 3 (recursive, section-sentence, "
                              "fixed)")
        assert err.count("\n") == 1
    rc, out, err = run(["compare", str(tmp_path / "missing"), "-s", "recursive"], capsys, monkeypatch, 80)
    assert rc == 2 and err.startswith("chunkscope: error: compare needs two strategies") and err.count("\n") == 1


@pytest.mark.parametrize("width", [80, 120])
def test_compare_file_table_fits_with_whole_headers(width, capsys, monkeypatch):
    argv = ["compare", str(SAMPLE_DOCS), "-s", "recursive", "-s", "section-sentence"]
    rc, out, err = run([*argv, "--json"], capsys, monkeypatch, width)
    assert rc == 0, err
    changed = [f for f in json.loads(out)["per_file"] if f["only_a"] or f["only_b"]]
    rc, out, err = run(argv, capsys, monkeypatch, width)
    assert rc == 0, err
    assert widest(out) <= width
    side, files = tables(out)
    assert side["header"] == [["", "recursive", "section-sentence"]]
    assert files["header"] == [["file", "A", "B", "same", "-A", "+B", "new cuts"]]
    rows = [r for r in files["rows"] if r[0]]  # a wrapped "new cuts" cell continues on rows without a file
    assert len(rows) == len(changed)
    for cells, f in zip(rows, changed):
        assert path_shown(cells[0], f["path"]), (cells[0], f["path"])
        assert cells[1:6] == [str(f["a_chunks"]), str(f["b_chunks"]), str(f["identical"]), str(f["only_a"]),
                              str(f["only_b"])]
        assert cells[6].startswith(str(f["boundary_lines_only_b"][0]))
    assert "-A: only in A; +B: only in B" in " ".join(out.split())


# --- sweep and probe ------------------------------------------------------------------------------------------


def test_sweep_refuses_two_strategies_before_any_work(bow, tmp_path, capsys, monkeypatch):
    from chunkscope.cli import retrieval_setup

    def no_model(ctx, args):
        raise AssertionError("the model was loaded")

    monkeypatch.setattr(retrieval_setup, "make_embedder", no_model)
    for docs in (str(SAMPLE_DOCS), str(tmp_path / "missing")):
        rc, out, err = run(["sweep", docs, "queries.jsonl", "-s", "recursive", "-s", "fixed", "--grid",
                            "chunk_size=512"], capsys, monkeypatch, 80)
        assert rc == 2 and out == ""
        assert err.startswith("chunkscope: error: sweep takes one strategy, got 2 (recursive, fixed)")
        assert err.count("\n") == 1


@pytest.mark.parametrize("width", [None, 80])
def test_sweep_table_fits_and_keeps_names_and_scores(bow, width, tmp_path, capsys, monkeypatch):
    root = write_docs(tmp_path / "docs", PROBE_DOCS)
    argv = ["sweep", str(root), "--probe", "-s", "fixed", "--grid", "chunk_size=8,64", "--grid", "chunk_overlap=0,4",
            "-k", "1"]
    rc, out, err = run([*argv, "--json"], capsys, monkeypatch, width)
    assert rc == 0, err
    points = [p for p in json.loads(out)["points"] if p["status"] == "ok"]
    rc, out, err = run(argv, capsys, monkeypatch, width)
    assert rc == 0, err
    assert widest(out) <= 80
    header, rows = one_table(out)
    assert header[:5] == ["#", "chunk_size", "chunk_overlap", "hit@1", "mrr"] and "chunks" in header
    assert len(rows) == len(points)
    by_params = {(p["params"]["chunk_size"], p["params"]["chunk_overlap"]): p for p in points}
    for cells in rows:
        p = by_params[(int(cells[1]), int(cells[2]))]
        assert cells[3] == f"{p['metrics']['hit@1']:.3f}" and cells[header.index("chunks")] == str(p["chunks"])


@pytest.mark.parametrize("width", [None, 80])
def test_probe_fits_80_columns_when_the_width_is_unknown(bow, width, tmp_path, capsys, monkeypatch):
    root = write_docs(tmp_path / "docs", PROBE_DOCS)
    (root / "chunkscope.toml").write_text('[presets.whole]\nstrategy = "section"\noverlap_tokens = 0\n',
                                          encoding="utf-8")
    argv = ["probe", str(root), "-s", "whole", "-s", "section-sentence", "-k", "1"]
    rc, out, err = run([*argv, "--json"], capsys, monkeypatch, width)
    assert rc == 0, err
    data = json.loads(out)
    rc, out, err = run(argv, capsys, monkeypatch, width)
    assert rc == 0, err
    assert widest(out) <= 80
    header, rows = one_table(out)
    assert header == ["strategy", "chunks", "hit@1", "MRR@1", "miss", "cut", "only"]
    for cells, s in zip(rows, data["strategies"]):
        assert cells[0] == s["label"] and cells[1] == str(s["chunks"])
        assert cells[2] == f"{s['metrics']['hit@1']:.3f}" and cells[4] == str(s["misses"])
        assert cells[5] == str(s["cut_off"])
    assert "miss: sections not found in the top 1" in " ".join(out.split())


def test_shorten_path_keeps_the_file_name_and_the_width():
    from chunkscope.cli.table_layout import shorten_path

    nested, flat = "module-1-foundations/01-coordinate-frames.md", "ch07-02-defining-modules-to-control-scope.md"
    assert shorten_path(nested, 44) == nested
    assert shorten_path(nested, 30) == "modul…/01-coordinate-frames.md"
    assert shorten_path(nested, 16) == "…01-coor…ames.md"
    assert shorten_path(flat, 16) == "ch07-02…scope.md"
    for width in range(2, 46):
        for path in (nested, flat, "日本語/ファイル名.md"):
            assert cell_len(shorten_path(path, width)) <= width


def test_stats_says_what_it_read_on_one_line_in_the_singular_too(tmp_path, capsys, monkeypatch):
    """The title named "1 files" and wrapped to the width of the one narrow column that followed it."""
    docs = tmp_path / "one"
    docs.mkdir()
    (docs / "page.md").write_text("# Page\n\nSome words here.\n", encoding="utf-8")
    (docs / "bad.md").write_bytes(b"# Bad\n\n\xff text\n")
    rc, out, _ = run(["stats", str(docs), "-s", "section"], capsys, monkeypatch, 140)
    assert rc == 1  # a file with a load problem
    assert out.splitlines()[0] == f"{docs}: 1 file, 1 problem"


# --- citations are never cut -----------------------------------------------------------------------------------

#: Folders deep enough that every ``path:line`` of the probe below is wider than 80 columns.
DEEP = "03-integrations-and-extensions/02-practical-implementation-notes/05-setting-rate-limits-in-production"


@pytest.mark.parametrize("width", [None, 80])
def test_probe_never_breaks_a_path_line(bow, width, tmp_path, capsys, monkeypatch):
    """Piped at 80 columns: each ``path:line`` of the misses is whole on one line (copy, grep and click-to-open
    need it whole), however much wider than the terminal it is; everything else fits."""
    root = tmp_path / "docs"
    write_docs(root / DEEP, PROBE_DOCS)
    rc, out, err = run(["probe", str(root), "-s", "section-sentence", "-k", "1"], capsys, monkeypatch, width)
    assert rc == 0, err
    cited = re.findall(r"\S+\.md:\d+", out)
    assert cited, out
    assert all(c.startswith(DEEP + "/") for c in cited), cited  # never a tail of one broken off
    # Only a line holding a citation may be wider than the terminal.
    assert all(re.search(r"\S+\.md:\d+", line) for line in out.splitlines() if cell_len(line) > 80)


def test_a_wrapped_line_keeps_every_word_whole_under_its_indent(monkeypatch):
    """How eval's misses and the query's snippets wrap: at spaces, under the indent; a word wider than the line
    (a ``path:line``) on a line of its own, whole."""
    import io

    from rich.text import Text

    from chunkscope.cli.output import console, print_wrapped

    monkeypatch.setenv("COLUMNS", "40")
    where = f"{DEEP}/sensors.md:11"
    buf = io.StringIO()
    con = console(buf)
    text = f"below-k    Radar  — the answer is at {where}, rank 2 of the chunks searched"
    print_wrapped(con, Text(text), 2)
    lines = buf.getvalue().splitlines()
    assert f"  {where}," in lines
    assert all(line.startswith("  ") and not line.endswith(" ") for line in lines)
    assert all(cell_len(line) <= 40 for line in lines if where not in line)
    assert " ".join(buf.getvalue().split()) == " ".join(text.split())  # every word, in order
