"""Checks of single values in the configuration's tables, each worded for a one-line error and None when the value
is fine: one rule for one kind of value (a name, a timeout) in every table that has one."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any


def text_problem(table: Mapping[str, Any], section: str, keys: Iterable[str]) -> str | None:
    """What is wrong with the first of ``keys`` present in ``table`` that is not a non-empty string."""
    for key in keys:
        if key in table and not (isinstance(table[key], str) and table[key].strip()):
            return f"{section}.{key} must be a non-empty string"
    return None


def seconds_problem(table: Mapping[str, Any], section: str) -> str | None:
    """What is wrong with ``table``'s ``timeout``, when it has one: it must be a positive number of seconds (a bool
    is not a number here, and NaN is not positive)."""
    if "timeout" not in table:
        return None
    t = table["timeout"]
    if isinstance(t, bool) or not isinstance(t, (int, float)) or not t > 0:
        return f"{section}.timeout must be a positive number of seconds"
    return None
