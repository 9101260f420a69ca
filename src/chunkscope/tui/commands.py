"""Command palette commands, named "category: action": strategies, compare, index, export, views, help, and the
tree's pages (``open: <path>``, also alone behind ctrl+g)."""

from __future__ import annotations

from functools import partial
from typing import Callable, Protocol, cast

from textual.command import DiscoveryHit, Hit, Hits, Provider

from chunkscope.chunking.registry import strategy_names
from chunkscope.config.reader import choosable_presets
from chunkscope.safe_text import visible


class PaletteApp(Protocol):
    """What the commands ask of the app (the app's module imports this one: no import back)."""

    def choose_strategy(self, name: str) -> None: ...

    def compare_with(self, name: str) -> None: ...

    def action_help(self) -> None: ...


class ChunkscopeCommands(Provider):
    """Everything the explorer can do from the palette (ctrl+p)."""

    def _commands(self) -> list[tuple[str, Callable[[], object], str]]:
        from chunkscope.tui.screens.explorer import ExplorerScreen

        app = cast(PaletteApp, self.app)
        explorer = next((s for s in self.app.screen_stack if isinstance(s, ExplorerScreen)), None)
        if explorer is None:
            return []
        out: list[tuple[str, Callable[[], object], str]] = []
        names = strategy_names()
        presets = list(choosable_presets(explorer.config))
        for name in names + presets:
            out.append((f"strategy: {name}", partial(app.choose_strategy, name), f"re-cut the tree with {name}"))
        for name in names + presets:
            out.append((f"compare: {name}", partial(app.compare_with, name),
                        f"the open file cut by the current strategy and by {name}, side by side"))
        out += [
            ("evaluate: presets", explorer.action_evaluate,
             "probe the current strategy and every configured preset; their retrieval metrics side by side"),
            ("evaluate: two configurations", explorer.action_evaluate_pair,
             "pick two configurations (current values or presets, search mode, embed prefix) and probe them side "
             "by side"),
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


class FileFinder(Provider):
    """The tree's pages by path and title, matched fuzzily: ``open: <path>`` opens one in the explorer."""

    def _pages(self) -> list[tuple[str, str, Callable[[], object]]]:
        """(path, title, open it) of every page, in reading order (read on the UI thread: the watcher edits the
        list)."""
        from chunkscope.tui.screens.explorer import ExplorerScreen

        explorer = next((s for s in self.app.screen_stack if isinstance(s, ExplorerScreen)), None)
        if explorer is None:
            return []
        pages: list[tuple[str, str, Callable[[], object]]] = []
        for doc in explorer.docs.documents:
            title = doc.front_matter.get("title")
            pages.append((doc.path, visible(title, oneline=True) if isinstance(title, str) else "",
                          partial(explorer.open_page, doc.path)))
        return pages

    async def discover(self) -> Hits:
        for path, title, open_it in self._pages():
            yield DiscoveryHit(f"open: {visible(path, oneline=True)}", open_it, help=title or None)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for path, title, open_it in self._pages():
            text = f"open: {visible(path, oneline=True)}"
            # The name or the title, whichever matches better (a chapter is found by either).
            score = max(matcher.match(text), matcher.match(title) * 0.9 if title else 0.0)
            if score > 0:
                yield Hit(score, matcher.highlight(text), open_it, help=title or None)
