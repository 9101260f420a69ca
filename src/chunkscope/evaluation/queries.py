"""The questions file: each question and the passage it expects, read from JSONL or YAML.

A queries file (JSONL, or a YAML list) holds ``{"query": "...", "expect": {"path": "...", "heading"?: "...",
"anchor"?: "...", "text"?: "..."}}``; `load_queries` reads it into `QueryCase` objects, and a malformed line fails
with one message naming ``file:line``.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

_EXPECT_KEYS = ("path", "heading", "anchor", "text")


class QueriesError(Exception):
    """The queries file cannot be used; names file:line and the problem."""



@dataclass(frozen=True)
class Expect:
    path: str
    heading: str | None = None
    anchor: str | None = None
    text: str | None = None

    def to_dict(self) -> dict[str, str]:
        return {k: v for k, v in asdict(self).items() if v is not None}

    def describe(self) -> str:
        if self.text is not None:
            short = self.text if len(self.text) <= 40 else self.text[:37] + "…"
            return f"{self.path} “{short}”"
        if self.anchor is not None:
            return f"{self.path}#{self.anchor}"
        if self.heading is not None:
            return f"{self.path} › {self.heading}"
        return self.path


@dataclass(frozen=True)
class QueryCase:
    query: str
    expect: Expect
    source: str = ""
    line: int = 0
    id: str | None = None

    @property
    def where(self) -> str:
        return f"{self.source}:{self.line}"


def _case(obj: Any, source: str, line: int) -> QueryCase:
    where = f"{source}:{line}"
    if not isinstance(obj, dict):
        raise QueriesError(f"{where}: expected an object with \"query\" and \"expect\", got {type(obj).__name__}")
    q = obj.get("query")
    if not isinstance(q, str) or not q.strip():
        raise QueriesError(f"{where}: \"query\" is missing or not a non-empty string")
    exp = obj.get("expect")
    if isinstance(exp, str):
        exp = {"path": exp}
    if not isinstance(exp, dict):
        raise QueriesError(f"{where}: \"expect\" is missing or not an object like {{\"path\": \"intro.md\"}}")
    unknown = sorted(set(exp) - set(_EXPECT_KEYS))
    if unknown:
        raise QueriesError(f"{where}: unknown key {unknown[0]!r} in \"expect\" (allowed: {', '.join(_EXPECT_KEYS)})")
    for k in _EXPECT_KEYS:
        v = exp.get(k)
        if v is not None and (not isinstance(v, str) or not v.strip()):
            raise QueriesError(f"{where}: \"expect.{k}\" must be a non-empty string")
    if not exp.get("path"):
        raise QueriesError(f"{where}: \"expect.path\" is missing")
    anchor = exp.get("anchor")
    ident = obj.get("id")
    return QueryCase(
        query=q.strip(),
        expect=Expect(path=exp["path"].strip(), heading=exp.get("heading"), text=exp.get("text"),
                      anchor=anchor.strip().lstrip("#") if anchor else None),
        source=source,
        line=line,
        id=str(ident) if ident is not None else None,
    )


def load_queries(path: str | Path) -> list[QueryCase]:
    """Read a queries file: JSONL (one object a line; blank and ``#`` lines skipped) or a YAML list.

    Raises:
        QueriesError: the file is missing, empty, or a line is malformed (message names file:line).
    """
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise QueriesError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise QueriesError(f"{path}: cannot read ({exc})") from None
    name = str(path)
    if p.suffix.lower() in (".yaml", ".yml"):
        cases = _load_yaml(text, name)
    else:
        cases = []
        for n, raw in enumerate(text.splitlines(), 1):
            s = raw.strip()
            if not s or s.startswith("#") or s.startswith("//"):
                continue
            try:
                obj = json.loads(s)
            except json.JSONDecodeError as exc:
                raise QueriesError(f"{name}:{n}: not valid JSON ({exc.msg} at column {exc.colno})") from None
            cases.append(_case(obj, name, n))
    if not cases:
        raise QueriesError(f"{name}: no queries in the file")
    return cases


def _load_yaml(text: str, name: str) -> list[QueryCase]:
    import yaml

    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else 1
        raise QueriesError(f"{name}:{line}: not valid YAML ({getattr(exc, 'problem', None) or exc})") from None
    if root is None:
        return []
    if isinstance(root, yaml.MappingNode) and isinstance(data, dict) and isinstance(data.get("queries"), list):
        # {"queries": [...]}: take the list and its node
        for k, v in root.value:
            if k.value == "queries":
                root = v
        data = data["queries"]
    if not isinstance(root, yaml.SequenceNode) or not isinstance(data, list):
        raise QueriesError(f"{name}:{root.start_mark.line + 1}: expected a list of queries")
    return [_case(obj, name, node.start_mark.line + 1) for node, obj in zip(root.value, data)]
