"""Tune: search strategies, their main parameters, ``embed_prefix`` and the search mode within a time budget.

**The space.** For each strategy a few values of its main parameters (`DEFAULT_SPACE`: sizes, overlap, heading
levels), each `embed_prefix` of `PREFIXES`, each search mode. A *chunking* is a strategy with its parameters;
its search modes share one collection and its vectors, so measuring a chunking measures every mode of it at the
cost of the questions alone. Each strategy's defaults (the *seed*) are always in the space.

**The search: successive halving** (Jamieson & Talwalkar, 2016). *Rungs* of growing fidelity: the first measures
chunkings on a small part of the tree (whole documents in a fixed pseudo-random order, each rung's part inside
the next), each rung passes the best third (`ETA`) of what it measured to the next, bigger part, and the last
runs on the whole tree. The wall-time budget is shared equally between the rungs (what one leaves, the next
gets): a rung starts no new chunking once its share is spent, and the search stops, mid-chunking if need be,
when the whole budget is. Nothing is embedded twice: every vector comes from the embedding cache when it is
there, and a chunking promoted to a bigger part embeds only that part's new documents (its collection keeps the
rest). The best seed of a rung goes on to the next as a reference, whatever its rank, so the winner is compared
with it on the same questions.

**The score.** With labelled questions: ``0.7 × hit@k + 0.3 × MRR``. Without (*label-free*): the probe
(`tuning.probe_sections`: every heading asked, its section's body the answer) together with what needs no
questions: the share of text the embedding model never reads, chunks over or under the strategy's limits and
lint errors (both through `chunkscope.lint`, with the tree's ``[lint]`` settings), and chunks lint marks as hubs
or orphans (the ``hub``/``orphan`` rules, given the chunks' vectors: counted when those rules exist). `Weights`
says how each part counts; a part that cannot be measured is left out and the others rescaled. Without labels
the search modes are dense and hybrid: the probe's questions are the answers' own heading words, which flatters
matching words alone, so pure keyword search is searched only with labelled questions (or when asked for).

Stopping (the `CancelToken`) keeps what was measured: the result holds every trial so far and the best of them.
Headless: no rich/textual; torch only through the embedder.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import random
import re
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from chunkscope.chunking.chunk import ChunkedDoc, ParamError, Strategy, strategy_class
from chunkscope.config.reader import ConfigError
from chunkscope.document.loader import DocsTree
from chunkscope.evaluation.evaluate import QueriesError, QueryCase, Region, resolve_region, score_retriever
from chunkscope.progress import (
    Cancelled,
    CancelToken,
    Phase,
    Progress,
    ProgressFn,
    format_seconds,
)
from chunkscope.retrieval.search_modes import SEARCH_MODES, check_search_mode
from chunkscope.evaluation.tuning import (
    DEFAULT_LEVELS,
    ProbeSet,
    _run_config,
    even_sample,
    probe_sections,
    toml_value,
)

if TYPE_CHECKING:
    from chunkscope.chunking.chunk import Chunk
    from chunkscope.config.reader import Config
    from chunkscope.document.loader import Document
    from chunkscope.embedding.embedder import Embedder
    from chunkscope.evaluation.evaluate import EvalResult
    from chunkscope.retrieval.store import Store

#: Each rung keeps the best 1/ETA of what it measured.
ETA = 3
#: At most this many rungs (parts of the tree 1/9, 1/3, all).
MAX_RUNGS = 3
#: A rung on part of the tree asks at least this many probe questions (fewer would rank by noise).
MIN_RUNG_QUESTIONS = 16
#: Probe questions asked per rung at most, spread evenly (they cost a search each, per search mode).
MAX_RUNG_QUESTIONS = 300
#: A part of the tree must be at most this share of the next part's text to be worth a rung of its own.
MAX_PART_SHARE = 0.5
PREFIXES = ("none", "title", "heading", "breadcrumb")
#: Search modes searched without labelled questions (see the module docstring for why not keyword).
LABEL_FREE_MODES = ("dense", "hybrid")
LABELLED_MODES = SEARCH_MODES
#: Lint rules whose findings count as chunks over or under the limits; the hub/orphan rules.
LIMIT_RULES = ("oversize", "undersize")
GRAPH_RULES = ("hub", "orphan")


def _axis(name: str, values: Iterable[Any]) -> list[dict[str, Any]]:
    return [{name: v} for v in values]


#: Per strategy, its axes: each a list of parameter settings (several parameters that move together, such as
#: header-window's word counts, are one setting); a chunking is one setting of every axis. An empty setting
#: keeps the defaults.
DEFAULT_SPACE: dict[str, list[list[dict[str, Any]]]] = {
    "recursive": [_axis("chunk_size", (128, 256, 384, 512)), _axis("chunk_overlap", (0, 50))],
    "fixed": [_axis("chunk_size", (128, 256, 384, 512)), _axis("chunk_overlap", (0, 50))],
    "section-sentence": [_axis("max_tokens", (128, 192, 256, 384, 512)), _axis("boundary_levels", (2, 3, 4))],
    "section": [_axis("level", (2, 3, 4)), _axis("overlap_tokens", (0, 50))],
    "header-window": [[
        {"max_words": 150, "target_words": 120, "overlap_words": 20, "min_words": 40, "lint_min_words": 40},
        {"max_words": 300, "target_words": 220, "overlap_words": 40, "min_words": 80, "lint_min_words": 80},
        {"max_words": 500, "target_words": 380, "overlap_words": 60, "min_words": 100},
        {},
    ]],
    "content-type": [[
        {"theoretical_tokens": 256, "code_tokens": 384, "mixed_tokens": 320, "overlap_tokens": 64},
        {"theoretical_tokens": 512, "code_tokens": 768, "mixed_tokens": 640, "overlap_tokens": 128},
        {},
    ], _axis("split_level", (2, 3))],
}


# --- the space --------------------------------------------------------------------------------------------------


def _fmt(v: Any) -> str:
    return json.dumps(v, ensure_ascii=False) if isinstance(v, (list, dict, tuple)) else str(v)


@dataclass(frozen=True)
class Chunking:
    """A strategy and the parameter values tune chose for it (the rest are its defaults, or the configured
    ``[strategies.NAME]`` ones). ``seed``: nothing chosen, the strategy as it is."""

    strategy: str
    params: tuple[tuple[str, Any], ...] = ()
    seed: bool = False
    #: The parameters its label shows (the first of each setting that moves several together); all when empty.
    shown: tuple[str, ...] = field(default=(), compare=False)

    @property
    def param_dict(self) -> dict[str, Any]:
        return dict(self.params)

    @property
    def label(self) -> str:
        if self.seed:
            return f"{self.strategy} (defaults)"
        names = self.shown or tuple(k for k, _ in self.params)
        words = [f"{'prefix' if k == 'embed_prefix' else k}={_fmt(v)}" for k, v in self.params
                 if k in names and not (k == "embed_prefix" and v == "none")]
        return " ".join([self.strategy, *words])


@dataclass(frozen=True)
class Candidate:
    """A chunking and how questions are matched against it."""

    chunking: Chunking
    search: str

    @property
    def label(self) -> str:
        return f"{self.chunking.label} · {self.search}"

    def preset(self) -> dict[str, Any]:
        """The ``[presets.NAME]`` table that gives this configuration."""
        return {"strategy": self.chunking.strategy, **self.chunking.param_dict, "search": self.search}


def search_space(strategies: Sequence[str] | None = None, prefixes: Sequence[str] = PREFIXES,
                 space: Mapping[str, Sequence[Sequence[Mapping[str, Any]]]] | None = None) -> list[Chunking]:
    """Every chunking of the space: the seeds first (in ``strategies`` order), then every combination of each
    strategy's axes with each prefix. A combination equal to a seed is kept once, as the seed."""
    space = DEFAULT_SPACE if space is None else space
    names = list(strategies) if strategies is not None else list(space)
    for name in names:
        strategy_class(name)  # an unknown name fails here, listing the known ones
    seeds = [Chunking(name, seed=True) for name in names]
    out: list[Chunking] = []
    seen: set[tuple[str, tuple[tuple[str, Any], ...]]] = set()
    for name in names:
        axes = list(space.get(name, [])) or [[{}]]
        combos: list[tuple[dict[str, Any], tuple[str, ...]]] = [({}, ())]
        for axis in axes:
            combos = [({**c, **setting}, shown + tuple(setting)[:1]) for c, shown in combos
                      for setting in (axis or [{}])]
        for prefix in prefixes:
            for combo, shown in combos:
                params = {**combo, "embed_prefix": prefix}
                key = (name, tuple(params.items()))
                if key in seen or (not combo and prefix == "none"):
                    continue  # the defaults with no prefix are the seed
                seen.add(key)
                out.append(Chunking(name, tuple(params.items()), shown=(*shown, "embed_prefix")))
    return seeds + out


