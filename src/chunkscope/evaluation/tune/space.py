"""The space tune searches: each strategy's own `search_space`, every ``embed_prefix``, and the seeds.

A *chunking* is a strategy with its parameters; its search modes share one collection and its vectors. Each
strategy declares its axes (`Strategy.search_space`: parameter -> candidate values), so a plugin strategy is
tunable with no edit of the tuner; each strategy's defaults (the *seed*) are always in the space.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from chunkscope.chunking.registry import list_strategies, strategy_class

PREFIXES = ("none", "title", "heading", "breadcrumb")


def _fmt(v: Any) -> str:
    """A parameter value as a label shows it (lists and tables as JSON)."""
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
    """A chunking, how questions are matched against it, whether the configured reranker re-scores the search's
    candidates, and what a hit returns (``parent``: small-to-big, `chunkscope.retrieval.parents`)."""

    chunking: Chunking
    search: str
    rerank: bool = False
    parent: str = "none"

    @property
    def label(self) -> str:
        words = [self.chunking.label, self.search]
        if self.rerank:
            words.append("rerank")
        if self.parent != "none":
            words.append(f"parent={self.parent}")
        return " · ".join(words)

    def preset(self) -> dict[str, Any]:
        """The ``[presets.NAME]`` table that gives this configuration. A preset names no reranker (the model and
        its endpoint stay in ``[rerank]``): whether it was on is said in the preset's comment."""
        table = {"strategy": self.chunking.strategy, **self.chunking.param_dict, "search": self.search}
        if self.parent != "none":
            table["parent"] = self.parent
        return table


#: A space given by hand (tests, a narrower search): per strategy, its axes as `Strategy.search_axes` gives them.
Axes = Sequence[Sequence[Mapping[str, Any]]]


def default_strategies(configured: Sequence[str] = ()) -> list[str]:
    """The strategies tune searches when none is named: every usable one that declares a search space, less
    those that embed as they chunk (semantic: a model pass per document) unless ``configured`` names them (a
    ``[strategies.NAME]`` table or a preset of the configuration)."""
    wanted = set(configured)
    return [cls.name for cls in list_strategies()
            if cls.search_space and (not getattr(cls, "embeds_while_chunking", False) or cls.name in wanted)]


def search_space(strategies: Sequence[str] | None = None, prefixes: Sequence[str] = PREFIXES,
                 space: Mapping[str, Axes] | None = None) -> list[Chunking]:
    """Every chunking of the space: the seeds first (in ``strategies`` order), then every combination of each
    strategy's axes with each prefix. A combination equal to a seed is kept once, as the seed.

    Each strategy's axes are its own (`Strategy.search_space`) unless ``space`` gives them; the default
    strategies are every usable one that declares a search space and does not embed as it chunks (or, with
    ``space``, the ones it names).
    """
    if strategies is not None:
        names = list(strategies)
    elif space is not None:
        names = list(space)
    else:
        # A strategy that embeds as it chunks (semantic) costs a model pass per document: tried only when named.
        names = default_strategies()
    axes_of: dict[str, Axes] = {}
    for name in names:
        cls = strategy_class(name)  # an unknown name fails here, listing the known ones
        axes_of[name] = space.get(name, []) if space is not None else cls.search_axes()
    seeds = [Chunking(name, seed=True) for name in names]
    out: list[Chunking] = []
    seen: set[tuple[str, tuple[tuple[str, Any], ...]]] = set()
    for name in names:
        axes = list(axes_of[name]) or [[{}]]
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
