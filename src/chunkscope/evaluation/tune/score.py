"""The score tune ranks configurations by: hit@k and MRR with labels; without, the probe and what needs no questions.

Without labels (*label-free*): the probe (`chunkscope.evaluation.probe.probe_sections`: every heading asked, its
section's body the answer) together with the share of text the embedding model never reads, chunks over or
under the strategy's limits and lint errors (both through `chunkscope.lint`, with the tree's ``[lint]``
settings), and chunks lint marks as hubs or orphans (the ``hub``/``orphan`` rules, given the chunks' vectors:
counted when those rules exist). `Weights` says how each part counts; a part that cannot be measured is left
out and the others rescaled.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from chunkscope.chunking.model import ChunkedDoc
from chunkscope.document.loader import DocsTree

if TYPE_CHECKING:
    from chunkscope.chunking.model import Chunk
    from chunkscope.chunking.strategy import Strategy
    from chunkscope.config.reader import Config
    from chunkscope.document.loader import Document
    from chunkscope.embedding.embedder import Embedder

#: Lint rules whose findings count as chunks over or under the limits; the hub/orphan rules.
LIMIT_RULES = ("oversize", "undersize")
GRAPH_RULES = ("hub", "orphan")


@dataclass(frozen=True)
class Weights:
    """How much each part of the label-free score counts (each part is 0-1, higher is better)."""

    probe_hit: float = 0.45
    probe_mrr: float = 0.20
    read: float = 0.15
    limits: float = 0.05
    lint: float = 0.10
    graph: float = 0.05

    def of(self, part: str) -> float:
        return float(getattr(self, part))


#: The parts of the label-free score: (field of `Weights`, what it measures), in the order they are shown.
LABEL_FREE_PARTS: tuple[tuple[str, str], ...] = (
    ("probe_hit", "probe hit@k: headings whose section body is retrieved within k"),
    ("probe_mrr", "probe MRR: 1 / rank of the first body chunk"),
    ("read", "text read: 1 - the share of the chunked text the embedding model never reads"),
    ("limits", "within limits: 1 - the share of chunks over or under the strategy's limits (lint oversize/undersize)"),
    ("lint", "lint-clean: 1 - the share of chunks with another lint error"),
    ("graph", "no hubs/orphans: 1 - the share of chunks lint marks as a hub or an orphan"),
)
#: With labelled questions: the two metrics and their weights.
LABELLED_PARTS: tuple[tuple[str, str, float], ...] = (
    ("hit", "hit@k on the questions", 0.7),
    ("mrr", "MRR on the questions", 0.3),
)


def weighted(parts: Mapping[str, float | None], weights: Mapping[str, float]) -> float:
    """The weighted mean of the parts that were measured (a part that is None is left out, the rest rescaled)."""
    known = [(weights[p], v) for p, v in parts.items() if v is not None and weights.get(p, 0) > 0]
    total = sum(w for w, _ in known)
    return sum(w * v for w, v in known) / total if total else 0.0


@dataclass(frozen=True)
class Structure:
    """What a chunking of (part of) the tree is like without any question: shares of its chunks and text."""

    chunks: int
    chars: int
    unread_chars: int | None  # None: the model's tokenizer is not available
    off_limits: int  # chunks with an oversize or undersize finding
    lint_errors: int  # chunks with another finding of error severity
    graph: int | None  # chunks marked hub or orphan; None: no such rule, or disabled
    findings: dict[str, int] = field(default_factory=dict)  # rule → findings

    def parts(self) -> dict[str, float | None]:
        n = max(self.chunks, 1)
        return {
            "read": None if self.unread_chars is None else 1.0 - (self.unread_chars / self.chars if self.chars else 0.0),
            "limits": 1.0 - min(self.off_limits, n) / n,
            "lint": 1.0 - min(self.lint_errors, n) / n,
            "graph": None if self.graph is None else 1.0 - min(self.graph, n) / n,
        }

    def to_dict(self) -> dict[str, Any]:
        return {"chunks": self.chunks, "chars": self.chars, "unread_chars": self.unread_chars,
                "off_limits": self.off_limits, "lint_errors": self.lint_errors, "hubs_orphans": self.graph,
                "findings": dict(self.findings)}


def measure_structure(documents: Sequence[Document], root: Path, chunks: Sequence[Chunk], strategy: Strategy,
                      config: Config | None, embedder: Embedder, embeddings: Any = None) -> Structure:
    """The question-free parts of one chunking: unread text (`file_report`), and lint's findings with the
    configuration's ``[lint]`` settings.

    ``embeddings`` are the chunks' vectors as lint reads them (`neighbours.StoredEmbeddings` of the chunking's
    collection: the hub and orphan rules need its neighbourhoods); without them those rules are not run and
    their part is None (not measured), never 0.
    """
    from chunkscope.chunking.reading import embed_cuts, unread_chars
    from chunkscope.lint import RULES, lint_settings, lint_tree
    from chunkscope.tokens import TokenizerError

    by_path: dict[str, list[Chunk]] = {}
    for c in chunks:
        by_path.setdefault(c.path, []).append(c)
    results = [ChunkedDoc(d, by_path.get(d.path, [])) for d in documents]
    chars = unread = 0
    unread_known = True
    for r in results:
        if not r.chunks:
            continue
        try:
            cuts = embed_cuts(r.chunks, embedder.spec) if unread_known else {}
        except TokenizerError:
            unread_known = False  # a model without a tokenizer: the part is left out, not guessed
            cuts = {}
        c_chars, c_unread = unread_chars(r.chunks, cuts)
        chars += c_chars
        unread += c_unread
    settings = lint_settings(config)
    enabled = {r for r in settings.enabled if r in RULES}
    graph_known = embeddings is not None and any(r in enabled for r in GRAPH_RULES)
    # A whole (not partial) view of these documents: lint judges them among themselves, as tune asks about them.
    view = DocsTree(root, list(documents), [], partial=False)
    report = lint_tree(view, strategy, config, results=results, embeddings=embeddings)
    off, errors, graph = set(), set(), set()
    for f in report.findings:
        where = (f.path, f.chunk_index if f.chunk_index is not None else -f.line)
        if f.rule in LIMIT_RULES:
            off.add(where)
        elif f.rule in GRAPH_RULES:
            graph.add(where)
        elif f.severity == "error":
            errors.add(where)
    return Structure(len(chunks), chars, unread if unread_known else None, len(off), len(errors),
                     len(graph) if graph_known else None, dict(report.by_rule))