# --- the label-free score --------------------------------------------------------------------------------------


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


# --- rungs ------------------------------------------------------------------------------------------------------


def _order_key(path: str) -> str:
    """A fixed pseudo-random place for a document: parts of the tree spread over it, the same on every run."""
    return hashlib.sha1(path.encode("utf-8")).hexdigest()


@dataclass
class Rung:
    """One level of the search: a part of the tree and the questions asked about it."""

    index: int
    paths: list[str]  # the documents of this part, in reading order
    chars: int
    total_chars: int
    questions: int
    planned: int = 0  # chunkings to measure
    measured: int = 0  # of those, measured
    seconds: float = 0.0
    stopped: str = ""  # "", "budget" (its share spent), "cancelled"

    @property
    def fraction(self) -> float:
        return self.chars / self.total_chars if self.total_chars else 1.0

    @property
    def whole(self) -> bool:
        return self.chars >= self.total_chars

    def to_dict(self) -> dict[str, Any]:
        return {"rung": self.index + 1, "documents": len(self.paths), "fraction": round(self.fraction, 4),
                "questions": self.questions, "planned": self.planned, "measured": self.measured,
                "seconds": round(self.seconds, 3), "stopped": self.stopped or None}


def plan_parts(tree: DocsTree, questions_in: Mapping[str, int] | None, must: Iterable[str] = (), *, eta: int = ETA,
               max_rungs: int = MAX_RUNGS, min_questions: int = MIN_RUNG_QUESTIONS) -> list[list[str]]:
    """The documents of each rung, smallest part first, the last the whole tree.

    Parts aim at 1/eta^r of the tree's text; each holds ``must`` (the documents labelled questions expect) and
    then documents in a fixed pseudo-random order, so every part lies inside the next. With ``questions_in``
    (probe questions per document) a part grows until it holds ``min_questions``. A part that is not at most
    `MAX_PART_SHARE` of the next part's text saves nothing and is left out.
    """
    docs = list(tree.documents)
    size = {d.path: len(d.text) for d in docs}
    total = sum(size.values())
    must = [p for p in dict.fromkeys(must) if p in size]
    rest = sorted((d.path for d in docs if d.path not in set(must)), key=_order_key)
    reading = {d.path: i for i, d in enumerate(docs)}
    parts: list[list[str]] = [[d.path for d in docs]]
    for r in range(1, max_rungs):
        target = total / eta ** r
        chosen = list(must)
        chars = sum(size[p] for p in chosen)
        asked = sum((questions_in or {}).get(p, 0) for p in chosen)
        for p in rest:
            if chars >= target and (questions_in is None or asked >= min_questions):
                break
            chosen.append(p)
            chars += size[p]
            asked += (questions_in or {}).get(p, 0)
        if questions_in is not None and asked < min_questions:
            break
        nxt = sum(size[p] for p in parts[0])
        if chars > MAX_PART_SHARE * nxt:
            break
        parts.insert(0, sorted(chosen, key=reading.__getitem__))
    return parts


