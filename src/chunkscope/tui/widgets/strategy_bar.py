"""The strategy picker and a parameter editor built from the strategy's declared Params, validated as you type."""

from __future__ import annotations

import json
from typing import Any, Literal

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, HorizontalScroll, Vertical
from textual.message import Message
from textual.reactive import reactive
from textual.widget import Widget
from textual.widgets import Input, Label, Select

from chunkscope.chunking.params import ConstraintError, Param, ParamError
from chunkscope.chunking.registry import UnknownStrategy, strategy_class, strategy_names
from chunkscope.chunking.strategy import Strategy
from chunkscope.config.reader import Config, ResolvedStrategy, choosable_presets, preset_named
from chunkscope.tui.debounce import Debouncer
from chunkscope.tui.headless.session import resolve
from chunkscope.tui.widgets.ordered_input import OrderedInput


#: Rows a hidden parameter is moved down by: out of the one-row strip that clips it (`StrategyBar._show_more`).
HIDDEN_BELOW = 2


def param_text(p: Param, value: Any) -> str:
    """A parameter value as the editor shows it (what `Param.coerce` reads back)."""
    if p.type in (list, dict):
        return json.dumps(value, ensure_ascii=False)
    if p.type is bool:
        return "true" if value else "false"
    return str(value)


class ParamGroup(Horizontal):
    """One parameter's label, field and range, shown or hidden whole (`StrategyBar._show_more`)."""

    class Placed(Message):
        """The group was laid out (first placed, or resized): which parameters fit the row is known only now."""

    def on_resize(self) -> None:
        # Posted after the screen's layout, never before it: a callback after a refresh may run first (the refresh
        # of another screen, when this one is being pushed), while the group has no place yet.
        self.post_message(self.Placed())


