"""Help: every key binding (as remapped by the config's keymap), the colours of the source view, the commands."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from chunkscope.tui import layout as L


def binding_rows(groups: list[tuple[str, list[Binding]]], keymap: dict[str, str]) -> Table:
    """A table of (keys, what they do, more) for each group of bindings, keys taken from the keymap."""
    t = Table.grid(padding=(0, 2))
    t.add_column(style="bold #e5c07b", no_wrap=True)
    t.add_column(style="bold")
    t.add_column(style="#8b949e")
    t.add_column(style="dim", no_wrap=True)
    for title, bindings in groups:
        t.add_row(Text(title, style="bold underline #58a6ff"), "", "", "")
        for b in bindings:
            if not b.description:
                continue
            keys = keymap.get(b.id, b.key) if b.id else b.key
            shown = ", ".join(_key_display(k) for k in keys.split(","))
            t.add_row(shown, b.description, b.tooltip, b.id or "")
        t.add_row("", "", "", "")
    return t


def _key_display(key: str) -> str:
    names = {"slash": "/", "question_mark": "?", "left_square_bracket": "[", "right_square_bracket": "]",
             "escape": "esc"}
    return names.get(key.strip(), key.strip())


def legend() -> Text:
    t = Text()
    t.append("Source colours\n", style="bold underline #58a6ff")
    t.append("  chunk  ", style=f"on {L.BAND_BG[0]}")
    t.append(" ")
    t.append("  chunk  ", style=f"on {L.BAND_BG[1]}")
    t.append("  alternating bands, one per chunk (the selected one brighter: ")
    t.append(" selected ", style=f"on {L.BAND_SELECTED_BG[0]}")
    t.append(")\n")
    t.append("  overlap  ", style=f"on {L.OVERLAP_BG}")
    t.append("  text in two chunks (clicking it flips between them)\n")
    t.append("  not embedded  ", style=f"dim on {L.TRUNCATED_BG}")
    t.append("  beyond the model's max_seq_length: the embedder never reads it (gutter ✂)\n")
    t.append("  #12   480", style=L.BAND_FG[0])
    t.append("  gutter label where a chunk starts: index and tokens (red: over the limit or warned)\n")
    t.append("  ●", style=L.SEVERITY_COLOURS["error"])
    t.append(" ◀ rule: message", style=f"italic {L.SEVERITY_COLOURS['warning']}")
    t.append("  a lint finding at that line\n")
    t.append("  text outside every chunk (front matter, blank gaps) is dimmed\n", style="dim")
    t.append("Docs tree\n", style="bold underline #58a6ff")
    t.append("  ●3", style="bold #ff5f5f")
    t.append(" / ")
    t.append("▲12", style="#e5c07b")
    t.append("  before a file's name: its lint errors, or its warnings when it has no error (F lists the files "
             "worst first)\n")
    return t


COMMANDS_HELP = (
    "Command palette (ctrl+p): “strategy: <name>”, “compare: <name>”, “evaluate: presets”, "
    "“index: rebuild”, “export: chunks as JSONL”, “view: lint”, “view: files (worst first)”, “view: query”, "
    "“help: keys”."
)


#: How to leave help, said at its top and on its border (the screen has no footer).
CLOSE_HINT = "esc (or q, ?, F1) closes this help · ↑↓ PgUp PgDn scroll"


class HelpScreen(ModalScreen[None]):
    """Keys, colours and commands; any of escape, q, ? or F1 closes it."""

    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll {
        width: 110; max-width: 95%; height: 90%;
        border: round $accent; background: $panel; padding: 1 2;
    }
    """

    BINDINGS = [
        Binding("escape,q,question_mark,f1", "app.pop_screen", "Close help", id="help.close"),
    ]

    def __init__(self, groups: list[tuple[str, list[Binding]]], keymap: dict[str, str]) -> None:
        super().__init__()
        self.groups = groups
        self.keymap = keymap

    def compose(self) -> ComposeResult:
        with VerticalScroll() as box:
            box.border_title = "chunkscope — keys"
            box.border_subtitle = CLOSE_HINT
            yield Static(Text.assemble(("chunkscope — keys", "bold"), ("   " + CLOSE_HINT, "bold #e5c07b")),
                         id="help-close-hint")
            yield Static(binding_rows(self.groups, self.keymap))
            yield Static(legend())
            yield Static(Text("\n" + COMMANDS_HELP, style="#8b949e"))
            yield Static(Text("\nRemap any key in chunkscope.toml: [tui] keymap = { \"explorer.query\" = \"ctrl+f\" } "
                              "(binding ids in the right-hand column).", style="#8b949e"))
