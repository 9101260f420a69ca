"""Lint as a runner of rule objects: a new rule is one object, lint never changes the chunks it is given, rules
that need embeddings run only when a caller supplies them, and a run reports progress and stops when cancelled.

Everything goes through the real parts: the registry, ``lint_tree``, the settings, inline directives, the command
line (`chunkscope.cli.main`) and the app's tree run (`tui.session.chunk_tree`, which has no Textual in it).
"""

from __future__ import annotations

import copy
import json
from contextlib import contextmanager
from pathlib import Path

import pytest

from chunkscope.chunking.drivers import chunk_documents
from chunkscope.chunking.registry import get_strategy
from chunkscope.cli import main
from chunkscope.config.reader import parse_config
from chunkscope.document.loader import load_docs
from chunkscope.lint import (
    RULES,
    WARNING,
    Input,
    LintContext,
    Rule,
    annotate_results,
    lint_document,
    lint_settings,
    lint_tree,
)
from chunkscope.progress import Cancelled, CancelToken, Phase
from tests.test_lint import FIXTURES, MarkerStrategy, write


class Todo(Rule):
    """A rule written the way a contributor would add one: metadata and a check, nothing else."""

    id = "todo"
    severity = WARNING
    summary = "a chunk still holds a TODO"
    hint = "finish the section"

    def check(self, ctx: LintContext):
        out = []
        for c in ctx.chunks:
            at = ctx.text.find("TODO", c.start, c.end)
            if at >= 0:
                out.append(ctx.finding(self, at, f"chunk {c.index} holds a TODO", c.index))
        return out


class NearNeighbour(Rule):
    """A rule that compares what a model makes of the chunks: it needs their embeddings."""

    id = "near-neighbour"
    severity = WARNING
    summary = "a chunk's vector is the zero vector"
    hint = "give the chunk some text"
    needs = frozenset({Input.EMBEDDINGS})

    def check(self, ctx: LintContext):
        return [ctx.chunk_finding(self, c, f"chunk {c.index} has a zero vector") for c in ctx.chunks
                if not any(ctx.embeddings.vector(ctx.doc.path, c.index))]


class ZeroVectors:
    """Embeddings that are all zero (any `ChunkEmbeddings` will do: the rule only asks for vectors)."""

    def __init__(self) -> None:
        self.asked: list[tuple[str, int]] = []

    def vector(self, path: str, index: int):
        self.asked.append((path, index))
        return [0.0, 0.0]


TODO_DOC = "# T\n\nIntro.\n\n<!-- cut -->\n\n## Later\n\nTODO: write this.\n\n<!-- cut -->\n\n## Last\n\nTODO again.\n"


# --- a rule is one object -------------------------------------------------------------------------------------


def test_a_new_rule_is_one_object_in_the_registry(monkeypatch, tmp_path, capsys):
    monkeypatch.setitem(RULES, "todo", Todo())
    p = write(tmp_path, "t.md", TODO_DOC)
    report = lint_tree(load_docs(p), MarkerStrategy(), None, select="todo")
    assert [(f.rule, f.line, f.chunk_index, f.severity, f.hint) for f in report.findings] == [
        ("todo", 9, 1, "warning", "finish the section"), ("todo", 15, 2, "warning", "finish the section")]
    assert report.by_rule == {"todo": 2}
    # The settings, the inline directives and the command line know it from the same object.
    cfg = parse_config({"lint": {"severity": {"todo": "error"}}})
    assert lint_settings(cfg).severity_of("todo") == "error"
    assert lint_tree(load_docs(p), MarkerStrategy(), cfg, select="todo").errors == 2
    silenced = write(tmp_path, "s.md", TODO_DOC.replace("TODO: write", "<!-- chunkscope: ignore todo -->\nTODO: write"))
    assert [f.line for f in lint_tree(load_docs(silenced), MarkerStrategy(), None, select="todo").findings] == [16]
    with pytest.raises(SystemExit):
        main(["lint", "--help"])
    assert any(line.split()[:2] == ["todo", "warning"] for line in capsys.readouterr().out.splitlines())


