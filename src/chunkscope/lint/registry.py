"""The rule registry: every lint rule, one object each, in the order reports list them.

A new rule is one new object in `RULES` (its class says what it finds and how to fix it, and checks a document's
`LintContext`); the runner, the settings, inline directives and the command line's help all read it from here.
"""

from __future__ import annotations

from chunkscope.lint.rule import Input, Rule
from chunkscope.lint.rules.coverage import Uncovered
from chunkscope.lint.rules.duplicate import Duplicate
from chunkscope.lint.rules.embedding import EmbedTruncation
from chunkscope.lint.rules.equation import SplitEquation
from chunkscope.lint.rules.headings import DanglingHeading
from chunkscope.lint.rules.metadata import MissingMetadata
from chunkscope.lint.rules.neighbourhood import Hub, NearDuplicate, Orphan
from chunkscope.lint.rules.sizes import Oversize, Undersize
from chunkscope.lint.rules.splits import SplitAdmonition, SplitFence, SplitList, SplitTable

#: Every rule by id, in report order (ties at one position are listed in this order too).
RULES: dict[str, Rule] = {rule.id: rule for rule in (
    Oversize(),
    Undersize(),
    SplitFence(),
    SplitTable(),
    SplitList(),
    SplitAdmonition(),
    SplitEquation(),
    DanglingHeading(),
    MissingMetadata(),
    EmbedTruncation(),
    Duplicate(),
    Uncovered(),
    # Need the chunks' embeddings (`lint --embeddings`): skipped by a plain run.
    NearDuplicate(),
    Hub(),
    Orphan(),
)}


def embedding_rules() -> list[str]:
    """The rules that read the chunks' embeddings (`Input.EMBEDDINGS`): they run only with ``--embeddings``."""
    return [r.id for r in RULES.values() if Input.EMBEDDINGS in r.needs]
