"""The query pane's words: the answer's status line, the hits with the threshold drawn between kept and filtered,
the expectation line with the core's verdict, and where the threshold comes from. Pure functions of the answer and
the session, so the pane only places them."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.widgets.option_list import Option

from chunkscope.config.reader import ResolvedStrategy
from chunkscope.safe_text import snippet, visible
from chunkscope.tui.headless.search import Answer, Expected, SearchSession
from chunkscope.wording import plural

#: Why the threshold does not apply in the other modes: their scores are no cosines.
MODE_SCORES = {"keyword": "BM25 scores", "hybrid": "fused ranks"}


def strategy_words(resolved: ResolvedStrategy | None, other: ResolvedStrategy | None = None) -> str:
    """A strategy as the results name it: its label (preset name, or name with the parameters set here); with the
    parameters' fingerprint when ``other`` has the same label but other parameters (a changed config file)."""
    if resolved is None:
        return "?"
    text = visible(resolved.label, oneline=True)
    if other is not None and other.label == resolved.label and other.fingerprint() != resolved.fingerprint():
        text += f" [{resolved.fingerprint()[:7]}]"
    return text


def answer_status(a: Answer) -> Text:
    """How many hits, how they were judged (the threshold, or why none applies), the filter, k and the time."""
    where = ""
    if a.filters.get("path"):
        where = f" in {a.filters['path']}"
    elif a.filters.get("chapter"):
        where = f" in chapter {a.filters['chapter']}"
    kept = sum(1 for h in a.hits if h.kept)
    if a.search_mode != "dense":
        judged = (f"{plural(len(a.hits), 'hit')}, {a.search_mode} search "
                  f"({MODE_SCORES.get(a.search_mode, 'not cosines')}: no threshold)")
    elif a.threshold is None:
        judged = f"{plural(len(a.hits), 'hit')}, no threshold"
    else:
        judged = f"{kept} of {len(a.hits)} hits pass the threshold {a.threshold:g}"
    return Text.assemble((judged, "bold"), f"{visible(where, oneline=True)} · top {a.k} · {a.seconds * 1000:.0f} ms")


def hit_options(a: Answer) -> list[Option]:
    """The hits as list options (ids ``hit-N``), the threshold drawn where kept turns to filtered."""
    # The star marks the chunk this answer's verdict judged, by its span: never its overlap neighbours, and
    # never after the expectation changed (the verdict is the answer's own).
    exp = a.verdict.expected if a.verdict else None
    line_drawn = False
    options: list[Option] = []
    for i, h in enumerate(a.hits):
        if not h.kept and not line_drawn and a.threshold is not None:
            options.append(Option(Text(f"──── threshold {a.threshold:g} ──── below it: filtered out, not sent "
                                       "to the model ────", style="bold #e5c07b"), disabled=True))
            line_drawn = True
        # A parent (small-to-big) is the expected one when one of its chunks is.
        mine = exp is not None and any(exp.is_chunk(c.path, c.start, c.end) for c in getattr(h, "children", None) or [h])
        options.append(Option(hit_text(h, mine), id=f"hit-{i}"))
    if not line_drawn and a.threshold is not None and a.hits:
        options.append(Option(Text(f"──── threshold {a.threshold:g} ──── every hit above passes ────",
                                   style="dim #e5c07b"), disabled=True))
    if not a.hits:
        options.append(Option(Text("no hits", style="dim italic"), disabled=True))
    return options


def hit_text(h: Any, mine: bool) -> Text:
    """One hit: the star on the expected chunk, rank, score, citation, path:line, tokens, a snippet."""
    t = Text()
    t.append("★ " if mine else "  ", style="bold #e5c07b")
    t.append(f"{h.rank:>2} ", style="bold")
    t.append(f"{h.score:.3f} ", style="#7ee787" if h.kept else "#ff8787")
    if getattr(h, "search_rank", None):  # a reranked hit: the search's own rank and score beside the reranker's
        t.append(f"(search {h.search_rank}, {h.search_score:.3f}) ", style="dim")
    t.append(visible(h.citation or " › ".join(h.heading_path), oneline=True), style="bold" if h.kept else "dim")
    t.append(f"  {visible(h.path, oneline=True)}:{h.start_line}", style="#58a6ff")
    if h.embed_tokens and h.tokens:
        t.append(f"  {h.tokens} tok", style="dim")
    children = getattr(h, "children", None)
    if children:
        return t + parent_text(h, children)
    t.append("\n     " + snippet(h.text, 140), style="dim" if h.kept else "dim italic")
    return t