def test_the_registry_holds_one_object_per_rule_with_its_metadata():
    assert list(RULES) == ["oversize", "undersize", "split-fence", "split-table", "split-list", "split-admonition",
                           "split-equation", "dangling-heading", "missing-metadata", "embed-truncation", "duplicate",
                           "uncovered", "near-duplicate", "hub", "orphan"]
    for rid, rule in RULES.items():
        assert isinstance(rule, Rule) and rule.id == rid
        assert rule.severity in ("error", "warning") and rule.summary and rule.hint
        assert type(rule).check is not Rule.check, f"{rid} has no check of its own"
    assert {r.id for r in RULES.values() if r.threshold} == {"oversize", "undersize", "embed-truncation"}


# --- lint never changes its input -----------------------------------------------------------------------------


def test_lint_tree_leaves_the_chunks_it_is_given_alone_and_annotating_marks_copies():
    tree = load_docs(FIXTURES)
    strategy = MarkerStrategy(max=30)
    results = chunk_documents(tree.documents, strategy)
    before = copy.deepcopy([r.chunks for r in results])
    report = lint_tree(tree, strategy, None, results=results)
    assert {"embed-truncation", "split-fence", "oversize"} <= set(report.by_rule)
    assert [r.chunks for r in results] == before  # no warning added, no word-piece count filled in
    marked = annotate_results(results, report)
    assert [r.chunks for r in results] == before
    for r, m in zip(results, marked):
        expected = {(f.chunk_index, f.rule) for f in report.findings_by_doc.get(r.doc.path, [])}
        got = {(c.index, w) for c in m.chunks for w in c.warnings if w not in r.chunks[c.index].warnings}
        assert got == expected, r.doc.path


def test_lint_document_leaves_the_chunks_alone():
    doc = load_docs(FIXTURES / "embed-truncation.md").documents[0]
    chunks = MarkerStrategy().chunk(doc)
    before = copy.deepcopy(chunks)
    assert [f.rule for f in lint_document(doc, chunks, MarkerStrategy())] == ["embed-truncation"]
    assert chunks == before


def test_chunk_command_marks_the_chunks_it_prints(capsys):
    """``chunkscope chunk`` shows lint's rule ids in each chunk's warnings, from the marked copies."""
    assert main(["chunk", str(FIXTURES / "embed-truncation.md"), "-s", "custom", "-p",
                 f"callable={FIXTURES / 'cut_at_markers.py'}:cut", "--format", "jsonl"]) == 0
    rows = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert [r["warnings"] for r in rows] == [["embed-truncation"]]
    assert rows[0]["embed_tokens"] > 256


# --- rules that need what a run may not have ------------------------------------------------------------------


def test_a_rule_that_needs_embeddings_runs_only_when_they_are_given(monkeypatch, tmp_path):
    monkeypatch.setitem(RULES, "near-neighbour", NearNeighbour())
    p = write(tmp_path, "n.md", TODO_DOC)
    tree = load_docs(p)
    # Without embeddings the rule is skipped, not failed, and the others run as always.
    assert lint_tree(tree, MarkerStrategy(), None, select="near-neighbour").findings == []
    assert lint_tree(tree, MarkerStrategy(min=100), None, select="near-neighbour,undersize").by_rule == {"undersize": 3}
    vectors = ZeroVectors()
    report = lint_tree(tree, MarkerStrategy(), None, select="near-neighbour", embeddings=vectors)
    assert [(f.rule, f.chunk_index) for f in report.findings] == [("near-neighbour", i) for i in range(3)]
    assert vectors.asked == [("n.md", 0), ("n.md", 1), ("n.md", 2)]


# --- progress and cancellation --------------------------------------------------------------------------------


def test_lint_tree_reports_progress_per_document(sample_docs):
    tree = load_docs(sample_docs)
    seen = []
    lint_tree(tree, get_strategy("recursive"), None, on_progress=seen.append)
    n = len(tree.documents)
    assert n > 2
    assert [(p.phase, p.done, p.total, p.unit) for p in seen] == [(Phase.LINT, i, n, "files") for i in range(1, n + 1)]


