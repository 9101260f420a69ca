"""Chunk sizes at a glance: one-line histograms of token counts (this file, the whole tree) against the limit."""

from __future__ import annotations

from rich.text import Text
from textual.reactive import reactive
from textual.widget import Widget

from chunkscope.wording import plural

BLOCKS = " ▁▂▃▄▅▆▇█"


def histogram_text(label: str, counts: list[int] | None, limit: int | None, bins: int = 32) -> Text:
    """``label ▁▃█▆▂┃▁ 12 chunks · median 301 · max 540/512 · 2 over``; bins past the limit are red."""
    out = Text(f"{label:<5}", style="bold #8b949e")
    if counts is None:
        out.append("counting…", style="dim italic")
        return out
    if not counts:
        out.append("no chunks", style="dim italic")
        return out
    import statistics  # here: the first frame says "counting…" and does without it

    top = max(max(counts), limit or 0, 1)
    # The limit sits on a bin edge when there is one: everything right of the marker is over it.
    step = max(1, -(-top // bins))
    if limit:
        per = max(1, round(bins * limit / top))
        step = max(1, -(-limit // per))
    nbins = max(1, -(-top // step))
    hist = [0] * nbins
    for c in counts:
        hist[min(max(c - 1, 0) // step, nbins - 1)] += 1
    peak = max(hist) or 1
    for i, h in enumerate(hist):
        lo = i * step + 1
        if limit and lo > limit and (i == 0 or (i - 1) * step + 1 <= limit):
            out.append("┃", style="bold #e5c07b")
        level = 0 if h == 0 else max(1, round(h / peak * (len(BLOCKS) - 1)))
        over = limit is not None and lo > limit
        out.append(BLOCKS[level], style=("#ff5f5f" if over else "#7ee787") + " on #1c2128")
    if limit and all((i * step + 1) <= limit for i in range(nbins)):
        out.append("┃", style="bold #e5c07b")
    n_over = sum(1 for c in counts if limit is not None and c > limit)
    out.append(f" {plural(len(counts), 'chunk')} · median {statistics.median(counts):.0f} · max {max(counts)}")
    if limit is not None:
        out.append(f"/{limit}", style="#e5c07b")
        out.append(f" · {n_over} over", style="bold #ff5f5f" if n_over else "dim")
    return out


class TokenHistogram(Widget):
    """Two lines: the open file's chunk sizes and the tree's, in the strategy's tokenizer, against its limit."""

    DEFAULT_CSS = """
    TokenHistogram { height: 2; padding: 0 1; }
    """

    file_counts: reactive[tuple[int, ...] | None] = reactive(None)
    """Token counts of the open file's chunks."""
    tree_counts: reactive[tuple[int, ...] | None] = reactive(None)
    """Token counts of every chunk of the tree (None while the tree worker runs)."""
    limit: reactive[int | None] = reactive(None)
    """The strategy's maximum, in its tokenizer."""
    unit: reactive[str] = reactive("tokens")
    """The tokenizer the counts are in."""

    def on_mount(self) -> None:
        self.tooltip = "chunk sizes, this file's and the tree's; h shows them with their axis (bins, counts, limit)"

    def render(self) -> Text:
        width = max(self.size.width, 40)
        bins = max(8, min(48, (width - 60) // 2))
        a = histogram_text("file", list(self.file_counts) if self.file_counts is not None else None, self.limit, bins)
        b = histogram_text("tree", list(self.tree_counts) if self.tree_counts is not None else None, self.limit, bins)
        b.append(f"  ({self.unit})", style="dim")
        return Text("\n").join([a, b])