# --- results ----------------------------------------------------------------------------------------------------


@dataclass
class Trial:
    """One candidate measured on one rung."""

    candidate: Candidate
    rung: int
    order: int  # the candidate's place in the search (ties keep it)
    score: float
    parts: dict[str, float | None]
    metrics: dict[str, float]
    chunks: int
    questions: int
    seconds: float
    embedded: int = 0
    cached: int = 0
    structure: Structure | None = None
    #: The questions it missed: how many, and the first few as ``path:line  question``.
    missed: int = 0
    misses: list[str] = field(default_factory=list)
    eval: EvalResult | None = None

    @property
    def label(self) -> str:
        return self.candidate.label

    def sort_key(self) -> tuple:
        return (-round(self.score, 9), -self.metrics.get("mrr", 0.0), self.chunks, self.order)

    def to_dict(self) -> dict[str, Any]:
        return {"label": self.label, "strategy": self.candidate.chunking.strategy,
                "params": self.candidate.chunking.param_dict, "seed": self.candidate.chunking.seed,
                "search": self.candidate.search, "rung": self.rung + 1, "score": round(self.score, 6),
                "parts": {k: None if v is None else round(v, 6) for k, v in self.parts.items()},
                "metrics": {k: round(v, 6) for k, v in self.metrics.items()}, "chunks": self.chunks,
                "questions": self.questions, "seconds": round(self.seconds, 3), "embedded": self.embedded,
                "cached": self.cached, "structure": self.structure.to_dict() if self.structure else None,
                "missed": self.missed, "misses": self.misses}


