"""``chunkscope strategies``, ``chunk`` and ``stats`` through the real command line, and its usage errors."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from chunkscope.chunking.registry import list_strategies
from chunkscope.cli import main
from chunkscope.document.loader import load_docs

REPO = Path(__file__).resolve().parents[1]
SAMPLE = REPO / "sample_docs"
JSONL_FIELDS = {"path", "index", "start", "end", "start_line", "end_line", "text", "tokens", "embed_tokens",
                "heading_path", "metadata", "warnings"}


def test_strategies_json_lists_every_strategy_with_its_parameters(capsys):
    assert main(["strategies", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [s["name"] for s in data] == [c.name for c in list_strategies()]
    by_name = {s["name"]: s for s in data}
    assert {"section-sentence", "header-window", "section", "content-type", "recursive", "fixed"} <= set(by_name)
    params = {p["name"]: p for p in by_name["recursive"]["parameters"]}
    assert params["chunk_size"]["default"] == 512 and params["chunk_overlap"]["default"] == 50
    assert params["separators"]["default"] == ["\n\n", "\n", ". ", " ", ""]
    for s in data:
        for p in s["parameters"]:
            assert {"name", "type", "default", "help"} <= set(p), (s["name"], p)


@pytest.mark.parametrize("name", ["recursive", "section-sentence", "header-window", "section", "content-type", "fixed"])
def test_chunk_jsonl_rows_are_exact_slices_of_the_source(name, capsys):
    assert main(["chunk", str(SAMPLE), "-s", name, "--format", "jsonl"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    docs = {d.path: d for d in load_docs(SAMPLE).documents}
    assert rows and {r["path"] for r in rows} == set(docs)
    for r in rows:
        assert JSONL_FIELDS <= set(r)
        d = docs[r["path"]]
        assert r["text"] == d.text[r["start"]:r["end"]]
        assert r["start_line"] == d.text.count("\n", 0, r["start"]) + 1
        assert r["tokens"] >= 1 and r["embed_tokens"] >= 1


def test_chunk_of_a_single_file_names_it_by_its_file_name(capsys):
    assert main(["chunk", str(SAMPLE / "intro.md"), "--format", "jsonl"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert rows and {r["path"] for r in rows} == {"intro.md"}


def test_stats_json_agrees_with_the_chunks(capsys):
    assert main(["chunk", str(SAMPLE), "-s", "recursive", "--format", "jsonl"]) == 0
    tokens = sorted(json.loads(x)["tokens"] for x in capsys.readouterr().out.splitlines())
    assert main(["stats", str(SAMPLE), "-s", "recursive", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    s = out[0] if isinstance(out, list) else out["strategies"][0]
    flat = json.dumps(s)
    assert str(len(tokens)) in flat and str(tokens[0]) in flat and str(tokens[-1]) in flat


@pytest.mark.parametrize("argv, message", [
    (["chunk", "{sample}", "-s", "nope"], "unknown strategy 'nope'"),
    (["chunk", "{sample}", "-p", "chunk_size=abc"], "chunk_size must be an integer"),
    (["chunk", "{sample}", "-p", "chunk_size=0"], "chunk_size"),
    (["chunk", "{sample}", "-p", "no_such_param=1"], "no_such_param"),
    (["stats", "{sample}/../no-such-folder"], "no such file or folder"),
])
def test_usage_errors_are_one_line_and_exit_2(argv, message, capsys):
    argv = [a.replace("{sample}", str(SAMPLE)) for a in argv]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("chunkscope: error: ") and message in err, err


def test_a_mistyped_command_is_named(capsys):
    assert main(["stat", str(SAMPLE)]) == 2
    assert "unknown command 'stat' (did you mean stats?)" in capsys.readouterr().err


def test_the_table_never_writes_a_control_character_of_a_document(capsys, tmp_path):
    (tmp_path / "evil.md").write_text("# Title \x1b]0;pwned\x07\n\nText \x1b[31mred\x1b[0m and \u202e flipped.\n")
    assert main(["chunk", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out and "\u202e" not in out
    assert "␛" in out  # shown, not executed


def test_python_m_chunkscope_help_runs_without_the_ui_or_the_model():
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"))
    code = ("import sys, runpy; sys.argv = ['chunkscope', '--help']\n"
            "try:\n    runpy.run_module('chunkscope', run_name='__main__')\nexcept SystemExit:\n    pass\n"
            "print([m for m in ('textual', 'torch', 'sentence_transformers') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0 and "usage: chunkscope" in out.stdout and out.stdout.rstrip().endswith("[]")


@pytest.mark.parametrize("cmd", [["strategies"], ["stats", "{corpus}", "-s", "recursive", "-s", "section-sentence"],
                                 ["chunk", "{corpus}", "-s", "content-type", "--format", "jsonl"]])
def test_core_commands_run_on_the_rust_book(cmd, corpus, capsys):
    assert main([c.replace("{corpus}", str(corpus)) for c in cmd]) == 0
    out = capsys.readouterr().out
    assert out.strip()
    if "jsonl" in cmd:
        rows = [json.loads(x) for x in out.splitlines()]
        assert len({r["path"] for r in rows}) == len(load_docs(corpus).documents)


# --- one table of commands, one module each -------------------------------------------------------------------


def test_every_command_is_one_module_named_after_it_and_registered_from_the_table():
    import pkgutil

    import chunkscope.cli.commands as commands
    from chunkscope.cli import build_parser

    modules = {m.name for m in pkgutil.iter_modules(commands.__path__)}
    sub = next(a for a in build_parser()._actions if a.choices and "chunk" in a.choices)  # noqa: SLF001
    assert set(sub.choices) == modules == {m.__name__.rsplit(".", 1)[1] for m in commands.all_commands()}
    assert modules == set(commands.COMMAND_NAMES)


def test_no_command_module_imports_another_command():
    import ast

    import chunkscope.cli.commands as commands

    folder = Path(commands.__file__).parent
    for file in folder.glob("*.py"):
        if file.name == "__init__.py":
            continue
        for node in ast.walk(ast.parse(file.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
                assert not any(n.startswith("chunkscope.cli.commands") for n in names), (file.name, names)


def test_an_import_error_in_a_command_module_fails_the_help_instead_of_hiding_the_command():
    # None in sys.modules makes the import of that module fail, as a broken module would.
    code = ("import sys\nsys.modules['chunkscope.cli.commands.probe'] = None\nfrom chunkscope.cli import main\n"
            "sys.exit(main(['--help']))\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0 and "import of chunkscope.cli.commands.probe halted" in proc.stderr, proc.stderr
    ok = subprocess.run([sys.executable, "-m", "chunkscope", "--help"], capture_output=True, text=True, timeout=120)
    assert ok.returncode == 0
    for name in ("strategies", "chunk", "stats", "lint", "index", "query", "compare", "eval", "probe", "sweep",
                 "tune", "tui"):
        assert re.search(rf"^    {name}\b", ok.stdout, re.M), name


# --- wording ---------------------------------------------------------------------------------------------------


def test_stats_names_the_unit_of_each_strategy_once(capsys):
    names = [c.name for c in list_strategies() if c.name != "custom"]
    argv = ["stats", str(SAMPLE)] + [x for n in names for x in ("-s", n)]
    assert main(argv + ["--json"]) == 0
    tokenizers = {s["tokenizer"] for s in json.loads(capsys.readouterr().out)}
    assert main(argv) in (0, 1)
    out = capsys.readouterr().out
    assert "words tokens" not in out
    for t in tokenizers:
        assert (f"chunk sizes in {t}" if t == "words" else f"chunk sizes in {t} tokens") in out


# --- progress where stderr is not a terminal ------------------------------------------------------------------


def test_without_a_terminal_progress_is_a_plain_line_every_few_seconds():
    import io

    from chunkscope.cli.progress_bar import PLAIN_EVERY, PlainProgress, progress_bar
    from chunkscope.progress import Phase, Progress

    now = [100.0]
    out = io.StringIO()
    plain = PlainProgress("index recursive", every=5.0, stream=out, clock=lambda: now[0])
    report = Progress(Phase.EMBED, 0, 400, unit="texts", label="recursive")
    for done in range(0, 400, 20):  # one report a second
        plain(report.advanced(done))
        now[0] += 1.0
    lines = out.getvalue().splitlines()
    assert len(lines) == 3  # after 5, 10 and 15 seconds of a 20-second job; nothing in the first seconds
    assert lines[0].startswith("chunkscope: index recursive: embedding recursive: 100/400 texts")
    assert lines[0].endswith(" · 5 s elapsed") and lines[-1].endswith(" · 15 s elapsed")
    assert "\x1b" not in out.getvalue() and "\r" not in out.getvalue()
    # pytest's stderr is no terminal: the command line's progress is the plain line, on time.
    with progress_bar("probe") as on_progress:
        assert isinstance(on_progress, PlainProgress) and on_progress.every == PLAIN_EVERY
    with progress_bar("probe", quiet=True) as on_progress:
        assert not isinstance(on_progress, PlainProgress)


# --- lint: what a first run shows ------------------------------------------------------------------------------


def test_lint_shows_embed_truncation_once_per_file_and_says_what_to_change(capsys):
    """A strategy that cuts larger chunks than the embedder reads: one warning per file with the count (``--format
    json`` keeps each chunk's), the errors still in sight, and one line saying what to change."""
    argv = ["lint", str(SAMPLE), "-s", "recursive", "-p", "chunk_size=512"]
    assert main([*argv, "--format", "json"]) == 1
    rows = json.loads(capsys.readouterr().out)
    per_chunk = [r for r in rows if r["rule"] == "embed-truncation"]
    per_file: dict[str, int] = {}
    for r in per_chunk:
        per_file[r["path"]] = per_file.get(r["path"], 0) + 1
    assert max(per_file.values()) > 1, "the sample should have files with several truncated chunks"
    assert main(argv) == 1
    lines = capsys.readouterr().out.splitlines()
    shown = [line for line in lines if " warning embed-truncation " in line]
    assert sorted(line.split(":", 1)[0] for line in shown) == sorted(per_file)
    for line in shown:
        n = per_file[line.split(":", 1)[0]]
        assert (f" {n} chunks of this file are longer than the embedder reads; the first: " in line) == (n > 1)
    assert sum(" error split-fence " in line for line in lines) == sum(r["rule"] == "split-fence" for r in rows)
    chunks = int(lines[-2].split(" chunks: ")[0].rsplit(", ", 1)[1])
    assert lines[-1].startswith(f"{len(per_chunk)} of {chunks} chunks (")
    assert "lower the chunk size (-p chunk_size=N, or in chunkscope.toml)" in lines[-1]
    assert f"{len(per_file)}  embed-truncation  warning" in " ".join(lines)


def test_lint_annotations_tell_the_author_how_to_silence_a_finding_in_each_format(tmp_path, capsys):
    fence = "```python\n" + "".join(f"def f{i}():\n    return {i}\n\n" for i in range(40)) + "```\n"
    for name in ("page.md", "page.mdx"):
        (tmp_path / name).write_text(f"# Page\n\n{fence}\nAfter.\n", encoding="utf-8")
    assert main(["lint", str(tmp_path), "-s", "fixed", "-p", "chunk_size=60", "-p", "chunk_overlap=0",
                 "--format", "github"]) == 1
    out = capsys.readouterr().out.splitlines()
    md = [line for line in out if "page.md,line=" in line]
    mdx = [line for line in out if "page.mdx,line=" in line]
    assert md and mdx
    assert all("<!-- chunkscope: ignore " in line and "{/*" not in line for line in md)
    assert all("{/* chunkscope: ignore " in line and "<!--" not in line for line in mdx)
