"""What lint reports: the severities, one `Finding`, and the `LintReport` of a run over a tree."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from chunkscope.chunking.model import Chunk

ERROR, WARNING, OFF = "error", "warning", "off"
SEVERITIES = (ERROR, WARNING, OFF)


@dataclass(slots=True)
class Finding:
    """One problem: where (1-based line and column), which rule, how bad, what and how to fix it."""

    path: str
    line: int
    column: int
    rule: str
    severity: str
    message: str
    chunk_index: int | None
    hint: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def advice(self) -> str:
        """What the author can do: the rule's hint, then how to silence it where the finding is intended."""
        silence = f"if this is intended, put {ignore_comment(self.rule, self.path)} above the block"
        return f"{self.hint}; {silence}" if self.hint else silence


def ignore_comment(rule: str, path: str) -> str:
    """The comment that silences ``rule`` for the next block of the file at ``path``: MDX cannot hold an HTML
    comment, so an ``.mdx`` file gets the JSX form."""
    if path.lower().endswith(".mdx"):
        return f"{{/* chunkscope: ignore {rule} */}}"
    return f"<!-- chunkscope: ignore {rule} -->"


@dataclass
class LintReport:
    """Everything a lint run found, with counts for the summary and the chunks it looked at."""

    findings: list[Finding]
    by_rule: dict[str, int]
    errors: int
    warnings: int
    #: The chunks lint looked at, by document path, exactly as they were given (lint never changes them).
    chunks_by_path: dict[str, list[Chunk]]
    #: Documents the strategy could not chunk (path → reason); they were not linted.
    failed: dict[str, str] = field(default_factory=dict)
    #: Remarks about the documents themselves, e.g. an unknown rule id in an inline comment.
    notes: list[str] = field(default_factory=list)
    #: The findings again, by the path of their document as the tree names it (``Finding.path`` is the path as
    #: shown, which a caller's ``display`` may have changed): what `annotate_results` matches chunks by.
    findings_by_doc: dict[str, list[Finding]] = field(default_factory=dict)

    @property
    def exit_code(self) -> int:
        """0 when no finding is an error, 1 otherwise (what CI reads)."""
        return 1 if self.errors else 0