@dataclass
class TuneResult:
    """What a tune run measured, rung by rung, and its best configuration."""

    source: str  # "probe" or "queries"
    k: int
    modes: tuple[str, ...]
    weights: dict[str, float]  # part → weight
    chunkings: int  # in the space
    rungs: list[Rung]
    trials: list[Trial] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (chunking, reason)
    budget: float | None = None
    seconds: float = 0.0
    cancelled: bool = False
    budget_spent: bool = False
    probe: ProbeSet | None = None
    queries: int = 0  # questions on the whole tree
    embedded: int = 0
    cached: int = 0
    dropped: list[str] = field(default_factory=list)
    kept: str = ""  # the winner's collection, left in the store

    def on_rung(self, rung: int) -> list[Trial]:
        """The trials of one rung, best first."""
        return sorted((t for t in self.trials if t.rung == rung), key=Trial.sort_key)

    @property
    def top_rung(self) -> int | None:
        """The highest rung where something was measured."""
        return max((t.rung for t in self.trials), default=None)

    @property
    def best(self) -> Trial | None:
        """The best trial of the highest rung reached (a whole-tree measure when the search got there)."""
        top = self.top_rung
        return self.on_rung(top)[0] if top is not None else None

    @property
    def reference(self) -> Trial | None:
        """The best seed on the winner's rung: what the winner is measured against."""
        best = self.best
        if best is None:
            return None
        seeds = [t for t in self.on_rung(best.rung) if t.candidate.chunking.seed]
        return seeds[0] if seeds else None

    def comparison(self) -> tuple[Trial, Trial] | None:
        """The winner and the best seed on the highest rung that measured both (the winner's own rung unless
        the budget ended before the seed got there); None when no seed was measured."""
        best = self.best
        if best is None:
            return None
        for rung in range(best.rung, -1, -1):
            trials = self.on_rung(rung)
            mine = next((t for t in trials if t.candidate == best.candidate), None)
            seed = next((t for t in trials if t.candidate.chunking.seed), None)
            if mine is not None and seed is not None:
                return mine, seed
        return None

    def preset(self) -> dict[str, Any]:
        best = self.best
        return best.candidate.preset() if best is not None else {}

    def describe_best(self) -> str:
        """One line saying what chose the winner (the comment written above its preset)."""
        best = self.best
        if best is None:
            return ""
        rung = self.rungs[best.rung]
        what = (f"{rung.questions} probe questions" if self.source == "probe" else f"{rung.questions} questions")
        where = "the whole tree" if rung.whole else f"{rung.fraction:.0%} of the tree"
        return (f"chosen by chunkscope tune ({'label-free' if self.source == 'probe' else 'labelled'}): score "
                f"{best.score:.3f} on {where}, {what}; {len(self.trials)} trials in {format_seconds(self.seconds)}")

    def preset_toml(self, name: str = "tuned") -> str:
        preset = self.preset()
        if not preset:
            return ""
        return table_text(("presets", name), preset, comment=self.describe_best())

    def to_dict(self) -> dict[str, Any]:
        best, ref = self.best, self.reference
        return {
            "source": self.source, "k": self.k, "modes": list(self.modes), "weights": self.weights,
            "chunkings": self.chunkings, "budget": self.budget, "seconds": round(self.seconds, 3),
            "cancelled": self.cancelled, "budget_spent": self.budget_spent, "queries": self.queries,
            "probe": self.probe.to_dict() if self.probe is not None else None,
            "rungs": [r.to_dict() for r in self.rungs],
            "trials": [t.to_dict() for t in self.trials],
            "ranking": [self.trials.index(t) for t in self.on_rung(best.rung)] if best else [],
            "best": best.to_dict() if best else None,
            "reference": ref.to_dict() if ref else None,
            "preset": self.preset(),
            "skipped": [{"chunking": c, "reason": r} for c, r in self.skipped],
            "cache": {"embedded": self.embedded, "cached": self.cached},
            "dropped": self.dropped, "kept": self.kept or None,
        }


# --- the search -------------------------------------------------------------------------------------------------


@dataclass
class _Part:
    """A rung's documents, as a tree, and its questions."""

    tree: DocsTree
    cases: list[QueryCase]
    regions: list[Region]
    labels: list[str]  # ``path:line  question`` per case, for the misses
    qvecs: Any = None


def _budget_token(cancel: CancelToken | None, deadline: Callable[[], bool]) -> CancelToken:
    return CancelToken(poll=lambda: (cancel is not None and cancel.cancelled) or deadline())


def _plan(tree: DocsTree, queries: Sequence[QueryCase] | None, *, min_level: int, max_level: int, eta: int,
          max_rungs: int, max_questions: int) -> tuple[ProbeSet | None, list[_Part], list[Rung]]:
    """The questions (the probe's, or the labelled ones, every expectation resolved first so a bad one fails
    before any work), and the part of the tree each rung asks them about."""
    pset: ProbeSet | None = None
    if queries is not None:
        cases_all = list(queries)
        if not cases_all:
            raise QueriesError("nothing to score: no queries")
        regions_all = [resolve_region(tree, q) for q in cases_all]
        labels_all = [f"{q.where}  {q.query}" for q in cases_all]
        parts_paths = plan_parts(tree, None, [r.path for r in regions_all], eta=eta, max_rungs=max_rungs)
    else:
        pset = probe_sections(tree, min_level=min_level, max_level=max_level)
        if not pset.sections:
            raise QueriesError("nothing to score: no heading with a body at the probed levels")
        per_doc: dict[str, int] = {}
        for s in pset.sections:
            per_doc[s.path] = per_doc.get(s.path, 0) + 1
        parts_paths = plan_parts(tree, per_doc, eta=eta, max_rungs=max_rungs)
    by_path = {d.path: d for d in tree.documents}
    total_chars = sum(len(d.text) for d in tree.documents)
    parts: list[_Part] = []
    rungs: list[Rung] = []
    for i, paths in enumerate(parts_paths):
        whole = i == len(parts_paths) - 1
        sub = tree if whole else DocsTree(tree.root, [by_path[p] for p in paths], [], partial=True)
        if pset is None:
            cases, regions, labels = cases_all, regions_all, labels_all
        else:
            inside = set(paths)
            sections = even_sample([s for s in pset.sections if s.path in inside], max_questions)
            cases = [s.case() for s in sections]
            regions = [s.region() for s in sections]
            labels = [f"{s.where}  {s.query}" for s in sections]
        parts.append(_Part(sub, cases, regions, labels))
        rungs.append(Rung(i, list(paths), sum(len(by_path[p].text) for p in paths), total_chars, len(cases)))
    return pset, parts, rungs


