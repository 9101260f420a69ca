"""The tree's lint findings, errors first in reading order or grouped by file (worst file first), filtered by rule
and severity; Enter jumps to the line. Key ``m`` adds the rules that read the chunks' embeddings (hub, orphan,
near-duplicate): the tree is indexed and its neighbourhoods found in a worker, and their findings join the list."""

from __future__ import annotations

from collections import Counter
from typing import Any

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.reactive import reactive
from textual.widgets import Checkbox, OptionList, Select, Static
from textual.widgets.option_list import Option
from textual.worker import get_current_worker

from chunkscope.tui.headless.file_report import group_by_file
from chunkscope.progress import CancelToken, Cancelled, ProgressFn
from chunkscope.progress import Progress as WorkProgress
from chunkscope.safe_text import visible
from chunkscope.wording import plural
from chunkscope.tui.headless.search import SearchSession, install_hint, progress_text
from chunkscope.tui.headless.session import TreeResult
from chunkscope.tui.widgets.state_checkbox import StateCheckbox

SEVERITY_STYLE = {"error": ("✖", "bold #ff5f5f"), "warning": ("▲", "bold #e5c07b")}
#: The rule filter's value for "every rule" (no rule id contains a space).
ALL_RULES = "all rules"



def _most_first(counts: Counter[str]) -> list[str]:
    """Rule ids by count, most first, then by name."""
    return sorted(counts, key=lambda r: (-counts[r], r))


def run_embedding_rules(search: SearchSession, result: TreeResult, on_progress: ProgressFn,
                        cancel: CancelToken) -> tuple[Any, Any] | None:
    """Index the tree with the result's strategy (the app's embedder and store), find every chunk's neighbours and
    lint the result's chunks with the embedding rules: (lint report, neighbourhoods); None when stopped. No
    Textual here: the pane's worker calls it."""
    from chunkscope.chunking.model import ChunkedDoc
    from chunkscope.lint import embedding_rules, lint_tree
    from chunkscope.retrieval.neighbours import StoredEmbeddings

    resolved = result.resolved
    if search.index(resolved, on_progress, cancel).cancelled:
        return None
    retriever = search.retriever(resolved)
    tree = search.tree
    embeddings = StoredEmbeddings(retriever.store, retriever.collection, paths=retriever.scope,
                                  order=[d.path for d in tree.documents])
    found = embeddings.load(on_progress, cancel)
    results = [ChunkedDoc(d, result.entries[d.path].chunks, result.entries[d.path].error)
               for d in tree.documents if d.path in result.entries]
    report = lint_tree(tree, resolved, search.config, select=embedding_rules(), results=results, cancel=cancel,
                       embeddings=embeddings)
    return report, found

class SpaceFindings:
    """The embedding rules' findings and the tree result (one cut) they were found for."""

    def __init__(self, result: TreeResult, findings: list[Any]) -> None:
        self.result = result
        self.findings = findings


