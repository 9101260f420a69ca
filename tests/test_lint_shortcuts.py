"""Lint's shortcuts give the findings of the long way (issue 22, ``lint --embeddings`` at 20,000 chunks).

- A text met twice in one run is parsed once: the copy's split, heading and equation rules read the first
  document's parse (`LintRun.structure_of`), and find what its own parse finds.
- ``lint --embeddings`` cuts the tree once: the index is written from lint's own chunks (`Retriever.use_chunked`),
  whose embedder token counts embed-truncation then reads, and the report is the one of the retriever cutting
  the tree again.
- The text report prints its lines in batches, byte for byte what one print per line gave.
"""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from rich.text import Text

from chunkscope.chunking.registry import get_strategy
from chunkscope.cli import main
from chunkscope.cli.commands import lint as lint_cmd
from chunkscope.document.loader import load_docs
from chunkscope.lint import ERROR, WARNING, Finding, LintReport, lint_tree
from chunkscope.safe_text import visible

FIXTURES = Path(__file__).parent / "fixtures"


def versioned_tree(tmp_path: Path) -> Path:
    """A docs tree holding two versions of the same pages (the textbook and the lint fixtures of split blocks),
    as a versioned site does: every text twice, at two paths."""
    docs = tmp_path / "docs"
    for version in ("v1", "v2"):
        shutil.copytree(FIXTURES / "textbook" / "docs", docs / version)
        for f in sorted((FIXTURES / "lint").glob("split-*.md")):
            shutil.copy(f, docs / version / f.name)
    return docs


def as_rows(findings: list[Finding]) -> list[tuple[object, ...]]:
    return [(f.path, f.line, f.column, f.rule, f.severity, f.message, f.chunk_index) for f in findings]


def test_a_text_met_twice_is_parsed_once_and_linted_the_same(tmp_path: Path) -> None:
    docs = versioned_tree(tmp_path)
    # recursive never parses the Markdown, so every parse here is lint's; 20 tokens cut inside fences, tables,
    # admonitions and equations.
    strategy = get_strategy("recursive", chunk_size=20, chunk_overlap=0)
    tree = load_docs(docs)
    shared = lint_tree(tree, strategy, None)
    by_path = {d.path: d for d in tree.documents}
    copies = [p for p in by_path if p.startswith("v2/")]
    assert copies and all(by_path["v1/" + p[3:]].analysis.structure_parsed for p in copies)
    assert not any(by_path[p].analysis.structure_parsed for p in copies)  # read from the first version's parse
    # The long way: every document parsed on its own before lint runs.
    fresh = load_docs(docs)
    for d in fresh.documents:
        assert d.structure is not None
    own = lint_tree(fresh, strategy, None)
    assert as_rows(shared.findings) == as_rows(own.findings)
    rules = {f.rule for f in shared.findings}
    assert {"split-fence", "split-table", "split-admonition", "split-equation", "dangling-heading"} <= rules
    # And the two versions' block findings are the same, line for line (duplicate names the first version).
    v1 = sorted((f.path[3:], f.line, f.rule, f.message) for f in shared.findings
                if f.rule != "duplicate" and f.path.startswith("v1/"))
    v2 = sorted((f.path[3:], f.line, f.rule, f.message) for f in shared.findings
                if f.rule != "duplicate" and f.path.startswith("v2/"))
    assert v1 == v2 and v1


LONG = " ".join(f"Borrowing rule {i} says a reference must never outlive the value it points to." for i in range(40))
EMBED_DOCS = {
    "baking.md": "# Baking\n\nKnead the dough for ten minutes, then let it rise in a warm place for an hour.\n",
    "bread-again.md": "# Bread\n\nKnead the dough for ten minutes, then let it rise in a warm place for one hour.\n",
    "taxes.md": "# Taxes\n\nFile the return before the April deadline to avoid a penalty.\n",
    "long.md": f"# Ownership\n\n{LONG}\n\n## More\n\n{LONG}\n",
}


@pytest.mark.model
def test_lint_embeddings_cuts_the_tree_once_and_finds_what_cutting_it_twice_found(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    from chunkscope.chunking import drivers
    from chunkscope.retrieval.retriever import Retriever

    docs = tmp_path / "docs"
    docs.mkdir()
    for name, text in EMBED_DOCS.items():
        (docs / name).write_text(text, encoding="utf-8")
    cuts: list[int] = []
    cut = drivers.chunk_documents

    def counted(*args: Any, **kwargs: Any) -> Any:  # every cut of the tree: lint's and the retriever's
        cuts.append(1)
        return cut(*args, **kwargs)

    monkeypatch.setattr(drivers, "chunk_documents", counted)
    argv = ["lint", str(docs), "--embeddings", "-s", "recursive", "--format", "json"]
    assert main(argv) == 0
    once = json.loads(capsys.readouterr().out)
    assert cuts == [1]  # lint's cut alone: the index was written from lint's chunks
    # The long way: the retriever cuts the tree itself and counts its own embedder tokens.
    monkeypatch.setattr(Retriever, "use_chunked", lambda self, results: None)
    cuts.clear()
    assert main(argv) == 0
    twice = json.loads(capsys.readouterr().out)
    assert cuts == [1, 1]
    assert once == twice
    rules = {f["rule"] for f in once}
    assert {"embed-truncation", "near-duplicate"} <= rules


def report_of(findings: list[Finding]) -> LintReport:
    return LintReport(findings, {}, 0, len(findings), {"a.md": []}, {}, [], {})


@pytest.mark.parametrize("terminal", [False, True])
def test_the_text_report_prints_in_batches_what_one_print_per_line_gave(monkeypatch: pytest.MonkeyPatch,
                                                                        terminal: bool) -> None:
    findings = [Finding(f"dir/p{i}.md", i + 1, 3, "split-fence" if i % 2 else "embed-truncation",
                        ERROR if i % 3 == 0 else WARNING, f"message {i} with\ttab, [markup] and :emoji: ü ✓", i)
                for i in range(7)]

    def console(stream: Any = None) -> Console:
        return Console(file=out, highlight=False, markup=False, emoji=False, soft_wrap=False,
                       force_terminal=terminal, width=60)

    out = io.StringIO()
    monkeypatch.setattr(lint_cmd, "console", console)
    monkeypatch.setattr(lint_cmd, "PRINT_BATCH", 3)  # batches of 3, 3 and 1
    lint_cmd.write_text(report_of(findings), "recursive", [])
    batched = out.getvalue()
    # One print per finding line, as before.
    out = io.StringIO()
    con = console()
    for f in findings:
        line = Text(visible(f"{f.path}:{f.line}:{f.column}: ", oneline=True))
        line.append(f.severity, style="bold red" if f.severity == ERROR else "yellow")
        line.append(f" {f.rule} ", style="cyan")
        line.append(visible(f.message, oneline=True))
        con.print(line, soft_wrap=True)
    expected_lines = out.getvalue()
    assert batched.startswith(expected_lines)
    assert batched.count("\n") == len(findings) + 1 + 2 + 1  # the lines, a blank, a line per rule, the summary
    assert ("\x1b[" in batched) == terminal