def tune(tree: DocsTree, queries: Sequence[QueryCase] | None = None, *, budget: float | None = None, k: int = 5,
         strategies: Sequence[str] | None = None, prefixes: Sequence[str] = PREFIXES,
         modes: Sequence[str] | None = None, space: Mapping[str, Sequence[Sequence[Mapping[str, Any]]]] | None = None,
         weights: Weights = Weights(), config: Config | None = None, embedder: Embedder | None = None,
         store: Store | None = None, on_progress: ProgressFn | None = None, cancel: CancelToken | None = None,
         threshold: float | None = None, site_url: str | None = None, min_level: int = DEFAULT_LEVELS[0],
         max_level: int = DEFAULT_LEVELS[1], eta: int = ETA, max_rungs: int = MAX_RUNGS,
         max_questions: int = MAX_RUNG_QUESTIONS, keep: bool = False, seed: int = 0,
         clock: Callable[[], float] = time.monotonic) -> TuneResult:
    """Search the space for the best configuration of ``tree``; see the module docstring.

    Args:
        queries: labelled questions (`evaluate.load_queries`); None: label-free (the probe and what needs no
            questions).
        budget: wall-time seconds for the whole search (None: no limit: every rung runs to its end).
        strategies: the strategies to search (default: every one of the space).
        modes: the search modes to search (default: `LABEL_FREE_MODES` without queries, all with them).
        config: the tree's configuration: ``[strategies.NAME]`` defaults under every chunking, ``[lint]`` for
            the label-free parts.
        store: the vector store (default: the tree's local store, opened and closed here). Collections created
            here are dropped at the end, except the winner's (its whole-tree collection, what ``-s`` of its
            preset will use) unless ``keep`` keeps them all.
        threshold: the score threshold of dense search on labelled questions (the probe has none).
        on_progress: each step's `Progress`, within a `Phase.TUNE` report of the rung's chunkings.
        cancel: stops between batches; the result then holds what was measured (``cancelled``).
        seed: the order in which the space is tried (the same seed, the same order).
        clock: seconds, for the budget (tests pass their own).

    Raises:
        QueriesError: a labelled question names nothing in the tree, or there is nothing to ask.
        ParamError: an unknown strategy, mode or level.
    """
    from chunkscope.embedding.embedder import Embedder
    from chunkscope.retrieval.retriever import Retriever
    from chunkscope.retrieval.store import Store

    start = clock()
    t0 = time.perf_counter()
    if k < 1:
        raise ParamError(f"k must be positive, got {k}")
    if budget is not None and budget < 0:
        raise ParamError(f"the budget must not be negative, got {budget}")
    labelled = queries is not None
    modes = tuple(check_search_mode(m) for m in (modes or (LABELLED_MODES if labelled else LABEL_FREE_MODES)))
    for p in prefixes:
        if not isinstance(p, str) or not p:
            raise ParamError(f"embed_prefix values must be non-empty strings, got {p!r}")
    chunkings = search_space(strategies, prefixes, space)
    base = {name: dict(config.strategies.get(name, {})) for name in {c.strategy for c in chunkings}} if config else {}

    pset, parts, rungs = _plan(tree, queries, min_level=min_level, max_level=max_level, eta=eta,
                               max_rungs=max_rungs, max_questions=max_questions)
    by_path = {d.path: d for d in tree.documents}

    if labelled:
        weight_map = {name: w for name, _, w in LABELLED_PARTS}
    else:
        weight_map = {name: weights.of(name) for name, _ in LABEL_FREE_PARTS}
    result = TuneResult("queries" if labelled else "probe", k, modes, weight_map, len(chunkings), rungs,
                        budget=budget, probe=pset, queries=len(parts[-1].cases))

    # The order of the first rung: the seeds (with every mode), then the rest of the space shuffled with a fixed
    # seed, so a budget that ends the rung early leaves a fair sample of the whole space rather than one corner.
    seeds = [c for c in chunkings if c.seed]
    rest = [c for c in chunkings if not c.seed]
    random.Random(seed).shuffle(rest)
    first = [Candidate(c, m) for c in seeds + rest for m in modes]
    order = {cand: i for i, cand in enumerate(first)}

    embedder = embedder or Embedder()
    own = store is None
    store = store or Store(tree.root)
    existing = set(store.collections())
    created: list[str] = []
    ks = (1, k)

    def deadline(rung: int) -> float | None:
        return None if budget is None else start + budget * (rung + 1) / len(rungs)

    hard = _budget_token(cancel, lambda: budget is not None and clock() >= start + budget)

    def user_stopped() -> bool:
        return cancel is not None and cancel.cancelled

    def strategy_of(ch: Chunking) -> Strategy:
        cls = strategy_class(ch.strategy)
        return cls(**{**base.get(ch.strategy, {}), **ch.param_dict})

    def measure(ch: Chunking, ch_modes: list[str], rung: int, report: ProgressFn) -> list[Trial]:
        part = parts[rung]
        strategy = strategy_of(ch)
        if part.qvecs is None:
            part.qvecs = embedder.embed([c.query for c in part.cases], cancel=hard, label="questions").vectors
        name = store.use(strategy, embedder, owner=tree.root)
        if name not in existing and name not in created:
            created.append(name)  # named before the run, so one stopped half-way is still dropped
        thr = (lambda m: threshold if m == "dense" else None) if labelled else (lambda m: None)
        began = time.perf_counter()
        # depth=k: a miss's deeper rank is not needed to rank configurations (and costs a search each).
        run = _run_config(part.tree, ch.label, strategy, embedder, store, part.cases, part.regions, part.qvecs,
                          ks=ks, miss_k=k, threshold=thr(ch_modes[0]), depth=k, site_url=site_url, step=report,
                          cancel=hard, search_mode=ch_modes[0])
        evals = {ch_modes[0]: run.result}
        for m in ch_modes[1:]:
            retriever = Retriever(part.tree, strategy, embedder, store, site_url, search_mode=m)
            evals[m] = score_retriever(retriever, ch.label, part.cases, part.regions, part.qvecs, ks=ks,
                                       threshold=thr(m), miss_k=k, depth=k, cancel=hard, on_progress=report)
        structure = None
        if not labelled:
            from chunkscope.retrieval.neighbours import StoredEmbeddings

            paths = rungs[rung].paths
            # The store's own neighbourhoods of this part's points: what lint's hub and orphan rules read.
            stored = StoredEmbeddings(store, run.collection, paths=None if part.tree is tree else paths, order=paths)
            structure = measure_structure([by_path[p] for p in paths], tree.root, run.chunks, strategy, config,
                                          embedder, stored)
        seconds = time.perf_counter() - began
        out = []
        for m in ch_modes:
            ev = evals[m]
            metrics = dict(ev.metrics)
            if labelled:
                parts_ = {"hit": metrics.get(f"hit@{k}", 0.0), "mrr": metrics.get("mrr", 0.0)}
            else:
                parts_ = {"probe_hit": metrics.get(f"hit@{k}", 0.0), "probe_mrr": metrics.get("mrr", 0.0),
                          **structure.parts()}  # type: ignore[union-attr]
            misses = [part.labels[i] for i, q in enumerate(ev.per_query) if not q.hit]
            cand = Candidate(ch, m)
            out.append(Trial(cand, rung, order[cand], weighted(parts_, weight_map), parts_, metrics,
                             len(run.chunks), len(part.cases), seconds, run.embedded, run.cached, structure,
                             len(misses), misses[:20], ev if part.tree is tree else None))
        result.embedded += run.embedded
        result.cached += run.cached
        return out

    todo: list[Candidate] = first
    current: Rung | None = None
    try:
        for r, rung in enumerate(rungs):
            current = rung
            began = time.perf_counter()
            # One unit of work per chunking: every mode of it wanted on this rung.
            work: dict[Chunking, list[str]] = {}
            for cand in todo:
                work.setdefault(cand.chunking, [])
                if cand.search not in work[cand.chunking]:
                    work[cand.chunking].append(cand.search)
            rung.planned = len(work)
            whole = Progress(Phase.TUNE, 0, rung.planned, unit="configurations",
                             label=f"rung {r + 1}/{len(rungs)}, {rung.fraction:.0%} of the tree")
            limit = deadline(r)
            for i, (ch, ch_modes) in enumerate(work.items()):
                if user_stopped():
                    raise Cancelled("stopped")
                if budget is not None and clock() >= start + budget:
                    raise Cancelled("budget")
                if limit is not None and i > 0 and clock() >= limit:
                    rung.stopped = "budget"
                    break
                whole = Progress(Phase.TUNE, i, rung.planned, unit="configurations", started=whole.started,
                                 label=f"rung {r + 1}/{len(rungs)}, {rung.fraction:.0%} of the tree: {ch.label}")

                def report(p: Progress, outer: Progress = whole) -> None:
                    if on_progress is not None:
                        on_progress(p.within(outer))

                try:
                    trials = measure(ch, ch_modes, r, report)
                except Cancelled:
                    raise
                except (ParamError, ValueError, LookupError) as exc:  # a combination the strategy refuses
                    result.skipped.append((ch.label, f"{type(exc).__name__}: {exc}" if not isinstance(exc, ParamError)
                                           else str(exc)))
                    continue
                finally:
                    rung.seconds = time.perf_counter() - began
                result.trials.extend(trials)
                rung.measured += 1
                if on_progress is not None:
                    on_progress(whole.advanced(i + 1))
            rung.seconds = time.perf_counter() - began
            if r + 1 < len(rungs):
                todo = _promote(result.on_rung(r), eta)
                if not todo:
                    break
    except Cancelled:
        # Between batches, or at the budget's end: what finished stays (vectors cached, trials kept).
        if user_stopped():
            result.cancelled = True
        else:
            result.budget_spent = True
        if current is not None and not current.stopped:
            current.stopped = "cancelled" if result.cancelled else "budget"
    finally:
        best = result.best
        winner = ""
        if best is not None and rungs[best.rung].whole:
            winner = store.use(strategy_of(best.candidate.chunking), embedder, owner=tree.root)
        try:
            if not keep:
                for name in created:
                    if name == winner:
                        continue
                    try:
                        store.drop(name)
                        result.dropped.append(name)
                    except Exception:  # noqa: BLE001 - a collection that is already gone
                        pass
            result.kept = winner if winner in created or winner in existing else ""
        finally:
            if own:
                store.close()
    if budget is not None and not result.cancelled and any(x.stopped == "budget" for x in rungs):
        result.budget_spent = True
    result.seconds = time.perf_counter() - t0
    return result


