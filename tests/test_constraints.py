"""Cross-parameter constraints: declared once per strategy, enforced the same way by the library, the CLI, the
config file and the app's parameter bar, each time with one line naming both parameters and their values."""

from __future__ import annotations

import itertools
import shutil
from pathlib import Path
from typing import ClassVar

import pytest

from chunkscope.chunking.model import Span
from chunkscope.chunking.params import Param, ParamError
from chunkscope.chunking.registry import get_strategy, list_strategies, strategy_class
from chunkscope.chunking.strategy import Strategy
from chunkscope.cli import main
from chunkscope.config.reader import ConfigError, load_config, resolve_strategy

REPO = Path(__file__).resolve().parents[1]
SAMPLE = REPO / "sample_docs"


# --- the library: every contradictory pair refused, with one line --------------------------------------------


@pytest.mark.parametrize("name, params, message", [
    ("section", {"max_tokens": 10, "min_tokens": 50}, "section: min_tokens (50) must not exceed max_tokens (10)"),
    ("section-sentence", {"max_tokens": 10, "min_tokens": 50},
     "section-sentence: min_tokens (50) must not exceed max_tokens (10)"),
    ("fixed", {"chunk_size": 100, "chunk_overlap": 100}, "fixed: chunk_overlap (100) must be below chunk_size (100)"),
    ("recursive", {"chunk_size": 64, "chunk_overlap": 80}, "recursive: chunk_overlap (80) must be below chunk_size (64)"),
    ("header-window", {"target_words": 900}, "header-window: target_words (900) must not exceed max_words (800)"),
    ("header-window", {"overlap_words": 600}, "header-window: overlap_words (600) must be below target_words (600)"),
    ("header-window", {"min_words": 801}, "header-window: min_words (801) must not exceed max_words (800)"),
    ("header-window", {"lint_min_words": 901},
     "header-window: lint_min_words (901) must not exceed hard_max_words (900)"),
    ("content-type", {"theoretical_tokens": 150},
     "content-type: overlap_tokens (200) must be below theoretical_tokens (150)"),
    ("content-type", {"code_tokens": 200}, "content-type: overlap_tokens (200) must be below code_tokens (200)"),
    ("content-type", {"mixed_tokens": 100}, "content-type: overlap_tokens (200) must be below mixed_tokens (100)"),
])
def test_contradictory_parameters_are_refused_in_one_line(name, params, message):
    with pytest.raises(ParamError) as err:
        get_strategy(name, **params)
    assert str(err.value) == message


def test_defaults_never_contradict_each_other():
    for cls in list_strategies():
        if cls.name == "custom":
            continue  # needs a callable; it declares no pair
        s = cls()
        for c in cls.constraints:
            assert c.holds(s.params), (cls.name, c)


def test_every_size_pair_of_the_builtins_is_declared():
    """The pairs a strategy's parameters form (a minimum and its maximum, an overlap and what it overlaps)."""
    declared = {cls.name: {(c.left, c.op, c.right) for c in cls.constraints} for cls in list_strategies()}
    assert declared["section"] == {("min_tokens", "<=", "max_tokens")}
    assert declared["section-sentence"] == {("min_tokens", "<=", "max_tokens")}
    assert declared["fixed"] == declared["recursive"] == {("chunk_overlap", "<", "chunk_size")}
    assert declared["header-window"] == {("target_words", "<=", "max_words"), ("overlap_words", "<", "target_words"),
                                         ("min_words", "<=", "max_words"), ("lint_min_words", "<=", "hard_max_words")}
    assert declared["content-type"] == {("overlap_tokens", "<", f"{t}_tokens") for t in ("theoretical", "code", "mixed")}
    assert declared["custom"] == set()