class StrategyBar(Widget):
    """Pick a strategy or preset; edit its parameters; every valid change is posted as `StrategyBar.Changed`.

    A typed value is checked at each keystroke (a bad one is flagged at once) but posted only after a pause in
    typing (`debounce.DEBOUNCE_SECONDS`) or on Enter: re-cutting every intermediate value ("5" on the way to
    "512") would keep the app busy with values nobody asked for. A choice (strategy, bool, enum) is posted at once.
    """

    BINDINGS = [
        # Tab steps through the parameters in their order itself: Textual orders the focus chain by where the
        # widgets are drawn, and a parameter the row hides is drawn below it (`_show_more`).
        Binding("tab", "step_field(1)", "Next field", show=False, id="strategy.next-field",
                tooltip="the next parameter (the row scrolls to it)"),
        Binding("shift+tab", "step_field(-1)", "Previous field", show=False, id="strategy.previous-field",
                tooltip="the previous parameter, or the strategy picker"),
    ]

    DEFAULT_CSS = """
    StrategyBar { height: auto; }
    StrategyBar > Vertical { height: auto; }
    StrategyBar #bar-row { height: 1; }
    StrategyBar .bar-label { padding: 0 1 0 0; color: $text-muted; }
    StrategyBar #strategy-select { width: 26; margin-right: 2; }
    StrategyBar #params-row { height: 1; width: 1fr; }
    StrategyBar #params { height: 1; width: 1fr; overflow-x: hidden; }
    StrategyBar #params-more { width: 7; padding-right: 1; color: $accent; text-style: bold; }
    StrategyBar .param-group { width: auto; height: 1; }
    StrategyBar .param-label { padding: 0 1 0 1; }
    StrategyBar .param-range { padding: 0 1 0 0; color: $text-muted; }
    StrategyBar Input.param { width: 10; }
    StrategyBar Input.param.-wide { width: 28; }
    StrategyBar Input.param.-invalid { background: $error 30%; }
    StrategyBar Select.param { width: 16; }
    StrategyBar #param-status { height: 1; color: $text-muted; padding: 0 1; }
    StrategyBar #param-status.-error { color: $error; text-style: bold; }
    """

    resolved: reactive[ResolvedStrategy | None] = reactive(None, init=False)
    """The strategy in force; a different strategy name rebuilds the parameter editor."""

    class Changed(Message):
        """The user picked a strategy or changed a parameter to a valid value."""

        def __init__(self, bar: "StrategyBar", resolved: ResolvedStrategy) -> None:
            super().__init__()
            self.bar = bar
            self.resolved = resolved

        @property
        def control(self) -> "StrategyBar":
            return self.bar

    def __init__(self, config: Config, resolved: ResolvedStrategy, *, id: str | None = None, title: str = "strategy",
                 editor_later: bool = False) -> None:
        """Args:
            editor_later: the picker and the inputs wait for `mount_editor` (the explorer's start-up: they would
                delay the first file's cut, see `ExplorerScreen._after_first_cut`), instead of the first frame.
        """
        super().__init__(id=id)
        self.config = config
        self.title = title
        self._editor_later = editor_later
        self._base = self._base_name(resolved)
        self._status_text = ""
        self._more_text = ""
        self._editor_ready = False
        #: Focus the picker once it is mounted (`focus_picker` came before it was).
        self._focus_when_ready = False
        #: Posts the typed value once the typist pauses.
        self._typing = Debouncer(self, self._apply, name="parameter debounce")
        self.set_reactive(StrategyBar.resolved, resolved)

    def _base_name(self, resolved: ResolvedStrategy) -> str:
        """The strategy or preset name a resolved strategy came from (its label without parameters)."""
        name = resolved.label.split("(", 1)[0]
        return name if preset_named(self.config, name) is not None else resolved.name

    def options(self) -> list[tuple[Text | str, str]]:
        # Asked when the picker is mounted, after the first frame: listing the strategies other packages
        # register reads every installed package's metadata (~20 ms, bench/bench_tui.py's first paint).
        opts: list[tuple[Text | str, str]] = [(name, name) for name in strategy_names()]
        for name, preset in choosable_presets(self.config).items():
            opts.append((Text.assemble(name, (f" ({preset['strategy']})", "dim")), name))
        return opts

    def compose(self) -> ComposeResult:
        with Vertical():
            with Horizontal(id="bar-row"):
                yield Label(self.title, classes="bar-label")
                # The first frame shows the strategy and its values as plain text: the picker and the typed inputs
                # are two dozen widgets, most of the start-up's styling work, mounted right after that frame.
                yield Label(self._summary(), id="bar-summary")
                with Horizontal(id="params-row"):
                    yield HorizontalScroll(id="params", can_focus=False)
                    # Says that parameters are out of sight at this width (Tab scrolls the row to each of them).
                    # A fixed width: the row's room for parameters never changes with what it says.
                    yield Label("", id="params-more")
            yield Label("", id="param-status", classes="-empty")

    def _summary(self) -> Text:
        resolved = self.resolved
        text = Text(self._base, style="bold")
        if resolved is not None:
            for p in self._params_of(self._base):
                text.append(f"  {p.name} ", style="dim")
                text.append(param_text(p, resolved.params.get(p.name, p.default)))
        return text

    def on_mount(self) -> None:
        params = self.query_one("#params", HorizontalScroll)
        # No argument: Textual passes a one-argument watcher the new scroll_x, which is no `keep`.
        self.watch(params, "scroll_x", lambda: self._show_more(), init=False)
        if not self._editor_later:
            self.call_after_refresh(self._mount_editor)

    async def mount_editor(self) -> None:
        """Replace the first frame's text with the picker and the parameter editor now (once)."""
        await self._mount_editor()

    def on_resize(self) -> None:
        # After the layout settles: the row's width and its content's width are known only then.
        self.call_after_refresh(self._show_more)

    def _show_more(self, keep: Widget | None = None) -> None:
        """Show only whole parameters, and ``◂``/``▸`` beside them when some are out of sight on either side.

        A parameter the row's edge cuts through is hidden rather than drawn in part: fragments of labels and
        fields (``▼   se``) read as nonsense. Its parts are moved below the one-row strip, which clips them: their
        room stays, so the row's scroll range, and which parameters fit, never depend on what is hidden, and
        they can still take the focus (Textual refuses it to a widget made invisible), by Tab
        (`action_step_field`) or from code; a focused parameter is scrolled into sight whole (`_reveal`). Only
        a parameter wider than the whole row is drawn in part, when it is being edited (``keep``, else the
        focused one).
        """
        params = self.query_one("#params", HorizontalScroll)
        left_edge = params.scroll_x
        right_edge = left_edge + params.scrollable_content_region.width
        focused = keep or (self.screen.focused if self.is_attached else None)
        left = right = False
        for group in params.query_children(".param-group"):
            region = group.virtual_region
            # Not laid out yet: where it falls is unknown, so it stays hidden until it is placed (`ParamGroup.Placed`).
            placed = region.width > 0
            whole = placed and left_edge <= region.x and region.right <= right_edge
            if placed and not whole and region.width > right_edge - left_edge and focused in group.walk_children():
                whole = True  # wider than the whole row: the field being edited is shown all the same
            left = left or (placed and not whole and region.x < left_edge)
            right = right or (placed and not whole and region.x >= left_edge)
            # The group's parts are moved, not the group: the group's place is what says whether it fits.
            offset = (0, 0) if whole else (0, HIDDEN_BELOW)
            for part in group.children:
                if tuple(part.styles.offset.resolve(part.size, part.size)) != offset:
                    part.styles.offset = offset
        mark = ("◂" if left else "") + ("▸ tab" if right else "")
        if mark != self._more_text:  # an update lays the bar out again: only on change
            self._more_text = mark
            self.query_one("#params-more", Label).update(mark)

    async def _mount_editor(self) -> None:
        """Replace the text of the first frame with the picker and the parameter editor."""
        if not self.is_attached or self._editor_ready or not self.app.is_running:
            return  # not running: the app is closing (a Select mounted now loses its parts half-way and raises)
        self._editor_ready = True
        select = Select(self.options(), value=self._base, allow_blank=False, compact=True, id="strategy-select",
                        tooltip="the chunking strategy (or a preset from your config)")
        await self.query_one("#bar-row").mount(select, before="#params-row")
        await self.query_one("#bar-summary").remove()
        await self._build_params()
        if self._focus_when_ready:
            self._focus_when_ready = False
            select.focus()

    def focus_picker(self) -> None:
        """Focus the strategy picker (as soon as it is mounted, when it is not yet)."""
        if self._editor_ready:
            self.query_one("#strategy-select", Select).focus()
        else:
            self._focus_when_ready = True

    def action_step_field(self, step: int) -> None:
        """Tab and shift+Tab: the next or previous parameter, shown whole first; past either end, out of the bar
        (shift+Tab from the first parameter goes to the strategy picker)."""
        fields = list(self.query(".param"))
        focused = self.screen.focused
        at = next((i for i, w in enumerate(fields) if focused is not None and w in focused.ancestors_with_self), None)
        if at is None:  # the picker (or the first frame's text)
            target = fields[0] if step > 0 and fields else None
        else:
            target = fields[at + step] if 0 <= at + step < len(fields) else None
        if target is None:
            if at == 0 and step < 0 and self._editor_ready:
                self.query_one("#strategy-select", Select).focus()
            elif step > 0:
                self.screen.focus_next()
            else:
                self.screen.focus_previous()
            return
        group = target.parent
        if isinstance(group, Widget) and group.has_class("param-group"):
            self._reveal(group)
            self._show_more(keep=target)  # visible now, so it can take the focus
        target.focus()

    def _reveal(self, group: Widget) -> None:
        """Scroll the parameters so ``group`` is whole in sight, the row starting at a parameter's first column
        (moving right, the group ends the row; moving left, it starts it)."""
        params = self.query_one("#params", HorizontalScroll)
        width = params.scrollable_content_region.width
        region = group.virtual_region
        left = params.scroll_x
        if width <= 0 or (left <= region.x and region.right <= left + width):
            return
        if region.x < left or region.width >= width:
            target = region.x
        else:
            starts = [g.virtual_region.x for g in params.query_children(".param-group")]
            target = min(x for x in starts if x >= region.right - width)
        # Forced: the strip's overflow is hidden so that only this scrolls it (Textual would centre a focused field,
        # leaving the row's edges in the middle of its neighbours).
        params.scroll_to(x=target, animate=False, immediate=True, force=True)

    @property
    def editor_ready(self) -> bool:
        """Whether the picker and the inputs are mounted (a moment after the first frame, or `mount_editor`)."""
        return self._editor_ready

    # --- the editor --------------------------------------------------------------------------------------------

    def _class_of(self, base: str) -> type[Strategy]:
        """The strategy class behind a strategy or preset name."""
        preset = preset_named(self.config, base)
        return strategy_class(preset["strategy"] if preset is not None else base)

    def _params_of(self, base: str) -> tuple[Param, ...]:
        return self._class_of(base).parameters

    async def _build_params(self) -> None:
        box = self.query_one("#params", HorizontalScroll)
        await box.remove_children()  # ids are reused: the old inputs must be gone first
        await box.mount_all(self._param_widgets())
        self._status("")
        self.call_after_refresh(self._show_more)

    def _param_widgets(self) -> list[Widget]:
        """For each declared parameter, a group of its label, a typed input (or a choice) and the range."""
        resolved = self.resolved
        if resolved is None:
            return []
        groups: list[Widget] = []
        for p in self._params_of(self._base):
            value = resolved.params.get(p.name, p.default)
            tip = p.help + (f" ({p.range_text()})" if p.range_text() else "")
            widgets: list[Widget] = [Label(p.name, classes="param-label")]
            if p.choices or p.type is bool:
                choices = p.choices or (True, False)
                sel = Select([(param_text(p, c), c) for c in choices], value=value if value in choices else choices[0],
                             allow_blank=False, compact=True, id=f"param-{p.name}", classes="param", tooltip=tip)
                widgets.append(sel)
            else:
                # Typed: an integer field takes only digits, a number field a decimal; coerce() checks the rest.
                kind: Literal["integer", "number", "text"] = (
                    "integer" if p.type is int else "number" if p.type is float else "text")
                inp = OrderedInput(param_text(p, value), type=kind, compact=True, id=f"param-{p.name}",
                                   classes="param", tooltip=tip, select_on_focus=True)
                if p.type in (list, dict, str):
                    inp.add_class("-wide")
                widgets.append(inp)
                if p.min is not None or p.max is not None:
                    widgets.append(Label(p.range_text(), classes="param-range"))
            # One group per parameter: the row shows or hides a parameter whole (`_show_more`), hidden until the
            # layout has placed it: the frame before that must not draw a parameter the row's edge cuts through.
            for part in widgets:
                part.styles.offset = (0, HIDDEN_BELOW)
            groups.append(ParamGroup(*widgets, classes="param-group", id=f"group-{p.name}"))
        return groups

    def _status(self, text: str, error: bool = False) -> None:
        status = self.query_one("#param-status", Label)
        if text != self._status_text:  # an update refreshes the layout: only when it changes
            self._status_text = text
            status.update(text)
        status.set_class(error, "-error")
        status.set_class(not text, "-empty")  # a short terminal hides the empty line (explorer.tcss)

    async def watch_resolved(self, old: ResolvedStrategy | None, new: ResolvedStrategy | None) -> None:
        if new is None:
            return
        # Set from outside (the palette, compare's swap): that choice wins over a typed value still waiting.
        self._typing.cancel()
        base = self._base_name(new)
        if old is not None and base == self._base and old.fingerprint() == new.fingerprint():
            return
        if not self._editor_ready:  # still the first frame's text: the editor is built from `resolved`
            self._base = base
            self.query_one("#bar-summary", Label).update(self._summary())
            return
        if base != self._base or old is None or not self._inputs_match(new):
            self._base = base
            select = self.query_one("#strategy-select", Select)
            if select.value != base:
                with select.prevent(Select.Changed):
                    select.value = base
            await self._build_params()

    def _inputs_match(self, resolved: ResolvedStrategy) -> bool:
        """Whether the editor already shows these parameter values (so typing is never interrupted)."""
        try:
            shown = self._collect()[0]
        except Exception:  # noqa: BLE001
            return False
        return bool(shown) and all(resolved.params.get(k) == v for k, v in shown.items())

    def _collect(self) -> tuple[dict[str, Any], list[tuple[Widget, str]]]:
        """Every editor value, coerced by its Param; the widgets whose text is invalid, with the reason."""
        values: dict[str, Any] = {}
        errors: list[tuple[Widget, str]] = []
        strategy = self.resolved.name if self.resolved else self._base
        for p in self._params_of(self._base):
            try:
                w = self.query_one(f"#param-{p.name}")
            except Exception:  # noqa: BLE001 - editor not built yet
                continue
            raw = w.value if isinstance(w, (Input, Select)) else None
            try:
                values[p.name] = p.coerce(raw, strategy)
            except ParamError as exc:
                errors.append((w, str(exc)))
        return values, errors

    def _validated(self) -> ResolvedStrategy | None:
        """The strategy the editor's values make, or None with the invalid fields flagged and the reason shown."""
        values, errors = self._collect()
        for w in self.query(".param"):
            w.remove_class("-invalid")
        if errors:
            for w, _ in errors:
                w.add_class("-invalid")
            self._status("✖ " + errors[0][1], error=True)
            return None
        try:
            # Every value on screen counts as given: a minimum shown as 50 contradicts a maximum typed as 10, even
            # though the library lets a default nobody set follow the maximum down.
            self._class_of(self._base).check_constraints(values)
            defaults = resolve(self.config, self._base).params
            overrides = {k: v for k, v in values.items() if defaults.get(k) != v}
            new = resolve(self.config, self._base, overrides)
        except (ParamError, UnknownStrategy) as exc:
            if isinstance(exc, ConstraintError):  # both fields of the pair are wrong together
                for name in exc.names:
                    for w in self.query(f"#param-{name}"):
                        w.add_class("-invalid")
            self._status("✖ " + str(exc), error=True)
            return None
        self._status("")
        return new

    def _is_current(self, new: ResolvedStrategy) -> bool:
        r = self.resolved
        return r is not None and new.fingerprint() == r.fingerprint() and new.label == r.label

    def _apply(self) -> None:
        """Post the editor's values as the new strategy (read now: the text may have changed since the keystroke)."""
        new = self._validated()
        if new is None or self._is_current(new):
            return
        self.set_reactive(StrategyBar.resolved, new)
        self.post_message(self.Changed(self, new))

    @property
    def typing_pending(self) -> bool:
        """Whether a typed value waits for the pause in typing before it is posted."""
        return self._typing.pending

    @on(Input.Changed, ".param")
    def _param_typed(self, event: Input.Changed) -> None:
        event.stop()
        new = self._validated()  # flag a bad value at once
        if new is None or self._is_current(new):
            self._typing.cancel()  # back to the value in force, or invalid: nothing to post
            return
        self._typing.poke()

    @on(Input.Submitted, ".param")
    def _param_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self._typing.flush()

    @on(Select.Changed, ".param")
    def _param_chosen(self, event: Select.Changed) -> None:
        event.stop()
        self._typing.cancel()
        self._apply()

    @on(Select.Changed, "#strategy-select")
    async def _strategy_chosen(self, event: Select.Changed) -> None:
        event.stop()
        base = event.value
        if not isinstance(base, str) or base == self._base:
            return
        try:
            new = resolve(self.config, base)
        except Exception as exc:  # noqa: BLE001 - ParamError, or a strategy module that fails to import
            self._status("✖ " + str(exc), error=True)
            return
        self._typing.cancel()
        self._base = base
        self.set_reactive(StrategyBar.resolved, new)
        await self._build_params()
        self.post_message(self.Changed(self, new))

    def on_param_group_placed(self, event: ParamGroup.Placed) -> None:
        event.stop()
        self._show_more()

    def on_descendant_focus(self, event) -> None:
        w = event.widget
        group = w.parent if w.parent is not None and w.parent.has_class("param-group") else None
        if group is not None:
            self._reveal(group)
            self._show_more(keep=w)
        if w.id and w.id.startswith("param-") and not self.query_one("#param-status", Label).has_class("-error"):
            name = w.id.removeprefix("param-")
            p = next((p for p in self._params_of(self._base) if p.name == name), None)
            if p is not None:
                rng = p.range_text()
                self._status(f"{p.name}: {p.help}" + (f"  [{rng}]" if rng else ""))