def _promote(trials: Sequence[Trial], eta: int) -> list[Candidate]:
    """The best 1/eta of a rung's trials (at least one), best first, and the rung's best seed second when it
    did not make the cut: the reference the next rung measures the winner against."""
    if not trials:
        return []
    keep = max(1, math.ceil(len(trials) / eta))
    chosen = [t.candidate for t in trials[:keep]]
    seed = next((t.candidate for t in trials if t.candidate.chunking.seed), None)
    if seed is not None and seed not in chosen:
        chosen.insert(1, seed)  # second: measured even when the budget ends the rung early
    return chosen


# --- writing the preset ---------------------------------------------------------------------------------------


_BARE = re.compile(r"[A-Za-z0-9_-]+")


def _key(k: str) -> str:
    return k if _BARE.fullmatch(k) else json.dumps(k, ensure_ascii=False)


def table_text(path: Sequence[str], values: Mapping[str, Any], *, comment: str = "", newline: str = "\n") -> str:
    """A TOML table: its header, a comment line (inside the table, so rewriting the table rewrites it too) and
    its keys, one per line."""
    lines = [f"[{'.'.join(_key(p) for p in path)}]"]
    if comment:
        lines.append("# " + " ".join(comment.split()))
    lines += [f"{_key(k)} = {toml_value(v)}" for k, v in values.items()]
    return newline.join(lines) + newline


