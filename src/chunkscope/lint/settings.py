"""``[lint]`` in chunkscope.toml and the caller's rule choices, validated into `LintSettings`."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from chunkscope.config.reader import ConfigError
from chunkscope.document.loader import is_ignored
from chunkscope.tokens import DEFAULT_EMBED_MODEL
from chunkscope.lint.findings import OFF, SEVERITIES
from chunkscope.lint.registry import RULES

if TYPE_CHECKING:
    from chunkscope.config.reader import Config


@dataclass(frozen=True)
class LintSettings:
    """The ``[lint]`` configuration and the caller's rule choices, validated."""

    enabled: frozenset[str]
    severity: dict[str, str]
    thresholds: dict[str, int]
    per_path_ignores: tuple[tuple[str, frozenset[str]], ...]
    embed_model: str = DEFAULT_EMBED_MODEL

    def severity_of(self, rule: str) -> str:
        return self.severity.get(rule, RULES[rule].severity)

    def ignored_for(self, path: str) -> frozenset[str]:
        """The rules ``per_path_ignores`` silences for ``path``; its globs match as the docs tree's own
        ``ignore`` globs do (`chunkscope.document.loader.is_ignored`), so one pattern means the same in both places."""
        out: set[str] = set()
        for pattern, rules in self.per_path_ignores:
            if is_ignored(path, (pattern,)):
                out |= rules
        return frozenset(out)


def split_ids(items: Iterable[str] | str | None) -> list[str]:
    """``["a,b", "c"]`` or ``"a, b c"`` → ``["a", "b", "c"]``."""
    if items is None:
        return []
    if isinstance(items, str):
        items = [items]
    out: list[str] = []
    for item in items:
        out.extend(x for x in re.split(r"[\s,]+", str(item)) if x)
    return out


class UnknownRule(ConfigError):
    """A rule id lint does not have; ``source`` is where it was named ("select", "ignore", or a config key)."""

    def __init__(self, rule: str, source: str) -> None:
        self.rule, self.source = rule, source
        super().__init__(f"{source}: unknown rule {rule!r} ({self.known()})")

    @staticmethod
    def known() -> str:
        return f"rules: {', '.join(RULES)}"


def _check_ids(ids: Iterable[str], where: str) -> None:
    for rid in ids:
        if rid not in RULES:
            raise UnknownRule(rid, where)


def lint_settings(cfg: Config | None = None, select: Iterable[str] | str | None = None,
                  ignore: Iterable[str] | str | None = None) -> LintSettings:
    """Validate ``[lint]`` and the caller's ``select``/``ignore`` choices (which add to the config's ignore).

    Raises:
        ConfigError: an unknown rule id, severity or threshold, or a value of the wrong type; one line naming
            the file and key.
    """
    raw = dict(cfg.lint) if cfg is not None else {}
    where = f"{cfg.source}: [lint]" if cfg is not None and cfg.source else "[lint]"

    def id_list(key: str) -> list[str] | None:
        if key not in raw:
            return None
        v = raw[key]
        if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
            raise ConfigError(f"{where} {key} must be a list of rule ids")
        _check_ids(v, f"{where} {key}")
        return list(v)

    def table(key: str) -> dict[str, Any]:
        v = raw.get(key, {})
        if not isinstance(v, dict):
            raise ConfigError(f"{where} {key} must be a table")
        return v

    cfg_select = id_list("select")
    cfg_ignore = id_list("ignore") or []
    cli_select = split_ids(select)
    cli_ignore = split_ids(ignore)
    _check_ids(cli_select, "select")
    _check_ids(cli_ignore, "ignore")

    severity: dict[str, str] = {}
    for rid, sev in table("severity").items():
        _check_ids([rid], f"{where} severity")
        if sev not in SEVERITIES:
            raise ConfigError(f"{where} severity.{rid} must be one of {', '.join(SEVERITIES)}, got {sev!r}")
        severity[rid] = sev

    thresholds: dict[str, int] = {}
    for rid, value in table("thresholds").items():
        _check_ids([rid], f"{where} thresholds")
        if RULES[rid].threshold is None:
            takes = ", ".join(r.id for r in RULES.values() if r.threshold)
            raise ConfigError(f"{where} thresholds.{rid}: this rule takes no threshold (rules that do: {takes})")
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0 or int(value) != value:
            raise ConfigError(f"{where} thresholds.{rid} must be a positive whole number, got {value!r}")
        thresholds[rid] = int(value)

    per_path: list[tuple[str, frozenset[str]]] = []
    for pattern, rules in table("per_path_ignores").items():
        if isinstance(rules, str):
            rules = [rules]
        if not isinstance(rules, list) or not all(isinstance(x, str) for x in rules):
            raise ConfigError(f"{where} per_path_ignores.{pattern!r} must be a list of rule ids")
        ids = set(rules)
        if "all" in ids:
            ids = set(RULES)
        _check_ids(ids, f"{where} per_path_ignores.{pattern!r}")
        per_path.append((pattern, frozenset(ids)))

    chosen = cli_select or cfg_select or list(RULES)
    enabled = {r for r in chosen if r not in cfg_ignore and r not in cli_ignore and severity.get(r) != OFF}
    model = cfg.embed_model if cfg is not None else DEFAULT_EMBED_MODEL
    return LintSettings(frozenset(enabled), severity, thresholds, tuple(per_path), model)
