"""A one-line footer of the active key bindings, drawn as text (no widget per key), clickable, with tooltips.

Textual's ``Footer`` recomposes a widget per binding whenever focus moves; on a screen this busy that cost
half a second at start-up. This bar renders the same information as one line of text.
"""

from __future__ import annotations

import unicodedata
from collections import defaultdict

from rich.text import Text
from textual import events
from textual.binding import Binding
from textual.keys import REPLACED_KEYS, key_to_character
from textual.reactive import reactive
from textual.widget import Widget


#: Bindings kept at the right-hand end, whatever the width: how to get help and how to leave.
PINNED = ("app.help", "app.quit", "app.quit-anywhere")


def typed_character(key: str) -> str | None:
    """The character a key types, if any (``slash`` -> ``/``, which Textual's own lookup misses)."""
    ch = key_to_character(key)
    if ch is None and "+" not in key:
        name = REPLACED_KEYS.get(key)  # "slash" -> "solidus", the character's Unicode name
        if name is not None:
            try:
                ch = unicodedata.lookup(name.replace("_", " ").upper())
            except KeyError:
                ch = None
    return ch


class KeyBar(Widget):
    """The screen's active bindings (``show=True``) as ``key description`` pairs; click one to press it.

    Help and quit stay at the right-hand end (the rest is cut with an ellipsis when the terminal is narrow),
    after `status` (background work the screen wants seen, such as indexing). A key the focused text field
    would type is left out: pressing it there types it.
    """

    DEFAULT_CSS = """
    KeyBar { dock: bottom; height: 1; background: $footer-background; color: $footer-foreground; }
    """

    version: reactive[int] = reactive(0)
    """Bumped when the screen's bindings change (redraws the bar)."""
    status: reactive[str] = reactive("")
    """Background work still running (e.g. ``indexing 120/880``), shown before help and quit."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._spans: list[tuple[int, int, Binding, str]] = []
        #: Where the palette's label starts (None when it did not fit).
        self._palette_at: int | None = None

    def on_mount(self) -> None:
        self.screen.bindings_updated_signal.subscribe(self, self._bindings_changed)

    def _bindings_changed(self, screen) -> None:
        self.version += 1

    def _entries(self) -> list[tuple[Binding, bool, str]]:
        focused = self.screen.focused
        by_action: dict[str, list[tuple[Binding, bool, str]]] = defaultdict(list)
        for key, (_node, binding, enabled, tooltip) in self.screen.active_bindings.items():
            if not (binding.show and binding.description):
                continue
            if focused is not None and focused.check_consume_key(key, typed_character(key)):
                continue  # the field types this key (Textual keeps `/` here: it cannot name its character)
            by_action[binding.action].append((binding, enabled, tooltip))
        # One key per action; a plain key before a priority one (q before ctrl+q, which is there for text fields).
        return [min(entries, key=lambda e: e[0].priority) for entries in by_action.values()]

    def _piece(self, text: Text, spans: list[tuple[int, int, Binding, str]], binding: Binding, enabled: bool,
               tooltip: str) -> None:
        key = self.app.get_key_display(binding)
        start = text.cell_len
        text.append(f" {key} ", style="bold #e5c07b" if enabled else "dim")
        text.append(f"{binding.description} ", style="" if enabled else "dim")
        spans.append((start, text.cell_len, binding, tooltip or binding.tooltip or binding.description))

    def render(self) -> Text:
        width = self.size.width
        entries = self._entries()
        pinned = [e for e in entries if e[0].id in PINNED]
        pinned.sort(key=lambda e: PINNED.index(e[0].id))
        left = Text(no_wrap=True, overflow="ellipsis")
        left_spans: list[tuple[int, int, Binding, str]] = []
        for binding, enabled, tooltip in entries:
            if binding.id not in PINNED:
                self._piece(left, left_spans, binding, enabled, tooltip)
        right = Text(no_wrap=True)
        right_spans: list[tuple[int, int, Binding, str]] = []
        if self.status:
            right.append(f" {self.status} ", style="bold #0d1117 on #e5c07b")
        for binding, enabled, tooltip in pinned:
            self._piece(right, right_spans, binding, enabled, tooltip)
        palette = " ^p palette "
        if self.app.ENABLE_COMMAND_PALETTE and left.cell_len + right.cell_len + len(palette) <= width:
            right.append(palette, style="bold #8b949e")
        room = max(width - right.cell_len, 0)
        if left.cell_len > room:
            left.truncate(room, overflow="ellipsis")
            left_spans = [(a, min(b, room), bn, tip) for a, b, bn, tip in left_spans if a < room]
        offset = room
        text = Text(no_wrap=True, overflow="crop")
        text.append_text(left)
        text.append(" " * max(room - left.cell_len, 0))
        text.append_text(right)
        self._spans = left_spans + [(a + offset, b + offset, bn, tip) for a, b, bn, tip in right_spans]
        self._palette_at = offset + right.cell_len - len(palette) if right.plain.endswith(palette) else None
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
        elif self._palette_at is not None and event.x >= self._palette_at and self.app.ENABLE_COMMAND_PALETTE:
            self.app.action_command_palette()