class PresetWriteError(ConfigError):
    """The preset cannot be written without touching the rest of the file; one line naming the file and why."""


@dataclass(frozen=True)
class PresetWrite:
    """Where a preset was written, and whether the file or the table is new."""

    path: Path
    table: str
    created_file: bool
    replaced: bool


def _skip_string(line: str, i: int) -> int:
    """The index after the one-line string starting at ``line[i]`` (a quote), or len(line) if unclosed."""
    q = line[i]
    j = i + 1
    while j < len(line):
        if q == '"' and line[j] == "\\":
            j += 2
            continue
        if line[j] == q:
            return j + 1
        j += 1
    return len(line)


def _parse_header(line: str) -> tuple[tuple[str, ...], bool] | None:
    """The key path of a table header line (``[a."b c".d]``, ``[[a.b]]``, comment allowed), None otherwise."""
    import tomllib

    s = line.strip()
    if not s.startswith("["):
        return None
    array = s.startswith("[[")
    i = 2 if array else 1
    keys: list[str] = []
    while True:
        while i < len(s) and s[i] in " \t":
            i += 1
        if i >= len(s):
            return None
        if s[i] in "\"'":
            j = _skip_string(s, i)
            try:
                keys.append(tomllib.loads(f"k = {s[i:j]}")["k"])
            except tomllib.TOMLDecodeError:
                return None
            i = j
        else:
            m = _BARE.match(s, i)
            if not m:
                return None
            keys.append(m.group(0))
            i = m.end()
        while i < len(s) and s[i] in " \t":
            i += 1
        if i < len(s) and s[i] == ".":
            i += 1
            continue
        break
    close = "]]" if array else "]"
    if not s.startswith(close, i):
        return None
    tail = s[i + len(close):].strip()
    if tail and not tail.startswith("#"):
        return None
    return tuple(keys), array


def _lines(text: str) -> list[tuple[int, str]]:
    """(offset, line with its ending) of every line."""
    out, pos = [], 0
    for line in text.splitlines(keepends=True):
        out.append((pos, line))
        pos += len(line)
    return out


def table_headers(text: str) -> list[tuple[int, tuple[str, ...]]]:
    """(offset of the line, key path) of every table header of a TOML text, skipping lines inside multi-line
    strings and inside arrays or inline tables that span lines (where a line may start with ``[`` too)."""
    out: list[tuple[int, tuple[str, ...]]] = []
    depth = 0
    in_ml: str | None = None
    for pos, line in _lines(text):
        i = 0
        if in_ml is None and depth == 0:
            head = _parse_header(line)
            if head is not None:
                out.append((pos, head[0]))
                continue
        while i < len(line):
            if in_ml is not None:
                end = line.find(in_ml, i)
                while end != -1 and in_ml == '"""' and _escaped(line, end):
                    end = line.find(in_ml, end + 1)
                if end == -1:
                    i = len(line)
                    break
                i = end + 3
                while i < len(line) and line[i] == in_ml[0]:
                    i += 1  # up to two quotes may close the string's content
                in_ml = None
                continue
            ch = line[i]
            if ch == "#":
                break
            if line.startswith('"""', i) or line.startswith("'''", i):
                in_ml = line[i:i + 3]
                i += 3
                continue
            if ch in "\"'":
                i = _skip_string(line, i)
                continue
            if ch in "[{":
                depth += 1
            elif ch in "]}":
                depth = max(0, depth - 1)
            i += 1
    return out


