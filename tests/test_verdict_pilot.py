"""One verdict everywhere, through the real app: ``chunkscope probe``, the app's probe view (``v``) and the
expectation line of the query pane agree word for word on a truncated miss and a heading-cut miss, with MiniLM.

The headless version (`test_tuning`, a bag-of-words embedder) calls the functions the screens call; this one
presses the keys a person presses: ``v`` runs the probe, ``m`` goes to the missed sections, Enter on a miss marks
its chunk as expected for its question (what ``e`` marks, with the section it was expected to answer), ``/`` and
Enter ask that question in the query pane.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from chunkscope.config.reader import load_config

pytest.importorskip("textual")

from rich.text import Text  # noqa: E402
from textual.widgets import Input, Static  # noqa: E402

from chunkscope.tui.screens.evaluation import EvaluationScreen, MissedList  # noqa: E402
from chunkscope.tui.screens.explorer import ExplorerScreen  # noqa: E402
from tests.pilot import make_app, wait_for  # noqa: E402

from .tuning_helpers import VERDICT_CONFIG, VERDICT_DOCS, write_docs

pytestmark = [pytest.mark.anyio, pytest.mark.model]

#: The two misses, as (strategy, section heading), and how each verdict starts.
CASES = {("long", "Deep sea"): "truncated, rank ", ("cut", "Radar"): "heading cut off, rank "}


def cli_probe_words(root: Path, capsys: pytest.CaptureFixture[str]) -> dict[tuple[str, str], str]:
    """What ``chunkscope probe`` prints for each missed section, by (preset, heading): ``truncated, rank 4, ...``."""
    from chunkscope.cli import main

    said: dict[tuple[str, str], str] = {}
    for preset in ("long", "cut"):
        assert main(["probe", str(root), "-s", preset, "-k", "1", "--show", "0"]) == 0
        out = " ".join(capsys.readouterr().out.split())
        for heading in ("Long", "Deep sea", "Radar"):
            m = re.search(rf"guide\.md:\d+ {heading} — ([^;]+?, rank \d+, score \d\.\d{{3}})", out)
            if m:
                said[(preset, heading)] = m.group(1)
    return said


async def settle(pilot: Any) -> None:
    """Let every worker of the app finish and their messages arrive."""
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()


async def test_the_probe_view_the_expectation_line_and_the_cli_say_one_verdict(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = write_docs(tmp_path / "docs", VERDICT_DOCS)
    (root / "chunkscope.toml").write_text(VERDICT_CONFIG, encoding="utf-8")
    cli = cli_probe_words(root, capsys)
    for case, start in CASES.items():
        assert cli.get(case, "").startswith(start), (case, cli)

    app = make_app(root, load_config(root), strategy="long")
    async with app.run_test(size=(160, 50)) as pilot:
        ex = app.explorer
        await wait_for(pilot, lambda: isinstance(app.screen, ExplorerScreen) and ex.result is not None,
                       what="the explorer")
        for (label, heading), start in CASES.items():
            await pilot.press("escape")  # out of the question field (after the first case), where v is typed
            await pilot.press("v")
            await wait_for(pilot, lambda: isinstance(app.screen, EvaluationScreen), what="the evaluation view")
            screen = app.screen
            assert isinstance(screen, EvaluationScreen)
            await wait_for(pilot, lambda: screen.result is not None, timeout=300, what="the probe")
            await settle(pilot)
            assert not screen.result.cancelled
            assert [o.label for o in screen.result.outcomes] == ["long", "cut"]

            # The probe view's list: the miss, in the CLI's words, on the line a person reads.
            await pilot.press("m")
            listing = screen.query_one("#eval-missed", MissedList)
            index = next(i for i, m in enumerate(screen._missed)  # noqa: SLF001 - the misses as listed
                         if (m.resolved.label, m.heading) == (label, heading))
            missed = screen._missed[index]  # noqa: SLF001
            said = cli[(label, heading)]
            assert missed.words == said
            option_id = f"miss-{index}"
            prompt = listing.get_option(option_id).prompt
            assert isinstance(prompt, Text) and f"✖ {heading}  {said}\n" in prompt.plain
            listing.highlighted = listing.get_option_index(option_id)
            await pilot.press("enter")

            # Enter marks its chunk as expected for its question; / and Enter ask it in the query pane.
            await wait_for(pilot, lambda: isinstance(app.screen, ExplorerScreen), what="back to the explorer")
            expected = ex.expected
            assert expected is not None and expected.question == heading
            assert ex.resolved.label == label
            await pilot.press("slash")
            pane = ex.query_one("#query-pane")
            box = ex.query_one("#query-input", Input)
            await wait_for(pilot, lambda: box.has_focus and box.value == heading, what="the question in its box")
            await pilot.press("enter")

            def judged() -> bool:
                a = pane._answer  # noqa: SLF001 - the answer the pane shows
                return (a is not None and a.question == heading and a.strategy_label == label
                        and a.verdict is not None and a.verdict.expected == expected)

            await wait_for(pilot, judged, timeout=300, what=f"{heading} asked with {label}")
            await settle(pilot)
            verdict = pane._answer.verdict  # noqa: SLF001
            assert not verdict.hit and verdict.rank == missed.rank
            assert verdict.words == said, (verdict.words, said)
            line = str(ex.query_one("#expect-status", Static).render())
            assert f"✖ missed: {said}" in line, line