def test_lint_command_stops_at_ctrl_c_without_a_partial_report(monkeypatch, capsys):
    """The first Ctrl-C cancels the token `graceful_interrupt` hands to lint: exit 130, and no report that would
    read as a clean run."""
    from chunkscope.cli.commands import lint as cmd_lint

    @contextmanager
    def pressed_ctrl_c():
        token = CancelToken()
        token.cancel()
        yield token

    monkeypatch.setattr(cmd_lint, "graceful_interrupt", pressed_ctrl_c)
    assert main(["lint", str(FIXTURES), "-s", "custom", "-p", f"callable={FIXTURES / 'cut_at_markers.py'}:cut"]) == 130
    out, err = capsys.readouterr()
    assert out == "" and err.strip().startswith("chunkscope: error: interrupted")


def test_the_apps_tree_run_marks_its_entries_and_stops_when_cancelled(sample_docs):
    from chunkscope.config.reader import load_config
    from chunkscope.tui.headless import session

    tree = load_docs(sample_docs)
    config = load_config(sample_docs)
    resolved = session.resolve(config, "recursive")
    result = session.chunk_tree(list(tree.documents), resolved, config, tree=tree)
    assert result is not None and result.lint is not None and result.lint.findings
    for path, found in result.lint.findings_by_doc.items():
        entry = result.entries[path]
        assert {f.rule for f in found} <= {w for c in entry.chunks for w in c.warnings}, path
    # Lint is the last step: a run that becomes stale while linting ends with nothing (no half-linted result).
    polls = []

    def stale_during_lint() -> bool:
        polls.append(1)
        return len(polls) > len(tree.documents) + 3

    assert session.chunk_tree(list(tree.documents), resolved, config, stale_during_lint, tree=tree) is None
    with pytest.raises(Cancelled):
        lint_tree(tree, resolved, config, cancel=CancelToken(poll=lambda: True))


# --- a file alone is judged in its tree only when the tree is marked ------------------------------------------


def _two_pages(docs: Path) -> None:
    shared = "## Safety\n\nAlways keep the emergency stop within reach when the arm is powered and moving.\n"
    write(docs, "01-first.md", f"# First\n\nIntro one.\n\n{shared}")
    write(docs, "02-second.md", f"# Second\n\nIntro two.\n\n{shared}")


@pytest.mark.parametrize("marker, expected", [
    (None, []),  # the file's own folder is its root only for want of a marker: its other pages are not its tree
    ("chunkscope.toml", ["01-first.md"]),
    ("../docusaurus.config.js", ["01-first.md"]),  # a Docusaurus site: its docs/ folder is the root
])
def test_a_file_alone_looks_for_duplicates_in_earlier_pages_only_under_a_marked_root(tmp_path, marker, expected):
    docs = tmp_path / "site" / "docs"
    _two_pages(docs)
    if marker:
        (docs / marker).resolve().write_text("", encoding="utf-8")
    tree = load_docs(docs / "02-second.md")
    assert tree.root == docs
    found = lint_tree(tree, get_strategy("section-sentence"), None, select="duplicate").findings
    assert [f.message.rsplit(" at ", 1)[1].split(":")[0] for f in found] == expected


@pytest.mark.parametrize("name, params", [
    ("recursive", {}), ("recursive", {"chunk_size": 128, "chunk_overlap": 40}), ("fixed", {"chunk_size": 96}),
    ("content-type", {"overlap_tokens": 120}),
])
def test_a_chunks_split_fence_mark_agrees_with_lint(corpus, name, params) -> None:
    """The chunk table's split-fence mark (the strategy's) and lint's split-fence finding judge alike: with
    overlapping chunks, a fence one chunk cuts and another holds whole is split for neither (a user saw the mark
    in `chunk` and found nothing with `lint --select split-fence`)."""
    from chunkscope.chunking.drivers import chunk_documents
    from chunkscope.chunking.model import SPLIT_FENCE
    from chunkscope.chunking.registry import get_strategy
    from chunkscope.document.loader import load_docs
    from chunkscope.lint import lint_document

    strategy = get_strategy(name, **params)
    marked = 0
    for r in chunk_documents(load_docs(corpus).documents, strategy):
        flagged = {c.index for c in r.chunks if SPLIT_FENCE in c.warnings}
        reported = [f for f in lint_document(r.doc, r.chunks, strategy) if f.rule == SPLIT_FENCE]
        assert bool(flagged) == bool(reported), (r.doc.path, sorted(flagged), [(f.line, f.message) for f in reported])
        marked += len(flagged)
    if params.get("chunk_size") == 128:  # not a test that passes on nothing: small windows leave real splits
        assert marked
