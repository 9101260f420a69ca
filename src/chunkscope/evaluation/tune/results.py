"""What a tune run measured: one `Trial` per configuration and rung, and the `TuneResult` that ranks them."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from chunkscope.config.presets import table_text
from chunkscope.evaluation.probe import ProbeSet
from chunkscope.evaluation.tune.plan import ETA, Rung
from chunkscope.evaluation.tune.score import Structure
from chunkscope.evaluation.tune.space import Candidate
from chunkscope.progress import format_seconds

if TYPE_CHECKING:
    from chunkscope.evaluation.evaluate import EvalResult


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
    #: Why the misses were missed: reason → questions (reranked-out, outside-parent, below-k, …).
    reasons: dict[str, int] = field(default_factory=dict)

    @property
    def label(self) -> str:
        return self.candidate.label

    def sort_key(self) -> tuple:
        return (-round(self.score, 9), -self.metrics.get("mrr", 0.0), self.chunks, self.order)

    def to_dict(self) -> dict[str, Any]:
        return {"label": self.label, "strategy": self.candidate.chunking.strategy,
                "params": self.candidate.chunking.param_dict, "seed": self.candidate.chunking.seed,
                "search": self.candidate.search, "rerank": self.candidate.rerank, "parent": self.candidate.parent,
                "rung": self.rung + 1, "score": round(self.score, 6),
                "parts": {k: None if v is None else round(v, 6) for k, v in self.parts.items()},
                "metrics": {k: round(v, 6) for k, v in self.metrics.items()}, "chunks": self.chunks,
                "questions": self.questions, "seconds": round(self.seconds, 3), "embedded": self.embedded,
                "cached": self.cached, "structure": self.structure.to_dict() if self.structure else None,
                "missed": self.missed, "misses": self.misses, "reasons": self.reasons}


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
    eta: int = ETA  # each rung kept the best 1/eta of what it measured
    parents: tuple[str, ...] = ("none",)  # what hits return, each searched
    rerank: str = ""  # the reranker searched on and off (``st:PATH``, ``http:MODEL``); "" when none

    @property
    def variants(self) -> int:
        """Candidates per chunking: search modes × parents × reranker off/on (they share its collection)."""
        return len(self.modes) * len(self.parents) * (2 if self.rerank else 1)

    @property
    def ended_early(self) -> bool:
        """The budget (or the user) ended the search before the best configurations were measured on the whole
        tree: nothing measured, the best so far measured on a part of it, or a rung stopped short."""
        best = self.best
        return best is None or not self.rungs[best.rung].whole or any(r.stopped for r in self.rungs)

    @property
    def no_answer(self) -> str:
        """Why the best so far is no recommendation, in words; "" when it is one.

        It is none when the budget (or the user) ended the search before the best configurations were measured on
        the whole tree (`ended_early`), or when the winner is a seed at its defaults (tuning found nothing better
        than not tuning).
        """
        best = self.best
        ended = "the search was stopped" if self.cancelled else "the budget ended"
        if best is None:
            return f"{ended} before any configuration was measured"
        if self.ended_early:
            rung = next((r for r in self.rungs if r.stopped), self.rungs[best.rung])
            where = "the whole tree" if rung.whole else f"{rung.fraction:.0%} of the tree"
            return (f"{ended} before the best configurations were measured on the whole tree ({rung.measured} of "
                    f"{rung.planned} configurations measured on {where})")
        if best.candidate.chunking.seed:
            return f"the winner is {best.candidate.chunking.strategy} at its defaults: tuning found nothing better"
        return ""

    def needed_budget(self) -> float | None:
        """The wall time a search that reaches the whole tree would need here, estimated from the measured cost
        per configuration (None when nothing was measured).

        Each rung's configurations cost what that rung measured per configuration, or, on a rung not reached, the
        measured seconds per character of text times its part; a rung plans what the one before would promote
        (its best 1/eta, and a seed); and as each rung may use only its share of the budget (plus what the
        rungs before it left), the budget must cover the slowest rung's share.
        """
        measured = [r for r in self.rungs if r.measured]
        if not measured:
            return None
        per_char = sum(r.seconds for r in measured) / max(1, sum(r.measured * r.chars for r in measured))
        n = len(self.rungs)
        planned = float(max(self.rungs[0].planned, self.chunkings))
        spent = need = 0.0
        for i, r in enumerate(self.rungs):
            if i > 0:
                planned = min(planned, math.ceil(planned * self.variants / self.eta) + 1)
            cost = r.seconds / r.measured if r.measured else per_char * r.chars
            spent += planned * cost
            need = max(need, spent * n / (i + 1))
        return need

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
        the budget ended before the seed got there); None when no seed was measured, or the winner is a seed
        (it would be compared with itself)."""
        best = self.best
        if best is None or best.candidate.chunking.seed:
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
        kind = "label-free" if self.source == "probe" else "labelled"
        measured = (f"score {best.score:.3f} on {where}, {what}; {len(self.trials)} trials in "
                    f"{format_seconds(self.seconds)}")
        if self.rerank:
            # A preset names no reranker: say whether the winner had it, so the preset is used the way it scored.
            measured += (f"; with the reranker {self.rerank} (keep [rerank] when you use this preset)"
                         if best.candidate.rerank else f"; without the reranker {self.rerank} (it did not help)")
        if self.no_answer:
            return f"best so far by chunkscope tune ({kind}), not an answer: {self.no_answer}; {measured}"
        return f"chosen by chunkscope tune ({kind}): {measured}"

    def preset_toml(self, name: str = "tuned") -> str:
        preset = self.preset()
        if not preset:
            return ""
        return table_text(("presets", name), preset, comment=self.describe_best())

    def to_dict(self) -> dict[str, Any]:
        best, ref = self.best, self.reference
        return {
            "source": self.source, "k": self.k, "modes": list(self.modes), "weights": self.weights,
            "parents": list(self.parents), "rerank": self.rerank or None,
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
            "no_answer": self.no_answer or None, "needed_budget": _round(self.needed_budget()),
        }


def _round(x: float | None) -> float | None:
    return None if x is None else round(x, 1)
