"""The halving plan: the parts of the tree each rung of the search asks about, and the questions it asks.

Rungs of growing fidelity (successive halving, Jamieson & Talwalkar, 2016): the first measures chunkings on a
small part of the tree (whole documents in a fixed pseudo-random order, each rung's part inside the next), each
rung passes the best 1/`ETA` of what it measured to the next, bigger part, and the last runs on the whole tree.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from chunkscope.document.loader import DocsTree
from chunkscope.evaluation.probe import ProbeSet, even_sample, probe_sections
from chunkscope.evaluation.queries import QueriesError, QueryCase
from chunkscope.evaluation.regions import Region, resolve_region

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


@dataclass
class Part:
    """A rung's documents, as a tree, and its questions."""

    tree: DocsTree
    cases: list[QueryCase]
    regions: list[Region]
    labels: list[str]  # ``path:line  question`` per case, for the misses
    qvecs: Any = None


def plan_rungs(tree: DocsTree, queries: Sequence[QueryCase] | None, *, min_level: int, max_level: int, eta: int,
          max_rungs: int, max_questions: int) -> tuple[ProbeSet | None, list[Part], list[Rung]]:
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
    parts: list[Part] = []
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
        parts.append(Part(sub, cases, regions, labels))
        rungs.append(Rung(i, list(paths), sum(len(by_path[p].text) for p in paths), total_chars, len(cases)))
    return pset, parts, rungs
