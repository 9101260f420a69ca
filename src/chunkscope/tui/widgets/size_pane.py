"""Chunk sizes as ``chunkscope stats`` draws them: the header's sparklines with their axis (token bins, a bar and a
count each, the limit marked), for the whole tree and for the open file."""

from __future__ import annotations

import statistics

from rich.text import Text
from textual.reactive import reactive
from textual.widgets import Static

from chunkscope.chunking.stats import histogram_lines
from chunkscope.safe_text import visible
from chunkscope.tui.headless.session import FileResult, TreeResult
from chunkscope.wording import plural

#: The widest bar, in cells (the range label, the count and the padding take the rest of an 80-column pane).
BAR_WIDTH = 40


def histogram_rows(title: str, counts: list[int], limit: int | None) -> Text:
    """A title line, then one row per token bin: its (lo, hi] range, a bar and the count, bins past the limit red,
    a rule at the limit (a bin edge: `histogram_lines` makes the bins divide it)."""
    out = Text(title, style="bold")
    if not counts:
        out.append("\n  no chunks", style="dim italic")
        return out
    out.append(f"  {plural(len(counts), 'chunk')} · median {statistics.median(counts):.0f} · max {max(counts)}",
               style="dim")
    ruled = False
    for label, bar, n, over in histogram_lines(counts, limit, width=BAR_WIDTH):
        if over and not ruled and limit is not None:
            out.append(f"\n{'─' * 14} limit {limit} {'─' * 8}", style="bold #e5c07b")
            ruled = True
        out.append(f"\n{label} ")
        out.append(bar, style="#ff5f5f" if over else "#7ee787")
        out.append(f" {n}", style="bold #ff5f5f" if over and n else "")
    if limit is not None and not ruled:
        out.append(f"\n{'─' * 14} limit {limit}: every chunk is within it", style="#e5c07b")
    return out


class SizePane(Static, can_focus=True):
    """The bottom pane of chunk sizes (key h): the tree's histogram, then the open file's, in the strategy's
    tokenizer against its limit; scrolls when the terminal is short."""

    DEFAULT_CSS = """
    SizePane { height: 100%; overflow-y: auto; padding: 0 1; }
    """

    tree_result: reactive[TreeResult | None] = reactive(None, always_update=True)
    """The tree's chunks (None while the tree worker runs)."""
    result: reactive[FileResult | None] = reactive(None, always_update=True)
    """The open file's chunks."""

    def watch_tree_result(self) -> None:
        self._redraw()

    def watch_result(self) -> None:
        self._redraw()

    def on_mount(self) -> None:
        self._redraw()

    def _redraw(self) -> None:
        tree, file = self.tree_result, self.result
        parts: list[Text] = []
        if tree is None:
            parts.append(Text("Counting the tree's chunks…", style="dim italic"))
        else:
            limits = tree.resolved.strategy.limits()
            parts.append(histogram_rows(f"tree · chunk sizes in {limits.tokenizer} tokens", tree.token_counts(),
                                        limits.max))
        if file is not None and file.chunks:
            limits = file.resolved.strategy.limits()
            parts.append(histogram_rows(f"{visible(file.doc.path, oneline=True)} · chunk sizes in {limits.tokenizer} tokens",
                                        [c.tokens for c in file.chunks], limits.max))
        self.update(Text("\n\n").join(parts))
