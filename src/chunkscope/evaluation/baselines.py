"""Baselines: each strategy's metrics from one run, kept in a file to report later runs' changes against."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from chunkscope.evaluation.metrics import DEFAULT_KS, PASSAGE_UNITS

if TYPE_CHECKING:
    from chunkscope.evaluation.evaluate import EvalResult

#: The version of the baseline file this chunkscope writes and reads.
BASELINE_VERSION = 1


class BaselineError(Exception):
    """A baseline file cannot be read or written; one line naming the file and the problem."""


@dataclass(frozen=True)
class MetricChange:
    """One metric of one strategy, then and now (None: absent on that side). Every metric here is better
    higher, so a change is a regression when it drops by more than the tolerance."""

    strategy: str
    metric: str
    before: float | None
    after: float | None
    regression: bool = False

    @property
    def delta(self) -> float | None:
        if self.before is None or self.after is None:
            return None
        return round(self.after - self.before, 6)


@dataclass
class BaselineComparison:
    """A run's metrics against a baseline's, strategy by strategy (matched by label)."""

    baseline: "Baseline"
    tolerance: float
    changes: list[MetricChange]
    queries: int  # questions in this run
    missing: list[str] = field(default_factory=list)  # strategies of the baseline this run did not score
    new: list[str] = field(default_factory=list)  # strategies this run scored that the baseline has not

    @property
    def regressions(self) -> list[MetricChange]:
        return [c for c in self.changes if c.regression]

    def change(self, strategy: str, metric: str) -> MetricChange | None:
        return next((c for c in self.changes if c.strategy == strategy and c.metric == metric), None)

    def to_dict(self) -> dict[str, Any]:
        return {"baseline": self.baseline.source, "tolerance": self.tolerance,
                "queries": {"baseline": self.baseline.queries, "now": self.queries},
                "changes": [{"strategy": c.strategy, "metric": c.metric, "before": c.before, "after": c.after,
                             "delta": c.delta, "regression": c.regression} for c in self.changes],
                "regressions": len(self.regressions), "missing": self.missing, "new": self.new}


@dataclass
class Baseline:
    """Each strategy's metrics from one evaluation, kept to measure later runs against (a CI gate for docs
    changes). Values are stored rounded to 6 decimals, and compared as stored."""

    strategies: dict[str, dict[str, float]]  # label → metric → value
    queries: int
    passage_unit: str = "chars"
    ks: tuple[int, ...] = DEFAULT_KS
    source: str = ""  # the file it was read from

    @classmethod
    def of(cls, results: Sequence[EvalResult]) -> "Baseline":
        if not results:
            raise ValueError("a baseline needs at least one strategy's results")
        return cls({r.strategy_label: {k: round(v, 6) for k, v in r.metrics.items()} for r in results},
                   len(results[0].per_query), results[0].passage_unit, tuple(results[0].ks))

    def to_dict(self) -> dict[str, Any]:
        return {"chunkscope_baseline": BASELINE_VERSION, "queries": self.queries, "passage_unit": self.passage_unit,
                "ks": list(self.ks), "strategies": self.strategies}

    def save(self, path: str | Path) -> None:
        """Write the baseline as JSON (a file to commit beside the docs)."""
        try:
            Path(path).write_text(json.dumps(self.to_dict(), indent=2, sort_keys=False) + "\n", encoding="utf-8")
        except OSError as exc:
            raise BaselineError(f"{path}: cannot write the baseline ({exc.strerror or exc})") from None

    @classmethod
    def load(cls, path: str | Path) -> "Baseline":
        """Read a baseline file; anything but one this chunkscope wrote raises `BaselineError`."""
        name = str(path)
        try:
            text = Path(path).read_text(encoding="utf-8")
        except FileNotFoundError:
            raise BaselineError(f"{name}: no such baseline file") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise BaselineError(f"{name}: cannot read the baseline ({getattr(exc, 'strerror', None) or exc})") from None
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise BaselineError(f"{name}: not a baseline file (invalid JSON at line {exc.lineno}: {exc.msg})") from None
        if not isinstance(data, dict) or "chunkscope_baseline" not in data:
            raise BaselineError(f"{name}: not a baseline file (no \"chunkscope_baseline\" version)")
        version = data["chunkscope_baseline"]
        if version != BASELINE_VERSION:
            raise BaselineError(f"{name}: baseline version {version!r}; this chunkscope reads version "
                                f"{BASELINE_VERSION}")
        strategies = data.get("strategies")
        if not isinstance(strategies, dict) or not strategies:
            raise BaselineError(f"{name}: the baseline holds no strategy's metrics")
        clean: dict[str, dict[str, float]] = {}
        for label, metrics in strategies.items():
            if not isinstance(metrics, dict) or not all(
                    isinstance(v, (int, float)) and not isinstance(v, bool) for v in metrics.values()):
                raise BaselineError(f"{name}: strategy {label!r} does not map metric names to numbers")
            clean[str(label)] = {str(k): float(v) for k, v in metrics.items()}
        queries, unit, ks = data.get("queries"), data.get("passage_unit", "chars"), data.get("ks", list(DEFAULT_KS))
        if not isinstance(queries, int) or unit not in PASSAGE_UNITS or not isinstance(ks, list):
            raise BaselineError(f"{name}: malformed baseline (queries, passage_unit or ks)")
        return cls(clean, queries, unit, tuple(int(k) for k in ks), name)

    def check_unit(self, unit: str) -> None:
        """Passage metrics counted in other units are not comparable: refuse before any work is done."""
        if unit != self.passage_unit:
            raise BaselineError(f"{self.source}: the baseline counted passages in {self.passage_unit}, this run "
                                f"counts them in {unit}; compare runs that count alike")

    def compare(self, results: Sequence[EvalResult], tolerance: float = 0.0) -> BaselineComparison:
        """Each metric both sides have, per strategy; a drop of more than ``tolerance`` (in the metric's own
        unit: 0.02 is two points of a 0-1 score) is a regression."""
        if tolerance < 0:
            raise ValueError(f"tolerance must not be negative, got {tolerance}")
        changes: list[MetricChange] = []
        for r in results:
            then = self.strategies.get(r.strategy_label)
            if then is None:
                continue
            now = {k: round(v, 6) for k, v in r.metrics.items()}
            for metric in [*now, *(m for m in then if m not in now)]:
                before, after = then.get(metric), now.get(metric)
                drop = round(before - after, 6) if before is not None and after is not None else 0.0
                changes.append(MetricChange(r.strategy_label, metric, before, after, drop > tolerance))
        labels = {r.strategy_label for r in results}
        return BaselineComparison(
            self, tolerance, changes, len(results[0].per_query) if results else 0,
            missing=[s for s in self.strategies if s not in labels],
            new=[r.strategy_label for r in results if r.strategy_label not in self.strategies])
