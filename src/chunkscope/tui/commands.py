"""Command palette commands, named "category: action": strategies, compare, index, export, views, help."""

from __future__ import annotations

from functools import partial
from typing import Callable

from textual.command import DiscoveryHit, Hit, Hits, Provider

from chunkscope.chunking.chunk import strategy_names


class ChunkscopeCommands(Provider):
    """Everything the explorer can do from the palette (ctrl+p)."""

    def _commands(self) -> list[tuple[str, Callable[[], object], str]]:
        from chunkscope.tui.screens.explorer import ExplorerScreen

        app = self.app
        explorer = next((s for s in app.screen_stack if isinstance(s, ExplorerScreen)), None)
        if explorer is None:
            return []
        out: list[tuple[str, Callable[[], object], str]] = []
        names = strategy_names()
        presets = list(explorer.config.presets)
        for name in names + presets:
            out.append((f"strategy: {name}", partial(app.choose_strategy, name), f"re-cut the tree with {name}"))
        for name in names + presets:
            out.append((f"compare: {name}", partial(app.compare_with, name),
                        f"the open file cut by the current strategy and by {name}, side by side"))
        out += [
            ("evaluate: presets", explorer.action_evaluate,
             "probe the current strategy and every configured preset; their retrieval metrics side by side"),
            ("index: rebuild", explorer.rebuild_index, "drop this strategy's vector index and build it again"),
            ("export: chunks as JSONL", explorer.export_chunks,
             "write every chunk of the tree (current strategy) to a .jsonl file in the working directory"),
            ("view: lint", explorer.action_lint, "the tree's lint findings"),
            ("view: files (worst first)", explorer.action_files,
             "every file with its chunks, over-limit chunks, errors, warnings and unread text, worst first"),
            ("view: query", explorer.action_query, "ask the docs a question"),
            ("help: keys", app.action_help, "every key, the colours of the source view"),
        ]
        return out

    async def discover(self) -> Hits:
        for text, callback, help_text in self._commands():
            yield DiscoveryHit(text, callback, help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for text, callback, help_text in self._commands():
            score = matcher.match(text)
            if score > 0:
                yield Hit(score, matcher.highlight(text), callback, help=help_text)
