"""The shape of a lint rule: one object carrying its metadata and a `check` of one document's `LintContext`.

A rule states what it needs beyond the document and its chunks (`Input`); the runner skips a rule whose inputs a
run does not have, so a rule that compares chunks' embeddings runs only when the caller supplied them.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from enum import Enum
from typing import TYPE_CHECKING, ClassVar

if TYPE_CHECKING:
    from chunkscope.lint.context import LintContext
    from chunkscope.lint.findings import Finding


class Input(Enum):
    """Something a rule may need that not every lint run has; ``value`` is the word used in messages."""

    #: One vector per chunk (`context.ChunkEmbeddings`): a model's view of the chunks, not only their text.
    EMBEDDINGS = "embeddings"


class Rule(ABC):
    """One lint rule: a stable id, its default severity, what it finds, what an author should do about it.

    A rule is a subclass that sets the metadata as class attributes and implements `check`; its one instance goes
    into the registry (`chunkscope.lint.registry.RULES`). ``check`` reads the document through the context,
    creates findings with `LintContext.finding` (which applies the configured severity) and never changes the
    chunks.
    """

    id: ClassVar[str]
    severity: ClassVar[str]
    summary: ClassVar[str]
    hint: ClassVar[str]
    #: What ``[lint] thresholds`` sets for this rule, or None when it takes no threshold.
    threshold: ClassVar[str | None] = None
    #: Inputs beyond the document and its chunks; a run without one of them skips the rule.
    needs: ClassVar[frozenset[Input]] = frozenset()

    @abstractmethod
    def check(self, ctx: LintContext) -> list[Finding]:
        """Every finding of this rule in the context's document, in the order the rule meets them."""

    def __repr__(self) -> str:
        return f"<lint rule {self.id}>"