def test_every_setting_of_every_builtin_search_space_is_a_valid_strategy():
    tunable = [cls for cls in list_strategies() if cls.name != "custom"]
    assert tunable and all(cls.search_space for cls in tunable)
    for cls in tunable:
        axes = cls.search_axes()
        assert len(axes) == len(cls.search_space)
        for combo in itertools.product(*axes):
            params = {k: v for setting in combo for k, v in setting.items()}
            assert get_strategy(cls.name, **params).params.items() >= params.items()


def test_a_search_space_over_an_unknown_name_or_a_bad_value_is_refused_when_the_class_is_defined():
    with pytest.raises(TypeError, match="search_space names 'size'"):
        type("Typo", (Strategy,), {"name": "typo", "parameters": (Param("chunk_size", int, 10, "size", min=1),),
                                   "search_space": {"size": (1, 2)}})
    with pytest.raises(TypeError, match="chunk_size must be in >= 1, got 0"):
        type("Zero", (Strategy,), {"name": "zero", "parameters": (Param("chunk_size", int, 10, "size", min=1),),
                                   "search_space": {"chunk_size": (0, 5)}})
    with pytest.raises(TypeError, match="is not a setting of a, b"):
        type("Joint", (Strategy,), {"name": "joint",
                                    "parameters": (Param("a", int, 1, "a"), Param("b", int, 1, "b"), Param("c", int, 1, "c")),
                                    "search_space": {("a", "b"): ({"a": 2, "c": 3},)}})
    assert Strategy.search_space == {} and Strategy.search_axes() == []


def test_a_minimum_left_at_its_default_follows_a_lower_maximum():
    """Only values someone gave can contradict: ``max_tokens=40`` alone lowers the default minimum to 40."""
    for name in ("section", "section-sentence"):
        s = get_strategy(name, max_tokens=40)
        assert s.params["min_tokens"] == 40 and s.limits().min == 40
        assert get_strategy(name, max_tokens=400).params["min_tokens"] == 50  # a default that fits stays


def test_a_declared_constraint_needs_no_validate_method():
    from chunkscope.chunking.params import Constraint

    class Lines(Strategy):
        name: ClassVar[str] = "lines-test"
        parameters: ClassVar[tuple[Param, ...]] = (Param("lo", int, 1, "fewest"), Param("hi", int, 10, "most"))
        constraints: ClassVar[tuple[Constraint, ...]] = (Constraint("lo", "<=", "hi"),)

        def spans(self, doc):
            return [Span(0, len(doc.text))]

    with pytest.raises(ParamError, match=r"^lines-test: lo \(11\) must not exceed hi \(10\)$"):
        Lines(lo=11)
    assert Lines(lo=10).params["lo"] == 10
    # A pair over a name the class does not declare is the class's bug: refused when the class is defined.
    with pytest.raises(TypeError, match="'nope'"):
        type("Bad", (Lines,), {"constraints": (Constraint("lo", "<", "nope"),)})


def test_check_constraints_reads_every_value_as_given():
    """What the app's parameter bar asks: the values on screen, all of them, with no default yielding."""
    from chunkscope.chunking.params import ConstraintError

    cls = strategy_class("section-sentence")
    shown = dict(cls().params, max_tokens=10)
    with pytest.raises(ConstraintError) as err:
        cls.check_constraints(shown)
    assert err.value.names == ("min_tokens", "max_tokens")
    assert str(err.value) == "section-sentence: min_tokens (50) must not exceed max_tokens (10)"
    cls.check_constraints(dict(shown, min_tokens=5))


# --- the command line and the config file ---------------------------------------------------------------------


