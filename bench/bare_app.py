"""The baseline of bench_tui.py: a ten-line Textual app showing a DirectoryTree (l shows a pane, Escape hides it)."""
import sys

from textual.app import App
from textual.widgets import DirectoryTree, Static


class Bare(App):
    BINDINGS = [("q", "quit"), ("l", "pane(True)"), ("escape", "pane(False)")]

    def compose(self):
        yield DirectoryTree(sys.argv[1])
        yield Static("BARE PANE OPEN", id="pane")

    def on_mount(self):
        self.action_pane(False)

    def action_pane(self, shown: bool):
        self.query_one("#pane").display = shown


Bare().run()
