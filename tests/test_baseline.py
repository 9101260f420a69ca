"""Baselines: ``eval --save-baseline`` keeps each strategy's metrics, ``eval --baseline`` reports each metric's
change and fails a CI job when one drops by more than the tolerance; a missing or damaged file is one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from chunkscope.cli import main
from chunkscope.evaluation.baselines import BASELINE_VERSION, Baseline, BaselineError
from chunkscope.evaluation.evaluate import EvalResult
from chunkscope.evaluation.queries import Expect
from chunkscope.evaluation.regions import Region
from chunkscope.evaluation.verdicts import QueryResult

SAMPLE = Path(__file__).resolve().parents[1] / "sample_docs"
SAMPLE_QUERIES = Path(__file__).resolve().parents[1] / "sample_queries.jsonl"


def result(label: str, metrics: dict[str, float], queries: int = 4, unit: str = "chars") -> EvalResult:
    """An evaluation's result as `evaluate` returns it, with ``queries`` placeholder questions."""
    per_query = [QueryResult(f"q{i}", Expect("a.md"), Region("a.md", 0, 1), i + 1, True, 1, 0.9, 1, None, "rank 1",
                             dict(metrics)) for i in range(queries)]
    return EvalResult(label, dict(metrics), per_query, strategy=label, ks=(1, 5), passage_unit=unit)


# --- the file -------------------------------------------------------------------------------------------------


def test_a_saved_baseline_reads_back(tmp_path):
    f = tmp_path / "base.json"
    Baseline.of([result("recursive", {"hit@5": 0.8, "mrr": 0.61234567}), result("section", {"hit@5": 0.7})]).save(f)
    data = json.loads(f.read_text())
    assert data["chunkscope_baseline"] == BASELINE_VERSION and data["queries"] == 4
    assert data["strategies"]["recursive"] == {"hit@5": 0.8, "mrr": 0.612346}  # stored as compared: 6 decimals
    b = Baseline.load(f)
    assert b.strategies == {"recursive": {"hit@5": 0.8, "mrr": 0.612346}, "section": {"hit@5": 0.7}}
    assert (b.queries, b.passage_unit, b.ks, b.source) == (4, "chars", (1, 5), str(f))


@pytest.mark.parametrize("content, problem", [
    (None, "no such baseline file"),
    ("{not json", "not a baseline file (invalid JSON at line 1"),
    ('{"results": []}', 'not a baseline file (no "chunkscope_baseline" version)'),
    ('{"chunkscope_baseline": 99, "strategies": {"r": {"hit@5": 1}}}', "baseline version 99; this chunkscope reads"),
    ('{"chunkscope_baseline": 1, "strategies": {}}', "the baseline holds no strategy's metrics"),
    ('{"chunkscope_baseline": 1, "queries": 3, "strategies": {"r": {"hit@5": "high"}}}',
     "strategy 'r' does not map metric names to numbers"),
    ('{"chunkscope_baseline": 1, "queries": 3, "passage_unit": "lines", "strategies": {"r": {"hit@5": 1}}}',
     "malformed baseline"),
])
def test_a_missing_or_damaged_baseline_is_one_line(tmp_path, content, problem):
    f = tmp_path / "base.json"
    if content is not None:
        f.write_text(content, encoding="utf-8")
    with pytest.raises(BaselineError) as err:
        Baseline.load(f)
    assert str(err.value).startswith(f"{f}: ") and problem in str(err.value) and "\n" not in str(err.value)


def test_an_unwritable_baseline_path_is_one_line(tmp_path):
    with pytest.raises(BaselineError, match=r"nowhere/base\.json: cannot write the baseline"):
        Baseline.of([result("r", {"hit@5": 1.0})]).save(tmp_path / "nowhere" / "base.json")


# --- comparing ------------------------------------------------------------------------------------------------


def test_changes_and_regressions_by_tolerance():
    base = Baseline({"recursive": {"hit@5": 0.8, "mrr": 0.6, "recall@5": 0.5, "old@1": 0.1},
                     "gone": {"hit@5": 1.0}}, queries=4)
    now = [result("recursive", {"hit@5": 0.78, "mrr": 0.55, "recall@5": 0.75, "new@1": 0.2}),
           result("fresh", {"hit@5": 0.9})]
    cmp = base.compare(now, tolerance=0.02)
    by = {c.metric: c for c in cmp.changes if c.strategy == "recursive"}
    # A drop of exactly the tolerance passes; a larger one is a regression; a rise never is.
    assert (by["hit@5"].delta, by["hit@5"].regression) == (-0.02, False)
    assert (by["mrr"].delta, by["mrr"].regression) == (-0.05, True)
    assert (by["recall@5"].delta, by["recall@5"].regression) == (0.25, False)
    # A metric on one side only is shown, never a regression.
    assert (by["new@1"].before, by["new@1"].after, by["new@1"].regression) == (None, 0.2, False)
    assert (by["old@1"].before, by["old@1"].after, by["old@1"].regression) == (0.1, None, False)
    assert [c.metric for c in cmp.regressions] == ["mrr"]
    assert cmp.missing == ["gone"] and cmp.new == ["fresh"]
    assert [c.metric for c in base.compare(now, tolerance=0.0).regressions] == ["hit@5", "mrr"]
    assert base.compare(now, tolerance=1.0).regressions == []
    d = cmp.to_dict()
    assert d["regressions"] == 1 and {"strategy": "recursive", "metric": "mrr", "before": 0.6, "after": 0.55,
                                      "delta": -0.05, "regression": True} in d["changes"]