def test_cli_refuses_a_contradiction_with_exit_2_and_one_line(capsys):
    argv = ["chunk", str(SAMPLE), "-s", "section", "--param", "max_tokens=10", "--param", "min_tokens=50"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err == "chunkscope: error: section: min_tokens (50) must not exceed max_tokens (10)\n"


def _tree_with_config(tmp_path: Path, toml: str) -> Path:
    docs = tmp_path / "docs"
    docs.mkdir()
    shutil.copy(SAMPLE / "intro.md", docs / "intro.md")
    (docs / "chunkscope.toml").write_text(toml, encoding="utf-8")
    return docs


def test_a_contradictory_preset_names_the_config_file(tmp_path, capsys):
    docs = _tree_with_config(tmp_path, '[presets.tiny]\nstrategy = "section"\nmax_tokens = 10\nmin_tokens = 50\n')
    with pytest.raises(ConfigError) as err:
        load_config(docs)
    assert str(err.value) == (f"{docs / 'chunkscope.toml'}: [presets.tiny]: "
                              "section: min_tokens (50) must not exceed max_tokens (10)")
    assert main(["chunk", str(docs)]) == 2
    out = capsys.readouterr().err
    assert out.count("\n") == 1 and "chunkscope.toml: [presets.tiny]: section: min_tokens (50)" in out


def test_a_preset_contradicting_the_strategy_defaults_of_the_same_file_is_refused(tmp_path):
    toml = ('[strategies.section]\nmin_tokens = 100\n\n'
            '[presets.small]\nstrategy = "section"\nmax_tokens = 80\n')
    docs = _tree_with_config(tmp_path, toml)
    with pytest.raises(ConfigError, match=r"chunkscope\.toml: \[presets\.small\]: section: min_tokens \(100\) "
                                          r"must not exceed max_tokens \(80\)$"):
        load_config(docs)


def test_a_command_line_value_against_a_config_value_says_where_the_other_came_from(tmp_path, capsys):
    docs = _tree_with_config(tmp_path, "[strategies.section]\nmin_tokens = 100\n")
    cfg = load_config(docs)
    with pytest.raises(ParamError) as err:
        resolve_strategy(cfg, "section", {"max_tokens": "80"})
    assert str(err.value) == (f"section: min_tokens (100) must not exceed max_tokens (80) "
                              f"(min_tokens = 100 is set in {docs / 'chunkscope.toml'})")
    assert main(["chunk", str(docs), "-s", "section", "-p", "max_tokens=80"]) == 2
    assert capsys.readouterr().err.count("\n") == 1


# --- the app: the bar says so and keeps the last valid chunking -----------------------------------------------


@pytest.mark.anyio
async def test_the_parameter_bar_refuses_max_below_min_and_keeps_the_cut():
    pytest.importorskip("textual")
    from textual.widgets import Input, Label

    from chunkscope.tui.widgets.strategy_bar import StrategyBar
    from tests.pilot import make_app, wait_for

    app = make_app(strategy="section-sentence")
    async with app.run_test(size=(160, 45)) as pilot:
        ex = app.explorer
        bar = ex.query_one(StrategyBar)
        await wait_for(pilot, lambda: ex.result is not None and ex.result.complete and bar.editor_ready,
                       what="the explorer")
        box = ex.query_one("#param-max_tokens", Input)
        box.focus()
        await pilot.pause()
        box.value = "10"
        await pilot.press("enter")
        await pilot.pause(0.3)
        status = str(ex.query_one("#param-status", Label).render())
        assert "section-sentence: min_tokens (50) must not exceed max_tokens (10)" in status
        assert box.has_class("-invalid") and ex.query_one("#param-min_tokens", Input).has_class("-invalid")
        # Nothing was re-cut: the chunks in view are still those of max_tokens 512.
        assert bar.resolved.params["max_tokens"] == 512 and ex.resolved.params["max_tokens"] == 512
        assert ex.result.resolved.params["max_tokens"] == 512
        # Lowering the minimum too makes the pair valid: it is applied.
        min_box = ex.query_one("#param-min_tokens", Input)
        min_box.value = "5"
        min_box.focus()
        await pilot.press("enter")
        await wait_for(pilot, lambda: ex.result.resolved.params["max_tokens"] == 10 and ex.result.complete,
                       what="the cut at max_tokens 10")
        assert ex.result.resolved.params["min_tokens"] == 5
        assert "must not exceed" not in str(ex.query_one("#param-status", Label).render())
