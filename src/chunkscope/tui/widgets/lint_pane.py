"""The tree's lint findings, errors first in reading order; Enter jumps to the line in the source."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.message import Message
from textual.reactive import reactive
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from ...cli.common import visible
from ..session import TreeResult, lint_module

SEVERITY_STYLE = {"error": ("✖", "bold #ff5f5f"), "warning": ("▲", "bold #e5c07b")}


class LintPane(Vertical):
    """Findings of the whole tree under the current strategy (from the tree worker's lint run)."""

    DEFAULT_CSS = """
    LintPane { height: 100%; }
    LintPane #lint-summary { height: auto; padding: 0 1; }
    LintPane #findings { height: 1fr; border: none; }
    """

    result: reactive[TreeResult | None] = reactive(None, always_update=True)
    """The tree's chunks and lint report (None while the tree worker runs)."""

    class JumpTo(Message):
        """Show a finding's line in the source."""

        def __init__(self, pane: "LintPane", finding: Any) -> None:
            super().__init__()
            self.pane = pane
            self.finding = finding

        @property
        def control(self) -> "LintPane":
            return self.pane

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._findings: list[Any] = []

    def compose(self) -> ComposeResult:
        yield Static(id="lint-summary")
        yield OptionList(id="findings")

    def on_mount(self) -> None:
        self.watch_result(self.result)

    def focus_list(self) -> None:
        self.query_one("#findings", OptionList).focus()

    def watch_result(self, result: TreeResult | None) -> None:
        if not self.query("#findings"):
            return  # not composed yet: on_mount fills it
        summary = self.query_one("#lint-summary", Static)
        box = self.query_one("#findings", OptionList)
        box.clear_options()
        self._findings = []
        if lint_module() is None:
            summary.update(Text("Lint is not available in this build (chunkscope.lint is missing).", style="italic"))
            return
        if result is None:
            summary.update(Text("Linting the tree…", style="dim italic"))
            return
        if result.lint_error:
            summary.update(Text(f"Lint could not run: {visible(result.lint_error, oneline=True)}", style="bold red"))
            return
        report = result.lint
        if report is None:
            summary.update(Text("No lint report.", style="dim italic"))
            return
        order = {p: i for i, p in enumerate(result.entries)}
        findings = sorted(report.findings, key=lambda f: (f.severity != "error", order.get(f.path, 1 << 30), f.line))
        self._findings = findings
        head = Text.assemble(
            (f"{report.errors} errors", "bold #ff5f5f" if report.errors else "bold #7ee787"), ", ",
            (f"{report.warnings} warnings", "bold #e5c07b" if report.warnings else ""),
            f" with {result.resolved.label}",
        )
        if report.by_rule:
            head.append("  ·  " + ", ".join(f"{k} {v}" for k, v in report.by_rule.items()), style="dim")
        if report.failed:
            head.append(f"  ·  {len(report.failed)} files could not be chunked", style="red")
        summary.update(head)
        options = []
        for i, f in enumerate(findings):
            mark, style = SEVERITY_STYLE.get(f.severity, ("•", ""))
            t = Text()
            t.append(f"{mark} ", style=style)
            t.append(f"{visible(f.path, oneline=True)}:{f.line}", style="#58a6ff")
            t.append(f"  {f.rule}", style=style)
            if f.chunk_index is not None:
                t.append(f"  #{f.chunk_index}", style="dim")
            t.append(f"  {visible(f.message, oneline=True)}")
            options.append(Option(t, id=f"finding-{i}"))
        if not options:
            options.append(Option(Text("No findings: every chunk passes.", style="#7ee787"), disabled=True))
        box.add_options(options)

    @on(OptionList.OptionSelected, "#findings")
    def _chosen(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        oid = event.option.id
        if oid and oid.startswith("finding-"):
            self.post_message(self.JumpTo(self, self._findings[int(oid[8:])]))
