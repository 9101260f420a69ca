"""Declared strategy parameters (`Param`), the orders pairs of them keep (`Constraint`), and `ParamError`.

A strategy declares its parameters and constraints; the base class checks both, so the library, the CLI, the
config file and the app refuse the same values with the same line.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Any, Callable, Literal, Mapping


class ParamError(ValueError):
    """A strategy parameter is unknown or out of range: one line, shown as is."""


_TYPE_NAMES = {int: "integer", float: "number", str: "string", bool: "boolean", list: "list", dict: "table"}


@dataclass(frozen=True, slots=True)
class Param:
    """A declared strategy parameter: type, default, allowed range and help, for the CLI, config and TUI."""

    name: str
    type: type
    default: Any
    help: str
    min: float | None = None
    max: float | None = None
    choices: tuple[Any, ...] | None = None

    def describe(self) -> dict[str, Any]:
        rng = None
        if self.min is not None or self.max is not None:
            rng = [self.min, self.max]
        return {
            "name": self.name,
            "type": _TYPE_NAMES.get(self.type, self.type.__name__),
            "default": self.default,
            "range": rng,
            "choices": list(self.choices) if self.choices else None,
            "help": self.help,
        }

    def range_text(self) -> str:
        if self.choices:
            return "one of " + ", ".join(map(str, self.choices))
        if self.min is not None and self.max is not None:
            return f"{_fmt(self.min)}..{_fmt(self.max)}"
        if self.min is not None:
            return f">= {_fmt(self.min)}"
        if self.max is not None:
            return f"<= {_fmt(self.max)}"
        return ""

    def coerce(self, value: Any, strategy: str = "") -> Any:
        """Validate and convert a value (typed from TOML, or a string from ``--param k=v``)."""
        where = f"{strategy}: " if strategy else ""
        want = _TYPE_NAMES.get(self.type, self.type.__name__)
        try:
            if isinstance(value, str) and self.type is not str:
                value = _parse_text(value, self.type)
            if self.type is float and isinstance(value, int) and not isinstance(value, bool):
                value = float(value)
            if self.type is int and isinstance(value, float) and value.is_integer():
                value = int(value)
            if not isinstance(value, self.type) or (self.type is int and isinstance(value, bool)):
                raise TypeError
        except (TypeError, ValueError):
            article = "an" if want[:1] in "aeiou" else "a"
            raise ParamError(f"{where}{self.name} must be {article} {want}, got {value!r}") from None
        if self.choices and value not in self.choices:
            raise ParamError(f"{where}{self.name} must be {self.range_text()}, got {value!r}")
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            if (self.min is not None and value < self.min) or (self.max is not None and value > self.max):
                raise ParamError(f"{where}{self.name} must be in {self.range_text()}, got {value!r}")
        return value


def _fmt(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else str(x)


#: The orders a `Constraint` can ask for, with how a message says that one was broken.
_ORDERS: dict[str, tuple[Callable[[Any, Any], bool], str]] = {
    "<": (operator.lt, "must be below"),
    "<=": (operator.le, "must not exceed"),
}


@dataclass(frozen=True, slots=True)
class Constraint:
    """An order two parameters of a strategy must keep: ``Constraint("chunk_overlap", "<", "chunk_size")``.

    Declared once per strategy (`Strategy.constraints`) and checked by the base class, so every way values
    arrive (the library, ``-p k=v``, a config table, the app's parameter bar) is refused with the same line.

    ``default_follows``: when ``left`` was not given, its default is lowered to ``right`` instead of refused. A
    default nobody chose must not contradict a value someone did: ``max_tokens=40`` alone brings the default
    ``min_tokens`` of 50 down to 40, while ``max_tokens=40, min_tokens=50`` is an error. Only with ``<=``:
    meeting ``<`` by lowering would need a step size.
    """

    left: str
    op: Literal["<", "<="]
    right: str
    default_follows: bool = False

    def __post_init__(self) -> None:
        if self.op not in _ORDERS:
            raise ValueError(f"Constraint op must be one of {', '.join(_ORDERS)}, got {self.op!r}")
        if self.default_follows and self.op != "<=":
            raise ValueError(f"Constraint {self.left} {self.op} {self.right}: default_follows needs '<='")

    def holds(self, params: Mapping[str, Any]) -> bool:
        """Whether ``params`` (coerced values, both present) keep the order."""
        return _ORDERS[self.op][0](params[self.left], params[self.right])

    def message(self, strategy: str, params: Mapping[str, Any]) -> str:
        """``section: min_tokens (50) must not exceed max_tokens (10)``: both names and both values, one line."""
        where = f"{strategy}: " if strategy else ""
        return (f"{where}{self.left} ({params[self.left]}) {_ORDERS[self.op][1]} "
                f"{self.right} ({params[self.right]})")


class ConstraintError(ParamError):
    """Two parameters break a declared `Constraint`; the message names both and their values.

    ``names`` lets a view point at both fields; ``with_note`` adds where a value came from (a config file).
    """

    def __init__(self, strategy: str, constraint: Constraint, params: Mapping[str, Any], note: str = "") -> None:
        self.strategy = strategy
        self.constraint = constraint
        self.values = {constraint.left: params[constraint.left], constraint.right: params[constraint.right]}
        self.note = note
        msg = constraint.message(strategy, self.values)
        super().__init__(f"{msg} ({note})" if note else msg)

    @property
    def names(self) -> tuple[str, str]:
        """The two parameters, the one that must be smaller first."""
        return (self.constraint.left, self.constraint.right)

    def with_note(self, note: str) -> "ConstraintError":
        """The same error, saying in parentheses where a value came from."""
        return ConstraintError(self.strategy, self.constraint, self.values, note)


def _parse_text(text: str, typ: type) -> Any:
    import json

    t = text.strip()
    if typ is bool:
        low = t.lower()
        if low in ("true", "yes", "on", "1"):
            return True
        if low in ("false", "no", "off", "0"):
            return False
        raise ValueError(text)
    if typ is int:
        return int(t)
    if typ is float:
        return float(t)
    if typ is list:
        if t.startswith("["):
            v = json.loads(t)
            if not isinstance(v, list):
                raise ValueError(text)
            return v
        return [x.strip() for x in t.split(",") if x.strip()]
    if typ is dict:
        v = json.loads(t)
        if not isinstance(v, dict):
            raise ValueError(text)
        return v
    return t

