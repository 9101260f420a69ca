"""Feedback a person can see: focus moves that show, check boxes readable without colour, `r` under `E`."""

from __future__ import annotations

import pytest

pytest.importorskip("textual")

from textual.widgets import Checkbox, Select  # noqa: E402

from chunkscope.tui.widgets.docs_tree import DocsTreeView  # noqa: E402
from chunkscope.tui.widgets.lint_pane import ALL_RULES, LintPane  # noqa: E402
from tests.pilot import make_app, wait_for  # noqa: E402

pytestmark = pytest.mark.anyio

WIDE = (160, 45)


async def _ready(pilot, app) -> None:
    ex = app.explorer
    await wait_for(pilot, lambda: ex.result is not None and ex.result.complete and ex.tree_result is not None,
                   what="first file and tree")


def _plain(widget) -> str:
    """What the widget draws, as plain text (no colour: what a monochrome terminal or NO_COLOR shows)."""
    return str(widget.render())


async def test_f_and_s_show_where_the_keys_went_without_relying_on_colour():
    """At wide sizes `f` and `s` only moved focus; the change must show in glyphs or text style, not hue."""
    app = make_app()
    async with app.run_test(size=WIDE) as pilot:
        await _ready(pilot, app)
        ex = app.explorer
        docs = ex.query_one(DocsTreeView)
        await pilot.press("o")  # the source has the keys
        await pilot.pause()
        blurred_border = docs.styles.border_top[0]
        blurred_title = docs.styles.border_title_style
        await pilot.press("f")
        await pilot.pause()
        assert docs.has_focus
        # A different border line (round -> heavy) and a reversed title: both survive a monochrome terminal.
        assert docs.styles.border_top[0] != blurred_border
        assert "reverse" in str(docs.styles.border_title_style) and "reverse" not in str(blurred_title)
        # The tree's cursor row is drawn reversed while the tree has the keys.
        assert "reverse" in str(docs.get_component_styles("tree--cursor").text_style)

        select = ex.query_one("#strategy-select", Select)
        current = select.query_one("SelectCurrent")
        before = str(current.styles.text_style)
        await pilot.press("s")
        await pilot.pause()
        assert select.has_focus
        assert "reverse" in str(current.styles.text_style) and "reverse" not in before


async def test_query_filters_read_checked_or_not_without_colour():
    app = make_app()
    async with app.run_test(size=WIDE) as pilot:
        await _ready(pilot, app)
        await pilot.press("slash")
        ex = app.explorer
        await wait_for(pilot, lambda: bool(ex.query("#filter-file")), what="query pane")
        for box_id in ("#filter-file", "#filter-chapter"):
            box = ex.query_one(box_id, Checkbox)
            off = _plain(box)
            box.value = True
            await pilot.pause()
            on = _plain(box)
            assert off != on, f"{box_id} draws the same text checked and unchecked: {on!r}"
            box.value = False
            await pilot.pause()
            assert _plain(box) == off


async def test_r_with_errors_only_cycles_only_through_rules_with_errors():
    app = make_app()
    async with app.run_test(size=WIDE) as pilot:
        await _ready(pilot, app)
        await pilot.press("l")
        ex = app.explorer
        await wait_for(pilot, lambda: bool(ex.query(LintPane)) and ex.query_one(LintPane)._all,  # noqa: SLF001
                       what="lint findings")
        pane = ex.query_one(LintPane)
        findings = pane._all  # noqa: SLF001
        with_errors = {f.rule for f in findings if f.severity == "error"}
        assert with_errors and {f.rule for f in findings} - with_errors, "sample_docs needs warning-only rules"
        await pilot.press("E")
        await pilot.pause()
        assert pane.errors_only
        seen = []
        for _ in range(len({f.rule for f in findings}) + 2):
            await pilot.press("r")
            await pilot.pause()
            seen.append(pane.rule)
            # The list is never empty under a rule the user cycled to.
            assert pane._findings, f"r showed {pane.rule} with no findings under errors only"  # noqa: SLF001
        assert set(seen) == with_errors | {ALL_RULES}
        # The picker still lists every rule, each with its count under the filter (the way to see "no errors").
        labels = [str(prompt) for prompt, _ in pane.query_one("#lint-rule", Select)._options]  # noqa: SLF001
        assert all(f"{r} (0)" in labels for r in {f.rule for f in findings} - with_errors)
        # Errors and warnings again: every rule is back in the cycle.
        await pilot.press("E")
        await pilot.pause()
        seen = []
        for _ in range(len({f.rule for f in findings}) + 1):
            await pilot.press("r")
            await pilot.pause()
            seen.append(pane.rule)
        assert set(seen) == {f.rule for f in findings} | {ALL_RULES}
