"""A one-line footer of the active key bindings, drawn as text (no widget per key), clickable, with tooltips.

Textual's ``Footer`` recomposes a widget per binding whenever focus moves; on a screen this busy that cost
half a second at start-up. This bar renders the same information as one line of text.
"""

from __future__ import annotations

from collections import defaultdict

from rich.text import Text
from textual import events
from textual.binding import Binding
from textual.reactive import reactive
from textual.widget import Widget


class KeyBar(Widget):
    """The screen's active bindings (``show=True``) as ``key description`` pairs; click one to press it."""

    DEFAULT_CSS = """
    KeyBar { dock: bottom; height: 1; background: $footer-background; color: $footer-foreground; }
    """

    version: reactive[int] = reactive(0)
    """Bumped when the screen's bindings change (redraws the bar)."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._spans: list[tuple[int, int, Binding, str]] = []

    def on_mount(self) -> None:
        self.screen.bindings_updated_signal.subscribe(self, self._bindings_changed)

    def _bindings_changed(self, screen) -> None:
        self.version += 1

    def _entries(self) -> list[tuple[Binding, bool, str]]:
        by_action: dict[str, list[tuple[Binding, bool, str]]] = defaultdict(list)
        for _node, binding, enabled, tooltip in self.screen.active_bindings.values():
            if binding.show and binding.description:
                by_action[binding.action].append((binding, enabled, tooltip))
        return [entries[0] for entries in by_action.values()]

    def render(self) -> Text:
        text = Text(no_wrap=True, overflow="ellipsis")
        self._spans = []
        for binding, enabled, tooltip in self._entries():
            key = self.app.get_key_display(binding)
            start = text.cell_len
            text.append(f" {key} ", style="bold #e5c07b" if enabled else "dim")
            text.append(f"{binding.description} ", style="" if enabled else "dim")
            self._spans.append((start, text.cell_len, binding, tooltip or binding.tooltip or binding.description))
        palette = " ^p palette "
        gap = self.size.width - text.cell_len - len(palette)
        if gap > 0 and self.app.ENABLE_COMMAND_PALETTE:
            text.append(" " * gap)
            text.append(palette, style="bold #8b949e")
        return text

    def _at(self, x: int) -> tuple[Binding, str] | None:
        for start, end, binding, tip in self._spans:
            if start <= x < end:
                return binding, tip
        return None

    def on_mouse_move(self, event: events.MouseMove) -> None:
        hit = self._at(event.x)
        self.tooltip = hit[1] if hit else None

    def on_click(self, event: events.Click) -> None:
        hit = self._at(event.x)
        if hit is not None:
            self.app.simulate_key(hit[0].key.split(",")[0])
        elif event.x >= self.size.width - 12 and self.app.ENABLE_COMMAND_PALETTE:
            self.app.action_command_palette()
