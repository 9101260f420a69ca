"""Lint: the seeds' validation checklists as rules an author can run in CI.

Each rule (`rule.Rule`, one object in `registry.RULES`) looks at the chunks a strategy produced for a document,
next to the document's parsed structure (`context.LintContext`), and reports a `Finding` at the line an author
should look at: the line where a boundary cuts a block, or the first line of the offending chunk.

Lint never chunks on its own account when it is handed chunks, and never changes them: `lint_tree` and
`lint_document` return findings, and `annotate_results` / `with_warnings` give copies of the chunks marked with
the findings' rule ids. Everything here is headless: no rich, no textual.

Configuration (``[lint]`` in chunkscope.toml)::

    [lint]
    select = ["oversize", "split-fence"]        # only these rules (default: all)
    ignore = ["duplicate"]                      # never these
    severity = { undersize = "error", duplicate = "off" }
    thresholds = { oversize = 400, undersize = 50, embed-truncation = 256 }
    per_path_ignores = { "drafts/*.md" = ["oversize"] }

Inline, in a document: ``<!-- chunkscope: ignore split-fence, oversize -->`` silences those rules (or ``all``)
for the next block; ``<!-- chunkscope: ignore-file duplicate -->`` anywhere silences them for the whole file.
In MDX, ``{/* chunkscope: ignore split-fence */}`` does the same.
"""

from __future__ import annotations

from chunkscope.lint.annotate import annotate_results, with_warnings
from chunkscope.lint.context import ChunkEmbeddings, LintContext, LintRun
from chunkscope.lint.findings import ERROR, OFF, SEVERITIES, WARNING, Finding, LintReport
from chunkscope.lint.registry import RULES, embedding_rules
from chunkscope.lint.rule import Input, Rule
from chunkscope.lint.runner import lint_document, lint_tree, run_rules
from chunkscope.lint.settings import LintSettings, UnknownRule, lint_settings

__all__ = [
    "ERROR",
    "OFF",
    "RULES",
    "SEVERITIES",
    "WARNING",
    "ChunkEmbeddings",
    "Finding",
    "Input",
    "LintContext",
    "LintReport",
    "LintRun",
    "LintSettings",
    "Rule",
    "UnknownRule",
    "annotate_results",
    "embedding_rules",
    "lint_document",
    "lint_settings",
    "lint_tree",
    "run_rules",
    "with_warnings",
]
