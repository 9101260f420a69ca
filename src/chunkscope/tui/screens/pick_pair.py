"""Pick two retrieval configurations (key V): each a preset or the strategy bar's current values, with a search mode
and an embed prefix of its own; the evaluation view then probes exactly those two side by side, nothing written.
Given a file of labelled questions (as for ``chunkscope eval``), ``eval``'s metrics and misses join the probe's.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Select, Static

from chunkscope.chunking.params import ParamError
from chunkscope.chunking.registry import UnknownStrategy, get_strategy
from chunkscope.config.reader import Config, ResolvedStrategy, choosable_presets
from chunkscope.evaluation.queries import QueriesError, load_queries
from chunkscope.retrieval.search_modes import SEARCH_MODES
from chunkscope.safe_text import visible
from chunkscope.tui.headless.session import resolve
from chunkscope.tui.screens.evaluation import Configuration
from chunkscope.tui.widgets.key_bar import KeyBar

#: The value of the "current" choice in a side's strategy list (a preset is listed by its name).
CURRENT = "\0current"
SIDES = ("a", "b")


def with_prefix(config: Config, current: ResolvedStrategy, source: str, prefix: str) -> ResolvedStrategy:
    """The strategy a side names: the current one (the strategy bar's values) or a preset, with ``embed_prefix``
    set to ``prefix`` when one is given. Raises the core's ParamError/UnknownStrategy (a bad template)."""
    if source != CURRENT:
        return resolve(config, source, {"embed_prefix": prefix} if prefix else None)
    if not prefix:
        return current
    strategy = get_strategy(current.name, **{**current.params, "embed_prefix": prefix})
    label = current.label[:-1] + f",embed_prefix={prefix})" if current.label.endswith(")") else \
        f"{current.label}(embed_prefix={prefix})"
    return replace(current, label=label, strategy=strategy)


def configuration(side: str, resolved: ResolvedStrategy, mode: str) -> Configuration:
    """One column: ``A: recursive · dense``; the mode is carried on the strategy for the explorer (a miss opened
    from the evaluation view searches as it was probed)."""
    return Configuration(f"{side.upper()}: {resolved.label} · {mode}", replace(resolved, search=mode), mode)


@dataclass(frozen=True)
class PairChoice:
    """What the picker hands the evaluation view: the two columns, and the labelled questions when a file was
    given (``QueryCase``s, read and checked in the picker: a bad file is one line there, before any work)."""

    configurations: list[Configuration]
    queries: list[Any] = field(default_factory=list)
    queries_name: str = ""


class PickPairScreen(ModalScreen[PairChoice | None]):
    """Two columns (A and B): strategy (current or a preset), search mode, embed prefix; Enter probes both."""

    DEFAULT_CSS = """
    PickPairScreen { align: center middle; }
    #pair { width: 100%; max-width: 120; height: auto; max-height: 100%; border: round $primary;
            background: $panel; padding: 0 1; }
    #pair-title, #pair-status { height: auto; }
    #pair-sides { height: auto; }
    #pair-sides > Vertical { width: 1fr; height: auto; }
    #pair-side-a { margin-right: 1; }
    #pair Label { margin-top: 1; text-style: bold; }
    #pair Select, #pair Input { width: 100%; }
    #pair-run { margin-top: 1; }
    """

    BINDINGS = [
        Binding("escape", "cancel", "Back", id="pair.back", tooltip="back to the explorer, nothing probed"),
        Binding("ctrl+r", "run", "Probe both", id="pair.run", priority=True,
                tooltip="probe the two configurations side by side: metrics and the sections each one missed "
                        "(Enter in a text field does the same); with a queries file, eval's metrics too"),
    ]

    def __init__(self, config: Config, current: ResolvedStrategy, search_mode: str, queries: str = "") -> None:
        """Args:
            current: the strategy bar's strategy and parameters (the "current" choice).
            search_mode: the app's search mode now (each side starts in it, or in its preset's own).
            queries: the queries file the field starts with: ``--queries``, or the one given here last (empty:
                none).
        """
        super().__init__()
        self.config = config
        self.queries = queries
        self.current = current
        self.search_mode = search_mode
        self.presets: dict[str, dict[str, Any]] = choosable_presets(config)

    def _initial(self, side: str) -> str:
        """A: the current values; B: the first preset that is not them (else the current values too)."""
        if side == "a":
            return CURRENT
        for name in self.presets:
            if name != self.current.label:
                return name
        return CURRENT

    def _mode_of(self, source: str) -> str:
        """The current values search as the app does now (ctrl+s may have changed it since a preset set it); a
        preset in its own mode when it names one (what tune chose), else in the app's."""
        named = None if source == CURRENT else self.presets.get(source, {}).get("search")
        return named if named in SEARCH_MODES else self.search_mode

    def compose(self) -> ComposeResult:
        sources: list[tuple[str, str]] = [(f"current: {visible(self.current.label, oneline=True)}", CURRENT)]
        sources += [(f"preset: {visible(name, oneline=True)}", name) for name in self.presets]
        with Vertical(id="pair"):
            yield Static(Text("Compare the retrieval of two configurations (probe: every section heading asked, "
                              "its body expected; nothing is written)", style="bold"), id="pair-title")
            with Horizontal(id="pair-sides"):
                for side in SIDES:
                    source = self._initial(side)
                    with Vertical(id=f"pair-side-{side}"):
                        yield Label(f"{side.upper()}: strategy")
                        yield Select(sources, value=source, allow_blank=False, id=f"{side}-source",
                                     compact=True)
                        yield Label("search")
                        yield Select([(m, m) for m in SEARCH_MODES], value=self._mode_of(source), allow_blank=False,
                                     id=f"{side}-search", compact=True)
                        yield Label("embed prefix")
                        yield Input(placeholder="as set (none, title, heading, breadcrumb or a template)",
                                    id=f"{side}-prefix", compact=True)
            yield Label("labelled questions (optional): a queries file as for `chunkscope eval`",
                        id="pair-queries-label")
            yield Input(self.queries, placeholder="path to a .jsonl or .yaml file; empty: the probe alone",
                        id="pair-queries", compact=True)
            yield Static(id="pair-status")
            yield Button("Probe both (ctrl+r)", variant="primary", id="pair-run", compact=True)
        yield KeyBar()

    def on_mount(self) -> None:
        self.query_one("#a-source", Select).focus()

    @on(Select.Changed)
    def _source_changed(self, event: Select.Changed) -> None:
        """A preset naming its search mode (what tune chose) brings it along; the user may change it after."""
        sid = event.select.id or ""
        if not sid.endswith("-source") or not isinstance(event.value, str):
            return
        self.query_one(f"#{sid[0]}-search", Select).value = self._mode_of(event.value)

    def chosen(self) -> PairChoice:
        """Both sides as configurations, and the questions when a file is named (raises the core's
        ParamError/UnknownStrategy naming the side, or QueriesError naming the file and line)."""
        out = []
        for side in SIDES:
            source = self.query_one(f"#{side}-source", Select).value
            mode = self.query_one(f"#{side}-search", Select).value
            prefix = self.query_one(f"#{side}-prefix", Input).value.strip()
            try:
                resolved = with_prefix(self.config, self.current, str(source), prefix)
            except (ParamError, UnknownStrategy) as exc:
                raise ParamError(f"{side.upper()}: {exc}") from None
            out.append(configuration(side, resolved, str(mode)))
        if out[0].column[3:] == out[1].column[3:]:
            raise ParamError("A and B are the same configuration: change the strategy, the search or the prefix "
                             "of one of them")
        path = self.query_one("#pair-queries", Input).value.strip()
        return PairChoice(out, load_queries(path), path) if path else PairChoice(out)

    def action_run(self) -> None:
        try:
            pair = self.chosen()
        except (ParamError, UnknownStrategy, QueriesError) as exc:
            self.query_one("#pair-status", Static).update(Text(visible(str(exc), oneline=True), style="bold red"))
            return
        self.dismiss(pair)

    @on(Button.Pressed, "#pair-run")
    def _run_pressed(self) -> None:
        self.action_run()

    @on(Input.Submitted)
    def _prefix_submitted(self) -> None:
        self.action_run()

    def action_cancel(self) -> None:
        self.dismiss(None)
