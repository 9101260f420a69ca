"""``chunkscope strategies``, ``chunk`` and ``stats`` through the real command line, and its usage errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from chunkscope.chunking.chunk import list_strategies
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
