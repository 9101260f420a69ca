"""`probe` and `sweep` on a preset that names its search mode (what `tune --write` chose): each strategy is asked
in its own preset's mode; --search wins over every preset, and a strategy naming none takes ``[query] search``."""

from __future__ import annotations

import json

import pytest

from chunkscope.evaluation import probe as probe_module
from chunkscope.evaluation import runs
from chunkscope.evaluation import sweep as sweep_module
from chunkscope.cli import main
from tests.test_cli_layout import PROBE_DOCS, bow, write_docs  # noqa: F401 - bow is a fixture

CONFIG = """[query]
search = "keyword"

[presets.tuned]
strategy = "section"
search = "hybrid"

[presets.plain]
strategy = "section"
overlap_tokens = 0
"""


@pytest.fixture()
def modes(monkeypatch) -> list[tuple[str, str]]:
    """(label, search mode) of every configuration probe or sweep runs."""
    seen: list[tuple[str, str]] = []
    real = runs.run_config

    def spy(tree, label, *args, search_mode: str = "dense", **kw):
        seen.append((label, search_mode))
        return real(tree, label, *args, search_mode=search_mode, **kw)

    # Each module that runs configurations holds its own reference to the function.
    monkeypatch.setattr(probe_module, "run_config", spy)
    monkeypatch.setattr(sweep_module, "run_config", spy)
    return seen


@pytest.fixture()
def root(tmp_path):
    docs = write_docs(tmp_path / "docs", PROBE_DOCS)
    (docs / "chunkscope.toml").write_text(CONFIG, encoding="utf-8")
    return docs


def run_json(argv: list[str], capsys) -> dict:
    rc = main([*argv, "--json"])
    out, err = capsys.readouterr()
    assert rc == 0, err
    return json.loads(out)


def test_probe_asks_each_strategy_in_its_presets_search_mode(bow, modes, root, capsys):  # noqa: F811
    data = run_json(["probe", str(root), "-s", "tuned", "-s", "plain", "-s", "recursive", "-k", "1"], capsys)
    assert modes == [("tuned", "hybrid"), ("plain", "keyword"), ("recursive", "keyword")]
    # One table, the strategies in the order given.
    assert [s["label"] for s in data["strategies"]] == ["tuned", "plain", "recursive"]
    modes.clear()
    run_json(["probe", str(root), "-s", "tuned", "-s", "plain", "-k", "1", "--search", "dense"], capsys)
    assert modes == [("tuned", "dense"), ("plain", "dense")]


def test_sweep_of_a_preset_runs_in_its_search_mode(bow, modes, root, capsys):  # noqa: F811
    argv = ["sweep", str(root), "--probe", "-s", "tuned", "--grid", "overlap_tokens=0,8", "-k", "1"]
    run_json(argv, capsys)
    assert [m for _, m in modes] == ["hybrid", "hybrid"]
    # The printed preset keeps the mode its points were scored in.
    assert main(argv) == 0
    assert 'search = "hybrid"' in capsys.readouterr().out
    modes.clear()
    run_json([*argv, "--search", "dense"], capsys)
    assert [m for _, m in modes] == ["dense", "dense"]


def test_sweep_of_a_preset_naming_no_mode_prints_its_best_preset_without_one(bow, modes, root, capsys):  # noqa: F811
    argv = ["sweep", str(root), "--probe", "-s", "plain", "--grid", "overlap_tokens=0,8", "-k", "1"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert [m for _, m in modes] == ["keyword", "keyword"]  # [query] search
    assert "add to chunkscope.toml" in out and 'strategy = "section"' in out and "search =" not in out