def test_runs_that_count_passages_differently_are_not_compared(tmp_path):
    f = tmp_path / "base.json"
    Baseline.of([result("r", {"passage_iou@5": 0.4}, unit="tokens")]).save(f)
    with pytest.raises(BaselineError, match="the baseline counted passages in tokens, this run counts them in chars"):
        Baseline.load(f).check_unit("chars")
    Baseline.load(f).check_unit("tokens")


# --- the command line: errors before any work -----------------------------------------------------------------


@pytest.mark.parametrize("setup, argv, message", [
    (None, ["--baseline", "{f}"], "{f}: no such baseline file"),
    ("[1, 2", ["--baseline", "{f}"], "{f}: not a baseline file (invalid JSON at line 1: "),
    ('{"chunkscope_baseline": 1, "queries": 2, "passage_unit": "tokens", "strategies": {"r": {"hit@1": 1}}}',
     ["--baseline", "{f}"], "{f}: the baseline counted passages in tokens, this run counts them in chars"),
    (None, ["--tolerance", "-0.1"], "--tolerance must be 0 or more"),
])
def test_cli_baseline_errors_exit_2_with_one_line(tmp_path, capsys, monkeypatch, setup, argv, message):
    monkeypatch.setenv("CHUNKSCOPE_CACHE", str(tmp_path / "cache"))
    f = tmp_path / "base.json"
    if setup is not None:
        f.write_text(setup, encoding="utf-8")
    rc = main(["eval", str(SAMPLE), str(SAMPLE_QUERIES), *[a.format(f=f) for a in argv]])
    out, err = capsys.readouterr()
    assert rc == 2 and out == ""
    assert err.startswith("chunkscope: error: " + message.format(f=f)) and err.count("\n") == 1
    assert not (tmp_path / "cache" / "embeddings").exists()  # refused before the model was asked anything


# --- the command line: a docs change that costs a metric fails the job ----------------------------------------


@pytest.mark.model
def test_cli_baseline_gate_on_a_docs_change(topic_docs, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")
    queries = tmp_path / "q.jsonl"
    queries.write_text("\n".join(json.dumps(o) for o in [
        {"query": "how long should I knead bread dough", "expect": {"path": "baking.md"}},
        {"query": "how do I tack a sailing boat", "expect": {"path": "sailing.md"}},
        {"query": "when is the tax return due", "expect": {"path": "taxes.md"}},
    ]) + "\n")
    base = tmp_path / "base.json"
    argv = ["eval", str(topic_docs), str(queries), "-s", "recursive", "-k", "1"]
    assert main([*argv, "--save-baseline", str(base)]) == 0
    capsys.readouterr()
    assert Baseline.load(base).strategies["recursive"]["hit@1"] == 1.0
    # Unchanged docs: every change is zero, the gate passes.
    assert main([*argv, "--baseline", str(base)]) == 0
    out = capsys.readouterr().out
    assert "change since" in out and "no metric dropped by more than 0.0" in out and "▼" not in out
    # A new page answers the tax question more directly than the page the question expects.
    (topic_docs / "deadlines.md").write_text("# When the tax return is due\n\nThe tax return is due in April: "
                                             "when the tax return is due, file it before the deadline.\n",
                                             encoding="utf-8")
    rc = main([*argv, "--baseline", str(base)])
    out, err = capsys.readouterr()
    assert rc == 1
    assert "-0.333 ▼" in out and "regression" in out
    assert "chunkscope: recursive: hit@1 fell from 1.000 to 0.667 (-0.333), more than --tolerance 0.0" in err
    # Within a tolerance of 0.5 the same drop passes.
    assert main([*argv, "--baseline", str(base), "--tolerance", "0.5"]) == 0
    capsys.readouterr()
    assert main([*argv, "--baseline", str(base), "--json"]) == 1
    data = json.loads(capsys.readouterr().out)["baseline"]
    hit1 = next(c for c in data["changes"] if c["metric"] == "hit@1")
    assert hit1 == {"strategy": "recursive", "metric": "hit@1", "before": 1.0, "after": 0.666667, "delta": -0.333333,
                    "regression": True}
    assert data["regressions"] >= 1 and data["tolerance"] == 0.0
