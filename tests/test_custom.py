"""custom: a user's chunker as module:function (or file.py:function); strings located, pairs checked."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from chunkscope.chunking.params import ParamError
from chunkscope.chunking.registry import get_strategy
from chunkscope.chunking.strategy import Limits
from chunkscope.document.loader import decode_document
from chunkscope.chunking.strategies.custom import CustomChunkerError, CustomStrategy

TEXT = "---\ntitle: T\n---\n# Title\n\nFirst paragraph.\n\nSecond paragraph.\n\nFirst paragraph.\n"


def doc(text: str = TEXT, path: str = "guide/page.md"):
    d, _ = decode_document(text.encode("utf-8"), path)
    assert d is not None
    return d


# Chunkers importable as tests.test_custom:<name> (tests/ is a package and pytest puts the repo root on sys.path).
def paragraphs(text: str) -> list[str]:
    return [p.strip() for p in text.split("\n\n") if p.strip()]


def halves(text: str) -> list[tuple[int, int]]:
    return [(0, len(text) // 2), (len(text) // 2, len(text))]


@pytest.fixture
def chunker_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest):
    """Write a chunker module with a name unique to the test, importable from a temporary sys.path entry."""

    def write(source: str) -> str:
        name = "cs_chunker_" + "".join(ch if ch.isalnum() else "_" for ch in request.node.name)
        (tmp_path / f"{name}.py").write_text(textwrap.dedent(source), encoding="utf-8")
        monkeypatch.syspath_prepend(str(tmp_path))
        request.addfinalizer(lambda: sys.modules.pop(name, None))  # never reuse a cached module elsewhere
        return name

    return write


def strategy_for(chunker_module, body: str, **params) -> CustomStrategy:
    name = chunker_module(body)
    return CustomStrategy(callable=f"{name}:chunk", **params)


# --- strings ------------------------------------------------------------------------------------------------------


def test_strings_are_located_in_order_as_exact_slices(chunker_module) -> None:
    s = strategy_for(chunker_module, """
        def chunk(text):
            return [p.strip() for p in text.split("\\n\\n") if p.strip()]
    """)
    d = doc()
    chunks = s.chunk(d)
    assert [c.text for c in chunks] == ["---\ntitle: T\n---\n# Title", "First paragraph.", "Second paragraph.", "First paragraph."]
    for c in chunks:
        assert c.text == d.text[c.start:c.end]
    # The repeated paragraph is found again after the previous chunk, not at its first occurrence.
    assert chunks[3].start == d.text.rindex("First paragraph.") != chunks[1].start
    assert [c.start_line for c in chunks] == [1, 6, 8, 10]


def test_overlapping_strings_are_located_from_just_after_the_previous_start(chunker_module) -> None:
    s = strategy_for(chunker_module, """
        def chunk(text):
            return [text[i:i + 6] for i in range(0, len(text) - 3, 3)]
    """, overlap=True)
    d = doc("ab ab ab ab ab")
    chunks = s.chunk(d)
    assert [c.start for c in chunks] == [0, 3, 6, 9]
    assert chunks[1].overlap == (3, 6)
    assert all(c.text == d.text[c.start:c.end] for c in chunks)


def test_an_overlap_the_chunker_did_not_declare_is_an_error(chunker_module) -> None:
    # Built-ins overlap only by their overlap parameter; a custom chunker says so with overlap = true.
    s = strategy_for(chunker_module, """
        def chunk(text):
            return [(0, 8), (5, 14)]
    """)
    with pytest.raises(CustomChunkerError, match=r"chunk 2 \(5, 14\) overlaps chunk 1 \(0, 8\); set overlap = true"):
        s.chunk(doc("ab ab ab ab ab"))


def test_a_repeated_string_is_found_after_the_previous_chunk(chunker_module) -> None:
    assert [c.start for c in strategy_for(chunker_module, """
        def chunk(text):
            return ["ab ab ab", "ab ab ab"]
    """).chunk(doc("ab ab ab ab ab ab"))] == [0, 9]


def test_a_chunk_inside_the_previous_one_is_an_error_even_with_overlap(chunker_module) -> None:
    s = strategy_for(chunker_module, """
        def chunk(text):
            return [(0, 10), (2, 6)]
    """, overlap=True)
    with pytest.raises(CustomChunkerError, match=r"chunk 2 \(2, 6\) lies inside chunk 1 \(0, 10\)"):
        s.chunk(doc("ab ab ab ab ab"))


@pytest.mark.parametrize("raised", ["SystemExit(0)", "SystemExit(3)", "GeneratorExit()"])
def test_a_base_exception_from_the_chunker_is_its_failure_never_an_exit(chunker_module, raised: str) -> None:
    s = strategy_for(chunker_module, f"""
        def chunk(text):
            raise {raised}
    """)
    with pytest.raises(CustomChunkerError, match=r"^custom: .*:chunk raised (SystemExit|GeneratorExit)"):
        s.chunk(doc())


def test_a_module_exiting_at_import_is_a_one_line_error(chunker_module) -> None:
    name = chunker_module("""
        raise SystemExit(0)
    """)
    with pytest.raises(ParamError, match=r"importing .* failed: SystemExit"):
        CustomStrategy(callable=f"{name}:chunk")


def test_identical_strings_take_successive_occurrences(chunker_module) -> None:
    s = strategy_for(chunker_module, """
        def chunk(text):
            return ["ab", "ab", "", "ab"]
    """)
    assert [c.start for c in s.chunk(doc("ab ab ab"))] == [0, 3, 6]


def test_string_not_in_the_text_names_the_chunk_and_its_start(chunker_module) -> None:
    s = strategy_for(chunker_module, """
        def chunk(text):
            return ["First paragraph.", "This sentence was rewritten by the chunker and is nowhere in the source"]
    """)
    with pytest.raises(CustomChunkerError) as err:
        s.chunk(doc())
    msg = str(err.value)
    assert msg.startswith("custom: chunk 2 ")
    assert "'This sentence was rewritten by the chunk'…" in msg
    assert "\n" not in msg
    assert isinstance(err.value, ParamError)


def test_string_found_only_before_the_previous_chunk_says_so(chunker_module) -> None:
    s = strategy_for(chunker_module, """
        def chunk(text):
            return ["Second paragraph.", "# Title"]
    """)
    with pytest.raises(CustomChunkerError, match=r"chunk 2 .*occurs earlier"):
        s.chunk(doc())


# --- pairs --------------------------------------------------------------------------------------------------------


def test_pairs_become_chunks(chunker_module) -> None:
    s = strategy_for(chunker_module, """
        def chunk(text):
            return [(0, 5), [3, 10], (10, len(text))]
    """, overlap=True)
    d = doc()
    chunks = s.chunk(d)
    assert [(c.start, c.end) for c in chunks] == [(0, 5), (3, 10), (10, len(d.text))]
    assert chunks[1].overlap == (3, 5)


def test_numpy_integers_are_accepted(chunker_module) -> None:
    s = strategy_for(chunker_module, """
        import numpy as np
        def chunk(text):
            return [(np.int64(0), np.int32(4))]
    """)
    assert [(c.start, c.end) for c in s.chunk(doc())] == [(0, 4)]


@pytest.mark.parametrize(
    "result, message",
    [
        ("[(0, 10**6)]", r"chunk 1: \(0, 1000000\) is not a range of the text"),
        ("[(5, 5)]", r"chunk 1: \(5, 5\) is not a range"),
        ("[(-1, 4)]", r"chunk 1: \(-1, 4\) is not a range"),
        ("[(0, 4), (0.5, 6)]", r"chunk 2: start and end must be integers"),
        ("[(True, 4)]", r"chunk 1: start and end must be integers"),
        ("[(0, 4, 5)]", r"chunk 1 must be a string or a \(start, end\) pair"),
        ("[(4, 8), (2, 6)]", r"chunk 2 starts at 2, before chunk 1"),
        ("['First', (0, 3)]", r"mixes strings and \(start, end\) pairs \(chunk 2"),
        ("None", r"must return a list of strings or of \(start, end\) pairs, got NoneType"),
        ("'a string'", r"got str"),
        ("42", r"got int"),
    ],
)
def test_bad_results_are_clear_errors(chunker_module, result: str, message: str) -> None:
    s = strategy_for(chunker_module, f"""
        def chunk(text):
            return {result}
    """)
    with pytest.raises(CustomChunkerError, match=message) as err:
        s.chunk(doc())
    assert str(err.value).startswith("custom: ") and "\n" not in str(err.value)


def test_empty_result_is_no_chunks(chunker_module) -> None:
    s = strategy_for(chunker_module, """
        def chunk(text):
            return iter([])
    """)
    assert s.chunk(doc()) == []


def test_chunker_exception_is_reported_in_one_line(chunker_module) -> None:
    s = strategy_for(chunker_module, """
        def chunk(text):
            raise RuntimeError("tokenizer\\nexploded")
    """)
    with pytest.raises(CustomChunkerError, match=r"^custom: cs_chunker_\w+:chunk raised RuntimeError: tokenizer exploded$"):
        s.chunk(doc())


# --- loading the callable ---------------------------------------------------------------------------------------


def test_chunker_in_this_test_module_by_dotted_name() -> None:
    d = doc()
    chunks = get_strategy("custom", callable="tests.test_custom:paragraphs").chunk(d)
    assert [c.text for c in chunks][1:3] == ["First paragraph.", "Second paragraph."]
    pairs = get_strategy("custom", callable="tests.test_custom:halves").chunk(d)
    assert [(c.start, c.end) for c in pairs] == halves(d.text)


def test_chunker_from_a_file_path(tmp_path: Path) -> None:
    f = tmp_path / "my_chunker.py"
    f.write_text("class Chunker:\n    @staticmethod\n    def split(text):\n        return [text[:5]]\n", encoding="utf-8")
    s = CustomStrategy(callable=f"{f}:Chunker.split")
    assert [c.text for c in s.chunk(doc())] == ["---\nt"]


def test_tokenizer_parameter_sets_counts_and_limits(chunker_module) -> None:
    s = strategy_for(chunker_module, """
        def chunk(text):
            return ["First paragraph.", "Second paragraph."]
    """, tokenizer="words")
    assert s.length_tokenizer == "words" and s.limits() == Limits("words", None)
    assert [c.tokens for c in s.chunk(doc())] == [2, 2]
    assert CustomStrategy(callable="tests.test_custom:paragraphs").limits() == Limits("cl100k_base", None)


@pytest.mark.parametrize(
    "spec, message",
    [
        ("", r"^custom: callable is required"),
        ("   ", r"^custom: callable is required"),
        ("no_colon_here", r"^custom: callable must look like module:function"),
        (":f", r"^custom: callable must look like module:function"),
        ("json:", r"^custom: callable must look like module:function"),
        ("no_such_module_for_chunkscope:f", r"^custom: cannot import 'no_such_module_for_chunkscope': No module named"),
        ("json:no_such_function", r"^custom: 'json' has no 'no_such_function'"),
        ("json:__doc__", r"^custom: json:__doc__ is a str, not a function"),
        ("/nonexistent/dir/chunker.py:f", r"^custom: no such file"),
    ],
)
def test_bad_callable_specs_are_one_line_errors(spec: str, message: str) -> None:
    with pytest.raises(ParamError, match=message) as err:
        CustomStrategy(callable=spec)
    assert "\n" not in str(err.value)


def test_module_failing_at_import_is_a_one_line_error(chunker_module) -> None:
    name = chunker_module("""
        import this_dependency_is_missing_xyz
        def chunk(text):
            return []
    """)
    with pytest.raises(ParamError, match=rf"^custom: cannot import '{name}': No module named 'this_dependency_is_missing_xyz'"):
        CustomStrategy(callable=f"{name}:chunk")


def test_module_with_a_syntax_error_is_a_one_line_error(tmp_path: Path) -> None:
    f = tmp_path / "broken.py"
    f.write_text("def chunk(text):\n    return [\n", encoding="utf-8")
    with pytest.raises(ParamError, match=r"^custom: importing '.*broken\.py' failed: SyntaxError") as err:
        CustomStrategy(callable=f"{f}:chunk")
    assert "\n" not in str(err.value)


def test_bad_tokenizer_is_refused() -> None:
    with pytest.raises(ParamError, match="tokenizer"):
        CustomStrategy(callable="tests.test_custom:paragraphs", tokenizer="bpe-9000")
