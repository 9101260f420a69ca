"""Lint: every rule fires on its purpose-made fixture at the expected line and stays silent on its clean twin;
configuration, inline directives, output formats and exit codes.

The fixtures in tests/fixtures/lint/ are cut by ``cut_at_markers.py`` (a chunk ends before each ``<!-- cut -->``
line or line holding ``✂``), so each test states its boundary in the Markdown itself.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from chunkscope.chunking import registry as chunk_mod
from chunkscope.chunking.drivers import chunk_documents
from chunkscope.chunking.model import Span
from chunkscope.chunking.params import Param
from chunkscope.chunking.registry import strategy_names
from chunkscope.chunking.strategy import Limits, Strategy
from chunkscope.cli import main
from chunkscope.config.reader import ConfigError, parse_config
from chunkscope.document.loader import load_docs
from chunkscope.lint import (
    RULES,
    annotate_results,
    lint_document,
    lint_settings,
    lint_tree,
    with_warnings,
)
from chunkscope.chunking.strategies.custom import load_callable

REPO = Path(__file__).resolve().parents[1]
FIXTURES = Path(__file__).parent / "fixtures" / "lint"
CUTTER = FIXTURES / "cut_at_markers.py"
cut = load_callable(f"{CUTTER}:cut")


class MarkerStrategy(Strategy):
    """Cuts where the fixture says, with limits in words and a required ``section`` metadata field."""

    name = "markers"
    description = "test strategy: cuts at <!-- cut --> lines and lines holding ✂"
    parameters = (
        Param("max", int, 0, "maximum words (0: none)", min=0),
        Param("min", int, 0, "minimum words (0: none)", min=0),
        Param("last_short", bool, False, "the last chunk may be short"),
    )
    required_metadata = ("section",)

    @property
    def length_tokenizer(self) -> str:
        return "words"

    def limits(self) -> Limits:
        p = self.params
        return Limits("words", p["max"] or None, p["min"] or None, p["last_short"])

    def spans(self, doc) -> list[Span]:
        st = doc.structure
        out = []
        for s, e in cut(doc.text):
            inside = st.headings_in(s, e)
            path = [inside[0].text] if inside else st.heading_path_at(s)
            out.append(Span(s, e, {"section": path[-1] if path else ""}))
        return out


class BudgetStrategy(MarkerStrategy):
    """Like content-type: a per-chunk budget (chunks under a "Code" heading may be longer)."""

    name = "budget"

    def limits(self) -> Limits:
        return Limits("words", 100)

    def budget_for(self, c) -> int:
        return 100 if c.metadata.get("section") == "Code" else 10


@pytest.fixture
def markers(monkeypatch):
    """Register the marker strategy under the name ``markers`` for the command line."""
    monkeypatch.setitem(chunk_mod._BUILTIN, "markers", "tests.test_lint:MarkerStrategy")
    return "markers"


def run_lint(path: Path | str, strategy: Strategy | None = None, cfg=None, **kw):
    tree = load_docs(path)
    return lint_tree(tree, strategy or MarkerStrategy(), cfg, **kw)


def write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text, encoding="utf-8")
    return p


# --- each rule on its fixture ---------------------------------------------------------------------------------

#: rule → (strategy parameters, expected (line, column, chunk_index) of each finding in the dirty fixture)
CASES: dict[str, tuple[dict, list[tuple[int, int, int]]]] = {
    "oversize": ({"max": 30}, [(5, 1, 1)]),
    "undersize": ({"min": 10, "last_short": True}, [(5, 1, 1)]),
    "split-fence": ({}, [(8, 1, 0)]),
    "split-table": ({}, [(6, 1, 0)]),
    "split-list": ({}, [(6, 1, 0)]),
    "split-admonition": ({}, [(9, 1, 0)]),
    "split-equation": ({}, [(7, 1, 0), (15, 1, 2), (41, 1, 6)]),
    "dangling-heading": ({}, [(5, 1, 0)]),
    "missing-metadata": ({}, [(1, 1, 0)]),
    "embed-truncation": ({}, [(1, 1, 0)]),
    "duplicate": ({}, [(9, 1, 2)]),
    "uncovered": ({}, [(5, 1, 1), (13, 1, 1)]),
}


def test_every_rule_has_a_case_and_a_fixture_pair():
    # Rules that need embeddings (hub, orphan, near-duplicate) are tested in test_lint_embeddings.py.
    assert set(CASES) == {rid for rid, rule in RULES.items() if not rule.needs}
    for rule in CASES:
        assert (FIXTURES / f"{rule}.md").is_file(), rule
        assert (FIXTURES / f"{rule}.clean.md").is_file(), rule


@pytest.mark.parametrize("rule", list(CASES))
def test_rule_fires_on_dirty_fixture_only(rule):
    params, expected = CASES[rule]
    dirty = run_lint(FIXTURES / f"{rule}.md", MarkerStrategy(**params))
    got = [(f.rule, f.line, f.column, f.chunk_index) for f in dirty.findings]
    assert got == [(rule, *e) for e in expected]
    assert all(f.severity == RULES[rule].severity and f.hint == RULES[rule].hint for f in dirty.findings)
    clean = run_lint(FIXTURES / f"{rule}.clean.md", MarkerStrategy(**params))
    assert clean.findings == []
    assert clean.exit_code == 0
    assert dirty.exit_code == (1 if RULES[rule].severity == "error" else 0)


def test_messages_say_what_and_where():
    r = run_lint(FIXTURES / "oversize.md", MarkerStrategy(max=30))
    assert re.fullmatch(r"chunk 1 is \d+ words, over the limit of 30 by \d+", r.findings[0].message)
    r = run_lint(FIXTURES / "split-fence.md")
    assert "python code block at lines 5-11" in r.findings[0].message
    r = run_lint(FIXTURES / "duplicate.md")
    assert r.findings[0].message == "chunk 2 has the same text as chunk 1 at duplicate.md:5"
    r = run_lint(FIXTURES / "dangling-heading.md")
    assert "'Setup'" in r.findings[0].message


def test_embed_truncation_names_pieces_and_first_unread_line():
    from chunkscope.tokens import embed_tokenizer

    r = run_lint(FIXTURES / "embed-truncation.md")
    f = r.findings[0]
    c = r.chunks_by_path["embed-truncation.md"][0]
    tok = embed_tokenizer()
    pieces = tok.count(c.text)
    assert pieces > 256
    off = tok.truncation_offset(c.text)
    line = load_docs(FIXTURES / "embed-truncation.md").documents[0].line_of(c.start + off)
    assert f"is {pieces} word pieces" in f.message
    assert f"the text from line {line} on" in f.message
    assert 1 < line < c.end_line


def test_undersize_last_chunk_exempt_only_when_the_strategy_says_so():
    r = run_lint(FIXTURES / "undersize.md", MarkerStrategy(min=10, last_short=False))
    assert [(f.rule, f.line) for f in r.findings] == [("undersize", 5), ("undersize", 11)]


def _weird_texts(n: int, seed: int = 0) -> list[str]:
    import random

    alphabet = list("abcXYZ019 \t\n\r!.,-_'\"()[]{}") + [
        "é", "e\u0301", "\u0301", "ß", "İ", "ﬁ", "中", "文", "한", "\u00a0", "\u2028", "\x0b", "\x0c", "\x1f", "\x00",
        "\ufffd", "—", "’", "…", "\u200b", "\u202e", "😀", "ǅ", "Ⅻ", "²", "\u0085", "\u3000", "\u037e", "ᾂ",
        "internationalization", "unbelievably", "x" * 120,
    ]
    r = random.Random(seed)
    return ["".join(r.choice(alphabet) for _ in range(r.randint(0, 400))) for _ in range(n)]


def test_fast_word_piece_counts_and_truncation_are_exact(sample_docs):
    """The run-cache counter agrees with the real tokenizer on awkward text and on real chunks."""
    from chunkscope.chunking.model import Chunk
    from chunkscope.lint.rules.embedding import EmbedCheck
    from chunkscope.tokens import embed_tokenizer

    tok = embed_tokenizer()
    texts = _weird_texts(600)
    if sample_docs.is_dir():
        tree = load_docs(sample_docs)
        texts += [c.text for r in chunk_documents(tree.documents, chunk_mod.get_strategy("fixed")) for c in r.chunks]
    for limit in (256, 40):
        check = EmbedCheck("all-MiniLM-L6-v2", limit)
        assert tok._by_runs  # MiniLM is BERT-style: the fast path is the one under test
        chunks = [Chunk("p", i, 0, len(t), 1, 1, t, 0) for i, t in enumerate(texts)]
        for c, n in zip(chunks, check.counts(chunks)):
            exact = len(tok._tok.encode(c.text).ids)  # the real tokenizer over the whole text
            if n is None:
                assert exact <= limit  # skipped only when it cannot be truncated
                continue
            assert n == exact, repr(c.text)
            assert tok.truncation_offset(c.text, limit) == tok._truncation_by_encoding(c.text, limit), repr(c.text)


# --- boundaries, overlap and sizes ----------------------------------------------------------------------------


def test_overlapping_chunk_that_holds_the_whole_block_means_no_split(tmp_path):
    text = "# T\n\nIntro.\n\n<!-- overlap -->\n\n```\na\n<!-- cut -->\nb\n```\n\nEnd.\n"
    r = run_lint(write(tmp_path, "o.md", text))
    chunks = r.chunks_by_path["o.md"]
    assert len(chunks) == 2 and chunks[1].start < chunks[0].end  # they overlap
    assert r.findings == []
    # Without the overlap line the same cut splits the fence.
    r = run_lint(write(tmp_path, "n.md", text.replace("<!-- overlap -->\n\n", "")))
    assert [(f.rule, f.line) for f in r.findings] == [("split-fence", 7)]


def test_a_wider_earlier_chunk_still_holds_the_block(tmp_path):
    """Parent/child chunkers: a short chunk starting later does not split a block a longer earlier one holds."""
    p = write(tmp_path, "n.md", "# T\n\n```\na\nb\nc\n```\n\nEnd.\n")
    text = p.read_text()
    fence, inner = text.index("```"), text.index("b")

    class Nested(MarkerStrategy):
        def spans(self, doc):  # the child starts with the fence and ends inside it
            return [Span(0, len(text) - 1, {"section": "T"}), Span(fence, inner + 1, {"section": "T"})]

    assert lint_tree(load_docs(p), Nested(), None, select="split-fence").findings == []


def test_boundary_mid_line_reports_its_column(tmp_path):
    p = write(tmp_path, "m.md", "# T\n\n```\nabc def\n```\n")
    doc = load_docs(p).documents[0]
    mid = doc.text.index("def")

    class Mid(MarkerStrategy):
        def spans(self, doc):
            return [Span(0, mid, {"section": "T"}), Span(mid, len(doc.text.rstrip()), {"section": "T"})]

    r = lint_tree(load_docs(p), Mid(), None)
    assert [(f.rule, f.line, f.column) for f in r.findings] == [("split-fence", 4, 5)]


def test_split_list_not_reported_when_the_list_cannot_fit(tmp_path):
    text = (FIXTURES / "split-list.md").read_text()
    r = run_lint(write(tmp_path, "l.md", text), MarkerStrategy(max=5), select=["split-list"])
    assert r.findings == []  # the list is 9 words, over the 5-word limit: splitting it is allowed
    r = run_lint(write(tmp_path, "l.md", text), MarkerStrategy(max=50), select=["split-list"])
    assert [(f.rule, f.line) for f in r.findings] == [("split-list", 6)]
    assert "fits in one chunk (" in r.findings[0].message


def test_per_chunk_budget_for_is_used(tmp_path):
    long = " ".join(["word"] * 30)
    text = f"# Prose\n\n{long}\n\n<!-- cut -->\n\n## Code\n\n{long}\n"
    r = run_lint(write(tmp_path, "b.md", text), BudgetStrategy(), select="oversize")
    assert [(f.line, f.chunk_index) for f in r.findings] == [(1, 0)]  # chunk 1 is under "Code": 100 words
    assert "over the limit of 10" in r.findings[0].message


# --- configuration --------------------------------------------------------------------------------------------


def test_threshold_overrides_the_strategys_limits():
    cfg = parse_config({"lint": {"thresholds": {"oversize": 12, "undersize": 25}}})
    r = run_lint(FIXTURES / "oversize.clean.md", MarkerStrategy(), cfg)
    assert {f.rule for f in r.findings} == {"oversize", "undersize"}
    cfg = parse_config({"lint": {"thresholds": {"embed-truncation": 40}}})
    r = run_lint(FIXTURES / "embed-truncation.clean.md", MarkerStrategy(), cfg)
    assert [(f.rule, f.chunk_index) for f in r.findings] == [("embed-truncation", 0), ("embed-truncation", 1)]
    assert "reads 40" in r.findings[0].message


def test_severity_override_and_off():
    cfg = parse_config({"lint": {"severity": {"undersize": "error", "split-fence": "off"}}})
    r = run_lint(FIXTURES / "undersize.md", MarkerStrategy(min=10, last_short=True), cfg)
    assert [(f.rule, f.severity) for f in r.findings] == [("undersize", "error")]
    assert r.exit_code == 1
    assert run_lint(FIXTURES / "split-fence.md", MarkerStrategy(), cfg).findings == []


def test_select_and_ignore():
    cfg = parse_config({"lint": {"select": ["split-fence", "split-table"], "ignore": ["split-table"]}})
    assert lint_settings(cfg).enabled == {"split-fence"}
    assert lint_settings(cfg, select="duplicate, oversize").enabled == {"duplicate", "oversize"}
    assert lint_settings(None, ignore=["duplicate,oversize"]).enabled == set(RULES) - {"duplicate", "oversize"}
    assert run_lint(FIXTURES / "split-fence.md", ignore=["split-fence"]).findings == []


def test_per_path_ignores(tmp_path):
    src = (FIXTURES / "split-fence.md").read_text()
    write(tmp_path, "drafts/a.md", src)
    write(tmp_path, "b.md", src.replace("cut in two", "also cut in two").replace("return 2", "return 3"))
    cfg = parse_config({"lint": {"per_path_ignores": {"drafts/*.md": ["split-fence"]}}})
    r = run_lint(tmp_path, MarkerStrategy(), cfg)
    assert [(f.path, f.rule) for f in r.findings] == [("b.md", "split-fence")]
    cfg = parse_config({"lint": {"per_path_ignores": {"**/a.md": ["all"]}}})
    assert [f.path for f in run_lint(tmp_path, MarkerStrategy(), cfg).findings] == ["b.md"]


@pytest.mark.parametrize("lint_cfg, needle", [
    ({"select": ["split-fense"]}, "[lint] select: unknown rule 'split-fense'"),
    ({"ignore": "oversize"}, "[lint] ignore must be a list of rule ids"),
    ({"severity": {"nope": "error"}}, "[lint] severity: unknown rule 'nope'"),
    ({"severity": {"oversize": "fatal"}}, "severity.oversize must be one of error, warning, off"),
    ({"thresholds": {"split-fence": 3}}, "thresholds.split-fence: this rule takes no threshold"),
    ({"thresholds": {"oversize": -1}}, "thresholds.oversize must be a positive whole number"),
    ({"per_path_ignores": {"*.md": ["nope"]}}, "per_path_ignores.'*.md': unknown rule 'nope'"),
])
def test_bad_lint_config_is_one_clear_error(lint_cfg, needle):
    with pytest.raises(ConfigError) as e:
        lint_settings(parse_config({"lint": lint_cfg}, Path("chunkscope.toml")))
    assert needle in str(e.value)
    assert str(e.value).startswith("chunkscope.toml: ")


def test_unknown_rule_on_the_command_line_is_an_error(capsys):
    # The core names the rule and where it came from; the command line names its flag.
    with pytest.raises(ConfigError, match=r"^select: unknown rule 'nope' \(rules: oversize, "):
        lint_settings(None, select=["split-fence,nope"])
    assert main(["lint", str(FIXTURES / "oversize.md"), "--ignore", "nope"]) == 2
    assert "chunkscope: error: --ignore: unknown rule 'nope' (rules: oversize, " in capsys.readouterr().err


# --- inline directives ----------------------------------------------------------------------------------------


def test_inline_ignore_silences_the_next_block_only(tmp_path):
    fence = "```\na\n<!-- cut -->\nb\n```\n"
    text = f"# T\n\nIntro.\n\n<!-- chunkscope: ignore split-fence -->\n{fence}\nMiddle.\n\n{fence}"
    r = run_lint(write(tmp_path, "i.md", text))
    assert [(f.rule, f.line) for f in r.findings] == [("split-fence", 16)]  # the second fence still reports


def test_inline_ignore_all_stacked_comments_and_other_rules(tmp_path):
    fence = "```\na\n<!-- cut -->\nb\n```\n"
    text = f"# T\n\nIntro.\n\n<!-- chunkscope: ignore all -->\n{fence}"
    assert run_lint(write(tmp_path, "a.md", text)).findings == []
    text = f"# T\n\nIntro.\n\n<!-- chunkscope: ignore oversize -->\n<!-- chunkscope: ignore split-table, split-fence -->\n\n{fence}"
    assert run_lint(write(tmp_path, "b.md", text)).findings == []
    text = f"# T\n\nIntro.\n\n<!-- chunkscope: ignore split-table -->\n{fence}"
    assert [f.rule for f in run_lint(write(tmp_path, "c.md", text)).findings] == ["split-fence"]


def test_ignore_file_and_mdx_comment(tmp_path):
    src = (FIXTURES / "split-fence.md").read_text()
    p = write(tmp_path, "f.md", src + "\n<!-- chunkscope: ignore-file split-fence -->\n")
    assert run_lint(p).findings == []
    p = write(tmp_path, "g.mdx", src.replace("```python", "{/* chunkscope: ignore split-fence */}\n\n```python"))
    assert run_lint(p).findings == []


def test_directive_inside_a_code_block_is_an_example_not_a_directive(tmp_path):
    src = (FIXTURES / "split-fence.md").read_text()
    p = write(tmp_path, "e.md", src.replace("def second():", "# <!-- chunkscope: ignore-file split-fence -->\ndef second():"))
    assert [f.rule for f in run_lint(p).findings] == ["split-fence"]


def test_unknown_rule_in_a_directive_is_noted(tmp_path):
    p = write(tmp_path, "u.md", "# T\n\n<!-- chunkscope: ignore split-fense -->\nText.\n")
    r = run_lint(p)
    assert r.notes == ["u.md:3: unknown rule 'split-fense' in a chunkscope comment (rules: " + ", ".join(RULES) + ")"]


# --- tree-wide behaviour and the chunks' warnings -------------------------------------------------------------


def test_comments_are_invisible_but_text_beside_them_is_not(tmp_path):
    """A chunk ending with a heading and then only comments dangles; visible text after the comment does not."""
    head = "# T\n\nIntro.\n\n## Setup\n\n"
    tail = "\n\n<!-- cut -->\n\nBody.\n"
    for between, dangles in (("<!-- a note -->", True), ("<!-- a -->\n<!-- b -->", True),
                             ("<!-- a --> visible <!-- b -->", False), ("<!-- a --> visible", False)):
        r = run_lint(write(tmp_path, "d.md", head + between + tail), select="dangling-heading")
        assert [f.line for f in r.findings] == ([5] if dangles else []), between


def test_duplicate_across_files_names_the_first(tmp_path):
    write(tmp_path, "01-a.md", "# A\n\nShared paragraph of text.\n")
    write(tmp_path, "02-b.md", "# A\n\nShared paragraph of text.\n")
    r = run_lint(tmp_path)
    assert [(f.path, f.rule, f.line) for f in r.findings] == [("02-b.md", "duplicate", 1)]
    assert r.findings[0].message.endswith("at 01-a.md:1")


def test_with_warnings_marks_copies_once_after_the_strategys_own():
    doc = load_docs(FIXTURES / "split-fence.md").documents[0]
    chunks = MarkerStrategy().chunk(doc)
    chunks[0].warnings.append("split-fence")  # as a strategy that knows it split a fence would
    findings = lint_document(doc, chunks, MarkerStrategy(), parse_config({"lint": {"thresholds": {"undersize": 500}}}))
    assert [f.rule for f in findings] == ["undersize", "undersize", "split-fence"]
    marked = with_warnings(chunks, findings)
    assert [c.warnings for c in marked] == [["split-fence", "undersize"], ["undersize"]]
    assert [c.warnings for c in chunks] == [["split-fence"], []]  # the caller's chunks are untouched
    assert [c.warnings for c in with_warnings(marked, findings)] == [["split-fence", "undersize"], ["undersize"]]


def test_lint_chunks_each_document_once(markers, monkeypatch):
    calls = []
    original = MarkerStrategy.chunk

    def counting(self, doc):
        calls.append(doc.path)
        return original(self, doc)

    monkeypatch.setattr(MarkerStrategy, "chunk", counting)
    assert main(["lint", str(FIXTURES), "-s", markers]) == 1
    assert sorted(calls) == sorted(set(calls)) and len(calls) == len(list(FIXTURES.glob("*.md")))


def test_chunk_jsonl_shows_lint_rule_ids(markers, capsys):
    assert main(["chunk", str(FIXTURES / "split-table.md"), "-s", markers, "--format", "jsonl"]) == 0
    rows = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert rows[0]["warnings"] == ["split-table"] and rows[1]["warnings"] == []


# --- the command line -----------------------------------------------------------------------------------------


def test_exit_codes(markers, capsys, tmp_path):
    assert main(["lint", str(FIXTURES / "split-fence.clean.md"), "-s", markers]) == 0
    assert main(["lint", str(FIXTURES / "split-fence.md"), "-s", markers]) == 1
    assert main(["lint", str(FIXTURES / "split-list.md"), "-s", markers]) == 0  # warnings only
    capsys.readouterr()
    assert main(["lint", str(tmp_path / "missing"), "-s", markers]) == 2
    assert "no such file or folder" in capsys.readouterr().err
    assert main(["lint", str(FIXTURES / "split-fence.md"), "-s", markers, "-p", "max=-3"]) == 2
    assert "max must be in >= 0" in capsys.readouterr().err
    assert main(["lint", str(FIXTURES / "split-fence.md"), "-s", markers, "--select", "nope"]) == 2
    assert "--select: unknown rule 'nope'" in capsys.readouterr().err
    cfg = write(tmp_path, "chunkscope.toml", '[lint]\nseverity = { "split-fnce" = "off" }\n')
    assert main(["lint", str(FIXTURES / "split-fence.md"), "-s", markers, "--config", str(cfg)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "unknown rule 'split-fnce'" in err
    # Severity override through a config file turns a warning into a failing error.
    cfg = write(tmp_path, "c2.toml", '[lint]\nseverity = { split-list = "error" }\n')
    assert main(["lint", str(FIXTURES / "split-list.md"), "-s", markers, "--config", str(cfg)]) == 1


@pytest.mark.parametrize("fmt", ["text", "json", "github"])
def test_files_lint_could_not_check_fail_the_run_in_every_format(markers, capsys, tmp_path, fmt):
    """A CI job must not pass on docs lint never looked at: an unreadable file is an error finding (exit 1, the
    exit-code table's "failures in the documents") and is listed in the output."""
    docs = tmp_path / "docs"
    write(tmp_path, "docs/good.md", "# Good\n\nSome text.\n")
    (docs / "latin1.md").write_bytes(b"caf\xe9\n")
    assert main(["lint", str(docs), "-s", markers, "--format", fmt]) == 1
    out = capsys.readouterr().out
    where = f"{docs / 'latin1.md'}"
    if fmt == "json":
        rows = json.loads(out)
        assert {(r["path"], r["rule"], r["severity"]) for r in rows} >= {(where, "load-problem", "error")}
    elif fmt == "github":
        assert f"::error file={where},line=1,col=1,title=load-problem::invalid-utf8: " in out
        assert out.rstrip().endswith("1 file not checked")
        assert "chunkscope lint: 1 error," in out.splitlines()[-1]  # counted as the error it is printed as
    else:
        assert f"{where}:1:1: error load-problem invalid-utf8: " in out
        summary = out.splitlines()[-1]
        assert "1 file with load problems" in summary and ": 1 error," in summary
        assert any(line.split()[:3] == ["1", "load-problem", "error"] for line in out.splitlines())  # the table


def test_a_file_the_strategy_cannot_chunk_fails_the_run(capsys, tmp_path):
    write(tmp_path, "docs/a.md", "# A\n\nText.\n")
    cutter = write(tmp_path, "bad_cutter.py", "def cut(text):\n    return ['words that are not in the file']\n")
    assert main(["lint", str(tmp_path / "docs"), "-s", "custom", "-p", f"callable={cutter}:cut"]) == 2
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith(f"{tmp_path / 'docs' / 'a.md'}:1:1: error not-chunked ") and "not in the document verbatim" in out[0]
    assert out[-1].endswith("1 not chunked")


def test_a_tree_without_markdown_is_a_usage_error(markers, capsys, tmp_path):
    (tmp_path / "empty").mkdir()
    assert main(["lint", str(tmp_path / "empty"), "-s", markers]) == 2
    assert capsys.readouterr().err.strip() == f"chunkscope: error: {tmp_path / 'empty'}: no .md or .mdx files found"
    (tmp_path / "one.md").write_bytes(b"\xff\xfe\x00bad")
    assert main(["stats", str(tmp_path / "one.md")]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[-1] == f"chunkscope: error: {tmp_path / 'one.md'}: no file could be read" and len(err) == 2


def test_text_format(markers, capsys):
    assert main(["lint", str(FIXTURES / "split-fence.md"), "-s", markers]) == 1
    out = capsys.readouterr().out.splitlines()
    path = str(FIXTURES / "split-fence.md")
    assert out[0] == f"{path}:8:1: error split-fence chunk 0 ends inside the python code block at lines 5-11; the rest continues in the next chunk"
    assert any(re.fullmatch(r"\s+1\s+split-fence\s+error", x) for x in out)
    assert out[-1] == "markers: 1 file, 2 chunks: 1 error, 0 warnings"


def test_text_paths_join_the_docs_argument(markers, capsys, tmp_path, monkeypatch):
    write(tmp_path, "docs/sub/a.md", (FIXTURES / "split-fence.md").read_text())
    monkeypatch.chdir(tmp_path)
    assert main(["lint", "docs", "-s", markers]) == 1
    assert capsys.readouterr().out.startswith(os.path.join("docs", "sub", "a.md") + ":8:1: error split-fence ")


def test_json_format_schema(markers, capsys):
    assert main(["lint", str(FIXTURES), "-s", markers, "--format", "json", "--select", "split-fence,dangling-heading"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert isinstance(data, list) and data
    types = {"path": str, "line": int, "column": int, "rule": str, "severity": str, "message": str, "chunk_index": int, "hint": str}
    for obj in data:
        assert set(obj) == set(types)
        assert all(isinstance(obj[k], t) for k, t in types.items())
        assert obj["rule"] in ("split-fence", "dangling-heading") and obj["severity"] in ("error", "warning")
        assert obj["line"] >= 1 and obj["column"] >= 1
    assert {(Path(o["path"]).name, o["line"], o["rule"]) for o in data} >= {("split-fence.md", 8, "split-fence"), ("dangling-heading.md", 5, "dangling-heading")}


def test_github_format_and_escaping(markers, capsys, tmp_path):
    p = write(tmp_path, "we,ird:name.md", "# T\n\nIntro.\n\n## 100% done\x1b[31m\n\n<!-- cut -->\n\nText.\n")
    assert main(["lint", str(p), "-s", markers, "--format", "github"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[-1] == "chunkscope lint: 0 errors, 1 warning"
    cmd = lines[0]
    m = re.fullmatch(r"::warning file=([^,]*),line=(\d+),col=(\d+),title=([^:]+)::(.*)", cmd)
    assert m, cmd
    assert m.group(1) == str(p).replace(":", "%3A").replace(",", "%2C")
    assert (m.group(2), m.group(3), m.group(4)) == ("5", "1", "dangling-heading")
    assert "100%25 done" in m.group(5) and "\x1b" not in cmd and "%" not in m.group(5).replace("%25", "")
    assert "(fix: " in m.group(5)
    assert main(["lint", str(FIXTURES / "split-table.md"), "-s", markers, "--format", "github"]) == 1
    assert capsys.readouterr().out.startswith("::error file=")


def test_control_characters_never_reach_the_terminal(markers, capsys, tmp_path):
    p = write(tmp_path, "c.md", "# T\n\nIntro.\n\n## Evil \x1b]0;x\x07 \u202e title\n\n<!-- cut -->\n\nText.\n")
    for fmt in ("text", "json", "github"):
        main(["lint", str(p), "-s", markers, "--format", fmt])
        out = capsys.readouterr().out
        assert "\x1b" not in out and "\x07" not in out and "\u202e" not in out, fmt


def test_subprocess_python_m_chunkscope_lint():
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"))
    target = FIXTURES / "split-fence.md"
    args = [sys.executable, "-m", "chunkscope", "lint", str(target), "-s", "custom", "-p", f"callable={CUTTER}:cut"]
    proc = subprocess.run(args, capture_output=True, text=True, env=env, cwd=REPO, timeout=120)
    assert proc.returncode == 1, proc.stderr
    assert f"{target}:8:1: error split-fence " in proc.stdout
    proc = subprocess.run(args[:4] + [str(FIXTURES / "split-fence.clean.md")] + args[5:], capture_output=True,
                          text=True, env=env, cwd=REPO, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    proc = subprocess.run([sys.executable, "-m", "chunkscope", "lint", str(FIXTURES / "nope.md")], capture_output=True,
                          text=True, env=env, cwd=REPO, timeout=120)
    assert proc.returncode == 2 and proc.stderr.startswith("chunkscope: error: ") and "Traceback" not in proc.stderr


def test_core_lint_imports_no_ui_library():
    code = "import sys, chunkscope.lint; bad = [m for m in ('rich', 'textual', 'torch', 'sentence_transformers') if m in sys.modules]; print(bad)"
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert out.stdout.strip() == "[]", out.stderr


# --- the real strategies --------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", [n for n in strategy_names() if n != "custom"])
def test_real_strategies_findings_agree_with_their_chunks(name, sample_docs):
    """Every finding points into its document at a real chunk, and oversize is exactly the over-budget chunks."""
    tree = load_docs(sample_docs)
    strategy = chunk_mod.get_strategy(name)
    results = chunk_documents(tree.documents, strategy)
    report = lint_tree(tree, strategy, None, results=results)
    lim = strategy.limits()
    budget_for = getattr(strategy, "budget_for", None)
    for r in annotate_results(results, report):
        lines = r.doc.text.count("\n") + 1
        mine = [f for f in report.findings if f.path == r.doc.path]
        for f in mine:
            assert 1 <= f.line <= lines and 0 <= f.chunk_index < len(r.chunks)
            assert f.rule in r.chunks[f.chunk_index].warnings
        expected = set()
        for c in r.chunks:
            cap = budget_for(c) if budget_for else lim.max
            if cap is not None and lim.tokenizer == strategy.length_tokenizer and c.tokens > cap:
                expected.add(c.index)
        if lim.tokenizer == strategy.length_tokenizer:
            assert {f.chunk_index for f in mine if f.rule == "oversize"} == expected
    assert report.errors == sum(1 for f in report.findings if f.severity == "error")


def test_lint_tree_stops_between_documents_when_cancelled(sample_docs):
    """The app's tree worker passes a `CancelToken` polling the worker: a stale run ends early instead of linting
    every file, with the one `Cancelled` every long task raises."""
    from chunkscope.progress import Cancelled, CancelToken

    tree = load_docs(sample_docs)
    asked: list[int] = []

    def stop_at_third() -> bool:
        asked.append(1)
        return len(asked) >= 3

    with pytest.raises(Cancelled):
        lint_tree(tree, chunk_mod.get_strategy("recursive"), None, cancel=CancelToken(poll=stop_at_third))
    assert len(asked) == 3  # checked once per document, and not past the stop
    assert lint_tree(tree, chunk_mod.get_strategy("recursive"), None, cancel=CancelToken()).findings