def _escaped(line: str, at: int) -> bool:
    n = 0
    while at - n - 1 >= 0 and line[at - n - 1] == "\\":
        n += 1
    return n % 2 == 1


def _block_end(text: str, start: int, nxt: int) -> int:
    """Where a table's own text ends before the next header at ``nxt``: the comments and blank lines right
    above a header are that header's (they describe what follows), so they are kept with it."""
    end = nxt
    while end > start:
        line_start = text.rfind("\n", start, end - 1) + 1
        line = text[line_start:end]
        stripped = line.strip()
        if stripped and not stripped.startswith("#"):
            break
        if line_start <= start:
            break
        end = line_start
    return end


def replace_table(text: str, path: Sequence[str], values: Mapping[str, Any], *, comment: str = "",
                  source: str = "config") -> tuple[str, bool]:
    """``text`` with the table at ``path`` (and its sub-tables) replaced by ``values``, or added after the last
    table that shares its parent (else at the end); every other byte stays as it was. Returns the new text and
    whether a table was replaced.

    Raises:
        PresetWriteError: the text is not valid TOML, the table is written another way (an inline table or
            dotted keys), or the result would change anything else (checked by parsing both).
    """
    import tomllib

    path = tuple(path)
    try:
        before = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise PresetWriteError(f"{source}: not valid TOML ({exc}); fix it before writing a preset") from None
    newline = "\r\n" if "\r\n" in text else "\n"
    new = table_text(path, values, comment=comment, newline=newline)
    headers = table_headers(text)
    mine = [i for i, (_, p) in enumerate(headers) if p[:len(path)] == path]

    def end_of(i: int) -> int:
        nxt = headers[i + 1][0] if i + 1 < len(headers) else len(text)
        return _block_end(text, headers[i][0], nxt)

    if mine:
        pieces, pos = [], 0
        for n, i in enumerate(mine):
            start, end = headers[i][0], end_of(i)
            pieces.append(text[pos:start])
            if n == 0:
                pieces.append(new)
            pos = end
        pieces.append(text[pos:])
        out, replaced = "".join(pieces), True
    else:
        node: Any = before
        for p in path:
            if not isinstance(node, dict) or p not in node:
                node = None
                break
            node = node[p]
        if node is not None:
            raise PresetWriteError(f"{source}: [{'.'.join(path)}] is written as an inline table or dotted keys; "
                                   f"make it a table of its own (or remove it) and run again")
        parent = path[:-1]
        siblings = [i for i, (_, p) in enumerate(headers) if p[:len(parent)] == parent and len(p) > len(parent)]
        if siblings:
            at = end_of(siblings[-1])
            head = text[:at]
            if not head.endswith(("\n", "\r")):
                head += newline
            out = head + newline + new + text[at:]
        else:
            head = text
            if head and not head.endswith(("\n", "\r")):
                head += newline
            out = head + (newline if head.strip() else "") + new
        replaced = False
    # The safety net: the new file must say exactly what the old one said, but for this one table.
    try:
        after = tomllib.loads(out)
    except tomllib.TOMLDecodeError:
        after = None
    expected = json.loads(json.dumps(before, default=str))
    node = expected
    for p in path[:-1]:
        node = node.setdefault(p, {})
    node[path[-1]] = dict(values)
    if after is None or json.loads(json.dumps(after, default=str)) != expected:
        raise PresetWriteError(f"{source}: cannot add [{'.'.join(path)}] without changing other settings; "
                               f"add it by hand")
    return out, replaced


def write_preset(config_file: str | os.PathLike[str], name: str, values: Mapping[str, Any], *, comment: str = "",
                 table_prefix: Sequence[str] = ()) -> PresetWrite:
    """Create or replace ``[presets.NAME]`` in a configuration file (``table_prefix`` ``("tool", "chunkscope")``
    for a pyproject.toml), leaving every other byte as it was; a missing file is created. Written to a
    temporary file beside it and moved into place, so a failure never leaves half a file.

    Raises:
        PresetWriteError: see `replace_table`; or the file cannot be read or written.
    """
    p = Path(config_file)
    path = (*table_prefix, "presets", name)
    try:
        raw = p.read_bytes()
        created = False
    except FileNotFoundError:
        raw, created = b"", True
    except OSError as exc:
        raise PresetWriteError(f"{p}: cannot read ({exc.strerror or exc})") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise PresetWriteError(f"{p}: not UTF-8 text; cannot write a preset into it") from None
    out, replaced = replace_table(text, path, values, comment=comment, source=str(p))
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", dir=str(p.parent) if str(p.parent) else ".")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(out.encode("utf-8"))
            if not created:
                try:
                    os.chmod(tmp, p.stat().st_mode & 0o7777)
                except OSError:
                    pass
            os.replace(tmp, p)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
    except OSError as exc:
        raise PresetWriteError(f"{p}: cannot write ({exc.strerror or exc})") from None
    return PresetWrite(p, ".".join(_key(x) for x in path), created, replaced)