def parent_text(h: Any, children: list[Any]) -> Text:
    """A parent's lines and the chunks that found it, then its text around its best chunk, that chunk highlighted:
    the hit inside what the bot sends."""
    found = ", ".join(f"#{c.rank} line {c.start_line}" for c in children)
    t = Text(f"\n     {h.parent} lines {h.start_line}-{h.end_line} · found by {found}", style="dim")
    best = children[0]
    a, b = best.start - h.start, best.end - h.start
    before, inside, after = h.text[:a], h.text[a:b], h.text[b:]
    dim = "dim" if h.kept else "dim italic"
    t.append("\n     ")
    if before.strip():  # the parent's text just before the chunk, its end kept
        t.append(("…" if len(before) > 30 else "") + snippet(before[-30:], 30) + " ", style=dim)
    t.append(snippet(inside, 90), style="bold #e5c07b" if h.kept else "#e5c07b")
    if after.strip():
        t.append(" " + snippet(after, 30), style=dim)
    return t


def verdict_line(exp: Expected | None, dropped: tuple[Expected, str] | None, a: Answer | None,
                 resolved: ResolvedStrategy | None, expect_question: str | None) -> Text | None:
    """The expectation line: the expected chunk and the core's verdict on it for the answer shown (the words eval
    and probe print), or the expectation a newer question dropped; None when there is nothing to say."""
    if exp is None:
        if dropped is not None:
            old, question = dropped
            return Text.assemble(
                ("expectation dropped: ", "bold #e5c07b"),
                (f"{visible(old.describe(), oneline=True)} was expected for “{visible(question, oneline=True)}”", ""),
                (" — select a chunk and press e to expect one for this question", "dim"))
        return None
    t = Text.assemble(("expected ", "bold"), (visible(exp.describe(), oneline=True), "#58a6ff"))
    if resolved is not None and exp.strategy_label != resolved.label:
        # Cut by another strategy: its span is judged as text; no hit of this strategy is that chunk.
        t.append(f" (a chunk of {visible(exp.strategy_label, oneline=True)}; judged by its text)", style="dim")
    if expect_question is not None:
        t.append(f" for “{visible(expect_question, oneline=True)}”", style="")
    if a is None or a.verdict is None or a.verdict.expected != exp:
        t.append("  — ask a question (Enter) to see its rank", style="dim")
    else:
        v = a.verdict
        if v.hit:
            t.append(f"  ✔ found: rank {v.rank}, score {v.score:.3f}", style="bold #7ee787")
        else:
            # The core's words (reason, rank, score), as eval and probe print them.
            t.append(f"  ✖ missed: {v.words}", style="bold #ff5f5f")
            if v.detail and not v.detail.startswith("rank "):  # "rank N" is already said
                t.append(f" — {visible(v.detail, oneline=True)}", style="")
    return t


def threshold_source(s: SearchSession) -> Text:
    """Where the threshold in force comes from, and whether it applies to the current search mode."""
    mode = s.search_mode
    if mode != "dense":
        # The words that matter first: a narrow terminal cuts the rest (the tooltip has it all).
        return Text(f"not applied to {mode} search ({MODE_SCORES.get(mode, 'not cosines')}: dense only)",
                    style="italic")
    spec = s.embedder_spec
    model = visible(spec.text, oneline=True) if spec is not None else "the embedder"
    origin = s.threshold_origin
    if origin == "here":
        words = "set here (empty: the default)"
    elif origin == "config" and "query.threshold" in s.config.from_command_line:
        words = "the command line (--threshold)"
    elif origin == "config":
        source = s.config.source
        words = visible(source.name, oneline=True) if source is not None else "the configuration"
    elif origin == "embedder":
        words = f"{model}'s own"
    else:
        words = f"none: {model} has no measured threshold (type one)"
    return Text(words)