class LintPane(Vertical):
    """Findings of the whole tree under the current strategy (from the tree worker's lint run)."""

    BINDINGS = [
        Binding("r", "next_rule", "Next rule", id="lint.next-rule",
                tooltip="show one rule's findings: cycles through the rules with findings, then all of them"),
        Binding("E", "errors_only", "Errors only", id="lint.errors-only",
                tooltip="show only errors; press again for errors and warnings"),
        Binding("g", "group_by_file", "By file", id="lint.by-file",
                tooltip="group the findings by file, the file with the most errors first, each under a line with "
                        "its counts; press again for one list in reading order"),
        Binding("m", "embedding_rules", "Embedding rules", id="lint.embeddings",
                tooltip="also run hub, orphan and near-duplicate: the tree is indexed with the embedding model and "
                        "every chunk's nearest chunks found (in the background); press again to hide them"),
    ]

    DEFAULT_CSS = """
    LintPane { height: 100%; }
    LintPane #lint-summary { height: auto; padding: 0 1; }
    LintPane #lint-space { height: auto; padding: 0 1; display: none; }
    LintPane #lint-space.-shown { display: block; }
    LintPane #lint-filters { height: 1; padding: 0 1; }
    LintPane #lint-rule { width: 44; }
    LintPane #lint-errors-only, LintPane #lint-by-file { border: none; padding: 0 1; height: 1;
                                                         background: transparent; }
    LintPane #findings { height: 1fr; border: none; }
    """

    result: reactive[TreeResult | None] = reactive(None, always_update=True)
    """The tree's chunks and lint report (None while the tree worker runs)."""

    class SpaceProgress(Message):
        """The embedding rules' run moved on; a flood collapses into the latest."""

        def __init__(self, progress: WorkProgress) -> None:
            super().__init__()
            self.progress = progress

        def can_replace(self, message: Message) -> bool:
            return isinstance(message, LintPane.SpaceProgress)

    class SpaceFound(Message):
        """The embedding rules' findings for one tree result (``report`` None: stopped; ``problem``: why not)."""

        def __init__(self, result: TreeResult, report: Any = None, found: Any = None, problem: str | None = None):
            super().__init__()
            self.result = result
            self.report = report
            self.found = found
            self.problem = problem

    class JumpTo(Message):
        """Show a finding's line in the source."""

        def __init__(self, pane: "LintPane", finding: Any) -> None:
            super().__init__()
            self.pane = pane
            self.finding = finding

        @property
        def control(self) -> "LintPane":
            return self.pane

    def __init__(self, search: SearchSession | None = None, *, id: str | None = None) -> None:
        super().__init__(id=id)
        #: The app's embedder and store (None: the embedding rules cannot run here).
        self._search = search
        #: Whether the embedding rules are wanted (key ``m``), and their findings with the result they are for.
        self._embeddings_on = False
        self._space: SpaceFindings | None = None
        #: Every finding of the report, sorted; ``_findings`` is the part the filter shows (the list's rows).
        self._all: list[Any] = []
        self._findings: list[Any] = []
        #: The rule the user picked (kept across re-lints; "all" applies while that rule has no findings).
        self._wanted_rule = ALL_RULES
        self._errors_only = False
        self._by_file = False
        #: Option id of a file's header → the index in ``_findings`` of that file's first finding.
        self._group_first: dict[str, int] = {}

    def compose(self) -> ComposeResult:
        yield Static(id="lint-summary")
        with Horizontal(id="lint-filters"):
            yield Select([("all rules", ALL_RULES)], value=ALL_RULES, allow_blank=False, compact=True,
                         id="lint-rule", tooltip="show only one rule's findings (r cycles through them)")
            yield StateCheckbox("errors only", id="lint-errors-only", compact=True,
                                tooltip="hide warnings (E toggles)")
            yield StateCheckbox("by file", id="lint-by-file", compact=True,
                                tooltip="group the findings by file, worst file first (g toggles)")
            yield StateCheckbox("embedding rules", id="lint-embeddings", compact=True,
                                tooltip="also run hub, orphan and near-duplicate (indexes the tree; m toggles)")
        yield Static(id="lint-space")
        yield OptionList(id="findings")

    def on_mount(self) -> None:
        self.watch_result(self.result)

    def focus_list(self) -> None:
        self.query_one("#findings", OptionList).focus()

    # --- the filter --------------------------------------------------------------------------------------------

    @property
    def rule(self) -> str:
        """The rule whose findings are shown, or ``ALL_RULES`` (the pick falls back to all when it has none)."""
        return self._wanted_rule if any(f.rule == self._wanted_rule for f in self._all) else ALL_RULES

    @property
    def errors_only(self) -> bool:
        """Whether warnings are hidden."""
        return self._errors_only

    def set_filter(self, rule: str | None = None, errors_only: bool | None = None) -> None:
        """Show one rule (or ``ALL_RULES``) and/or only errors; the list, the counts and the jump follow."""
        if rule is not None:
            self._wanted_rule = rule
        if errors_only is not None:
            self._errors_only = errors_only
        self._show()

    def _rule_counts(self) -> Counter[str]:
        """Findings per rule under the severity filter (a rule with only warnings has none under errors only)."""
        return Counter(f.rule for f in self._all if not self._errors_only or f.severity == "error")

    def _rules(self) -> list[str]:
        """The rules with any finding, most findings first: the filter's choices (each shown with its count under
        the severity filter, so "(0)" says a rule has no errors)."""
        return _most_first(Counter(f.rule for f in self._all))

    def _cycle(self) -> list[str]:
        """What ``r`` steps through: all rules, then each rule with findings under the severity filter, most
        first. With errors only, a rule with only warnings would show an empty list: it is skipped."""
        return [ALL_RULES, *_most_first(self._rule_counts())]

    def action_next_rule(self) -> None:
        """Key ``r``: the next rule with findings, then all of them again."""
        cycle = self._cycle()
        # A rule picked in the filter that has no findings under it (say, warnings under errors only) is not in
        # the cycle: r goes on from "all rules".
        at = cycle.index(self.rule) if self.rule in cycle else 0
        self.set_filter(rule=cycle[(at + 1) % len(cycle)])

    def action_errors_only(self) -> None:
        """Key ``E``: hide or show warnings."""
        self.set_filter(errors_only=not self._errors_only)

    @property
    def by_file(self) -> bool:
        """Whether the findings are grouped by file."""
        return self._by_file

    def set_grouping(self, by_file: bool) -> None:
        """Group the findings by file (worst file first) or list them in reading order; the filter stays."""
        self._by_file = by_file
        self._show()

    def action_group_by_file(self) -> None:
        """Key ``g``: group by file, or one list again."""
        self.set_grouping(not self._by_file)

    @on(Select.Changed, "#lint-rule")
    def _rule_picked(self, event: Select.Changed) -> None:
        event.stop()
        if isinstance(event.value, str) and event.value != self.rule:
            self.set_filter(rule=event.value)

    @on(Checkbox.Changed, "#lint-errors-only")
    def _errors_toggled(self, event: Checkbox.Changed) -> None:
        event.stop()
        if event.value != self._errors_only:
            self.set_filter(errors_only=event.value)

    @on(Checkbox.Changed, "#lint-embeddings")
    def _embeddings_toggled(self, event: Checkbox.Changed) -> None:
        event.stop()
        if event.value != self._embeddings_on:
            self.action_embedding_rules()

    # --- the embedding rules -----------------------------------------------------------------------------------

    @property
    def embeddings_on(self) -> bool:
        """Whether the embedding rules are asked for (their findings show once their run ends)."""
        return self._embeddings_on

    def action_embedding_rules(self) -> None:
        """Key ``m``: run the embedding rules on the tree (and again after each re-cut), or hide them."""
        self._embeddings_on = not self._embeddings_on
        if self._embeddings_on:
            self._start_space()
        else:
            self.workers.cancel_group(self, "lint-embeddings")
            self._space_line(None)
        self._merge()

    def _start_space(self) -> None:
        """Run the embedding rules for the result shown, unless its findings are in or it is still being cut."""
        result = self.result
        if result is None or (self._space is not None and self._space.result is result):
            return
        if self._search is None:
            self._space_line(Text("The embedding rules need the app's index (not available here).", style="italic"))
            return
        self._space_line(Text("Embedding rules: starting…", style="dim italic"))
        self._embedding_worker(result)

    def _post_progress(self, progress: WorkProgress) -> None:
        """The embedding rules' progress, from their worker thread (a flood collapses into the latest)."""
        self.post_message(self.SpaceProgress(progress))

    @work(thread=True, exclusive=True, group="lint-embeddings", exit_on_error=False,
          name="embedding rules", description="embedding rules")
    def _embedding_worker(self, result: TreeResult) -> None:
        from chunkscope.extras import MissingExtra

        worker = get_current_worker()
        token = CancelToken(poll=lambda: worker.is_cancelled)
        assert self._search is not None
        try:
            done = run_embedding_rules(self._search, result, self._post_progress, token)
        except Cancelled:
            done = None
        except MissingExtra as exc:
            self.post_message(self.SpaceFound(result, problem=install_hint(exc, "Running the embedding rules")))
            return
        if not worker.is_cancelled:
            self.post_message(self.SpaceFound(result, *(done or (None, None))))

    def on_lint_pane_space_progress(self, msg: "LintPane.SpaceProgress") -> None:
        if self._embeddings_on and any(w.group == "lint-embeddings" and w.is_running for w in self.workers):
            self._space_line(Text("Embedding rules: " + progress_text(msg.progress), style="dim"))

    def on_lint_pane_space_found(self, msg: "LintPane.SpaceFound") -> None:
        if not self._embeddings_on or msg.result is not self.result:
            return  # hidden meanwhile, or for a cut that is no longer shown
        if msg.problem is not None or msg.report is None:
            self._space_line(Text(visible(msg.problem or "Embedding rules: stopped.", oneline=True), style="italic"))
            return
        self._space = SpaceFindings(msg.result, list(msg.report.findings))
        found = msg.found
        skew = found.skewness
        measure = f"k-occurrence skewness {skew:.2f}" if skew is not None else "k-occurrence skewness not defined"
        counts = Counter(f.rule for f in msg.report.findings)
        self._space_line(Text(
            f"Embedding space ({plural(len(found.points), 'chunk')}, k={found.k}): {measure} (hubness, "
            f"Radovanović et al. 2010) · {plural(counts['hub'], 'hub')}, {plural(counts['orphan'], 'orphan')}, "
            f"{plural(counts['near-duplicate'], 'near-duplicate')}", style="dim"))
        self._merge()

    def _space_line(self, text: Text | None) -> None:
        line = self.query_one("#lint-space", Static)
        line.update(text or "")
        line.set_class(text is not None, "-shown")

    @on(Checkbox.Changed, "#lint-by-file")
    def _grouping_toggled(self, event: Checkbox.Changed) -> None:
        event.stop()
        if event.value != self._by_file:
            self.set_grouping(event.value)

    def _passes(self, f: Any, rule: str) -> bool:
        return (rule == ALL_RULES or f.rule == rule) and (not self._errors_only or f.severity == "error")

    # --- showing -----------------------------------------------------------------------------------------------

    def watch_result(self, result: TreeResult | None) -> None:
        if not self.query("#findings"):
            return  # not composed yet: on_mount fills it
        if self._embeddings_on:
            self._start_space()  # a new cut: its own neighbourhoods (the index catches up on what changed)
        self._merge()

    def _merge(self) -> None:
        """The result's findings, with the embedding rules' when they are wanted and were found for this cut."""
        result = self.result
        self._all = []
        report = result.lint if result is not None and not result.lint_error else None
        if result is not None and report is not None:
            found = list(report.findings)
            space = self._space
            if self._embeddings_on and space is not None and space.result is result:
                found += space.findings
            order = {p: i for i, p in enumerate(result.entries)}
            self._all = sorted(found, key=lambda f: (f.severity != "error", order.get(f.path, 1 << 30), f.line))
        self._show()

    def _show(self) -> None:
        """Fill the filter's choices, the summary and the list from ``_all`` and the filter."""
        result = self.result
        summary = self.query_one("#lint-summary", Static)
        box = self.query_one("#findings", OptionList)
        box.clear_options()
        rule = self.rule
        self._findings = [f for f in self._all if self._passes(f, rule)]
        self._group_first = {}
        groups = None
        if self._by_file:
            order = {p: i for i, p in enumerate(result.entries)} if result is not None else {}
            groups = group_by_file(self._findings, order)
            # The list's rows index `_findings`: in grouped order, so Enter on a row finds its finding.
            self._findings = [f for _, fs in groups for f in fs]
        self._sync_filter_widgets(rule)
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
        summary.update(self._summary(report, result, rule))
        options = self._grouped_options(groups) if groups is not None else [
            Option(self._finding_row(f), id=f"finding-{i}") for i, f in enumerate(self._findings)]
        if not options:
            text = "No findings: every chunk passes." if not self._all else "No findings match the filter."
            options.append(Option(Text(text, style="#7ee787" if not self._all else "dim italic"), disabled=True))
        box.add_options(options)

    @staticmethod
    def _finding_row(f: Any, grouped: bool = False) -> Text:
        """One finding's row: under its file's header, only the line (the header names the file)."""
        mark, style = SEVERITY_STYLE.get(f.severity, ("•", ""))
        t = Text()
        t.append(f"  {mark} " if grouped else f"{mark} ", style=style)
        where = f"line {f.line}" if grouped else f"{visible(f.path, oneline=True)}:{f.line}"
        t.append(where, style="#58a6ff")
        t.append(f"  {f.rule}", style=style)
        if f.chunk_index is not None:
            t.append(f"  #{f.chunk_index}", style="dim")
        t.append(f"  {visible(f.message, oneline=True)}")
        return t

    def _grouped_options(self, groups: list[tuple[str, list[Any]]]) -> list[Option]:
        """A header per file (its counts; Enter on it jumps to its first finding), then the file's findings."""
        options: list[Option] = []
        i = 0
        for g, (path, fs) in enumerate(groups):
            errors = sum(1 for f in fs if f.severity == "error")
            head = Text.assemble(("▸ ", "bold"), (visible(path, oneline=True), "bold #58a6ff"), "  ")
            head.append(plural(errors, "error"), style="bold #ff5f5f" if errors else "dim")
            head.append(", ")
            head.append(plural(len(fs) - errors, "warning"), style="bold #e5c07b" if len(fs) > errors else "dim")
            self._group_first[f"file-{g}"] = i
            options.append(Option(head, id=f"file-{g}"))
            for f in fs:
                options.append(Option(self._finding_row(f, grouped=True), id=f"finding-{i}"))
                i += 1
        return options

    def _summary(self, report: Any, result: TreeResult, rule: str) -> Text:
        """The pane's title line: the counts of what is listed, and of the whole tree when a filter hides some."""
        errors = sum(1 for f in self._findings if f.severity == "error")
        warnings = len(self._findings) - errors
        head = Text.assemble(
            (f"{errors} errors", "bold #ff5f5f" if errors else "bold #7ee787"), ", ",
            (f"{warnings} warnings", "bold #e5c07b" if warnings else ""),
        )
        filtered = rule != ALL_RULES or self._errors_only
        # Counted over every finding listed (the embedding rules' included), not only the tree run's report.
        all_errors = sum(1 for f in self._all if f.severity == "error")
        if filtered:
            what = " and ".join(x for x in (f"rule {rule}" if rule != ALL_RULES else "",
                                            "errors only" if self._errors_only else "") if x)
            head.append(f" shown ({what}; {all_errors} errors, {len(self._all) - all_errors} warnings in all)",
                        style="dim")
        head.append(f" with {result.resolved.label}")
        by_rule = Counter(f.rule for f in self._all)
        if by_rule and not filtered:
            listed = [k for k in report.by_rule if k in by_rule] + sorted(set(by_rule) - set(report.by_rule))
            head.append("  ·  " + ", ".join(f"{k} {by_rule[k]}" for k in listed), style="dim")
        if report.failed:
            head.append(f"  ·  {len(report.failed)} files could not be chunked", style="red")
        return head

    def _sync_filter_widgets(self, rule: str) -> None:
        """Show the filter in its widgets, with each rule's count under the severity filter (no echo events)."""
        counts = self._rule_counts()
        total = sum(counts.values())
        choices: list[tuple[str, str]] = [(f"all rules ({total})", ALL_RULES)]
        choices += [(f"{r} ({counts[r]})", r) for r in self._rules()]
        select = self.query_one("#lint-rule", Select)
        with select.prevent(Select.Changed):
            select.set_options(choices)
            select.value = rule
            # The shown label carries a count that may have changed. The reactive is read off the class by name:
            # mypy cannot type a generic class's instance variable read through the class.
            select.mutate_reactive(getattr(Select, "value"))
        for box_id, value in (("#lint-errors-only", self._errors_only), ("#lint-by-file", self._by_file),
                              ("#lint-embeddings", self._embeddings_on)):
            check = self.query_one(box_id, Checkbox)
            if check.value != value:
                with check.prevent(Checkbox.Changed):
                    check.value = value

    @on(OptionList.OptionSelected, "#findings")
    def _chosen(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        oid = event.option.id
        if oid and oid.startswith("finding-"):
            self.post_message(self.JumpTo(self, self._findings[int(oid[8:])]))
        elif oid in self._group_first:
            self.post_message(self.JumpTo(self, self._findings[self._group_first[oid]]))
