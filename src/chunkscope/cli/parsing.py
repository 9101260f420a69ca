"""Parsers for the command line's own syntax: ``-p key=value``, ``--filter k=v``, ``--levels 2-4``,
``--grid name=v1,v2``. They live here, not in the core, and their errors name the flag the user typed."""

from __future__ import annotations

import json
import re
from typing import Any, Iterable, Sequence

from chunkscope.chunking.params import ParamError
from chunkscope.chunking.registry import strategy_class
from chunkscope.chunking.strategy import Strategy
from chunkscope.embedding.registry import parse_embedder
from chunkscope.embedding.spec import EmbedderSpecError
from chunkscope.retrieval.search_modes import PIPELINE_KEYS, SEARCH_MODES


def parse_param_args(items: list[str] | None) -> dict[str, str]:
    """``["chunk_size=384", "encoding=o200k_base"]`` → dict; a malformed item is a ParamError."""
    out: dict[str, str] = {}
    for item in items or []:
        k, v = _name_and_value(item, "--param", "expected key=value", "empty key")
        out[k] = v
    return out


def _name_and_value(item: str, flag: str, expected: str, empty: str) -> tuple[str, str]:
    """``"chunk-size=384"`` → ``("chunk_size", "384")``: a parameter name as declared (dashes as underscores)."""
    if "=" not in item:
        raise ParamError(f"{flag} {item!r}: {expected}")
    name, value = item.split("=", 1)
    name = name.strip().replace("-", "_")
    if not name:
        raise ParamError(f"{flag} {item!r}: {empty}")
    return name, value


def parse_filters(items: Iterable[str]) -> dict[str, str]:
    """``["chapter=3", "path=ch03.md"]`` → ``{"chapter": "3", "path": "ch03.md"}`` (for ``--filter k=v``)."""
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ParamError(f"--filter {item!r}: expected key=value")
        out[key.strip()] = value.strip()
    return out


def parse_levels(text: str) -> tuple[int, int]:
    """``"2-4"`` → (2, 4); ``"3"`` → (3, 3). A ParamError names the problem."""
    m = re.fullmatch(r"\s*([1-6])\s*(?:-\s*([1-6])\s*)?", text or "")
    if not m:
        raise ParamError(f"--levels {text!r}: expected a heading level or a range like 2-4 (levels 1..6)")
    lo, hi = int(m.group(1)), int(m.group(2) or m.group(1))
    if lo > hi:
        raise ParamError(f"--levels {text!r}: the first level must not exceed the second")
    return lo, hi


def _split_values(name: str, text: str) -> list[str]:
    t = text.strip()
    if t.startswith("["):
        # A JSON list of values, for values that hold commas themselves: separators=[["\n\n"], ["\n\n", "\n"]].
        try:
            v = json.loads(t)
        except ValueError:
            v = None
        if isinstance(v, list) and v:
            return v
    return [x.strip() for x in text.split(",")]


def parse_grid(items: Sequence[str], strategy: str | type[Strategy]) -> dict[str, list[Any]]:
    """``["chunk_size=256,384", "chunk_overlap=0,50"]`` → ``{"chunk_size": [256, 384], "chunk_overlap": [0, 50]}``.

    Values are checked one by one against the strategy's declared parameters (type and range); combinations
    are checked later, by the sweep. Repeated values are kept once. Raises ParamError with one clear line.
    """
    cls = strategy_class(strategy) if isinstance(strategy, str) else strategy
    declared = {p.name: p for p in cls.parameters}
    grid: dict[str, list[Any]] = {}
    for item in items:
        name, values = _name_and_value(item, "--grid", "expected NAME=VALUE,VALUE,... e.g. chunk_size=256,384,512",
                                       "the parameter name is empty")
        if name not in declared and name not in PIPELINE_KEYS:
            raise ParamError(f"--grid {item!r}: {cls.name} has no parameter {name!r} "
                             f"(parameters: {', '.join(declared) or 'none'}; and the pipeline's "
                             f"{', '.join(PIPELINE_KEYS)})")
        if name in grid:
            raise ParamError(f"--grid {item!r}: {name} is given twice; list all its values in one --grid")
        raw = _split_values(name, values)
        if any(isinstance(v, str) and not v for v in raw):
            raise ParamError(f"--grid {item!r}: empty value (expected {name}=VALUE,VALUE,...)")
        if name in PIPELINE_KEYS:
            grid[name] = list(dict.fromkeys(_pipeline_value(item, name, str(v)) for v in raw))
            continue
        out: list[Any] = []
        for v in raw:
            try:
                coerced = declared[name].coerce(v, cls.name)
            except ParamError as exc:  # names the parameter and its type or range; add which --grid it was
                raise ParamError(f"--grid {item!r}: {exc}") from None
            if coerced not in out:
                out.append(coerced)
        grid[name] = out
    if not grid:
        raise ParamError("sweep needs at least one --grid NAME=VALUE,VALUE,...")
    return grid


def _pipeline_value(item: str, name: str, value: str) -> str:
    """A ``search``, ``embedder`` or ``parent`` grid value, checked now rather than after the first configurations ran."""
    value = value.strip()
    if name == "search" and value not in SEARCH_MODES:
        raise ParamError(f"--grid {item!r}: unknown search mode {value!r} (choose from {', '.join(SEARCH_MODES)})")
    if name == "embedder":
        try:
            parse_embedder(value)
        except EmbedderSpecError as exc:
            raise ParamError(f"--grid {item!r}: {exc}") from None
    if name == "parent":
        from chunkscope.retrieval.parents import ParentError, parse_parent

        try:
            return parse_parent(value).label  # one spelling per parent: "Section" and "section" are one point
        except ParentError as exc:
            raise ParamError(f"--grid {item!r}: {exc}") from None
    return value


def parse_search(value: str | None, *, several: bool = False) -> list[str]:
    """``--search dense`` (or ``dense,hybrid`` where several are compared) → the modes, checked."""
    if value is None:
        return []
    modes = [m.strip() for m in value.split(",") if m.strip()] if several else [value.strip()]
    for m in modes:
        if m not in SEARCH_MODES:
            raise ParamError(f"--search {value!r}: unknown search mode {m!r} (choose from {', '.join(SEARCH_MODES)})")
    if not modes:
        raise ParamError(f"--search {value!r}: no search mode given")
    return list(dict.fromkeys(modes))


def check_k(k: int) -> int:
    """``-k``, refused when under 1."""
    if k < 1:
        raise ParamError(f"-k must be positive, got {k}")
    return k


def max_queries(n: int | None) -> int | None:
    """``--max-queries``, refused when under 1."""
    if n is not None and n < 1:
        raise ParamError(f"--max-queries must be at least 1, got {n}")
    return n
