"""Background work steps aside while a person uses the app: a worker's poll between units waits for a pause in the
input (never on the UI thread, never past a cancel or its longest wait), and the app notes keys as they come."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

pytest.importorskip("textual")

from chunkscope.tui.input_quiet import InputQuiet, input_quiet_of  # noqa: E402
from tests.pilot import make_app, wait_for  # noqa: E402

SAMPLE = Path(__file__).resolve().parents[1] / "sample_docs"


class FakeClock:
    """A clock that moves only when the code under test sleeps."""

    def __init__(self) -> None:
        self.now = 100.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def _in_a_worker(fn):
    """``fn()`` on a thread that is not the main one; its return value."""
    out: list[object] = []
    t = threading.Thread(target=lambda: out.append(fn()))
    t.start()
    t.join(timeout=30)
    return out[0]


def test_a_worker_waits_until_the_input_has_paused() -> None:
    clock = FakeClock()
    quiet = InputQuiet(clock=clock, sleep=clock.sleep, quiet=0.3, longest=5.0)
    assert _in_a_worker(quiet.wait) == 0  # no input yet: no wait
    quiet.touch()
    clock.now += 0.1
    waited = _in_a_worker(quiet.wait)
    assert waited == pytest.approx(0.2)  # what was left of the quiet time after the key
    assert _in_a_worker(quiet.wait) == 0  # the pause has come


def test_the_ui_thread_never_waits() -> None:
    clock = FakeClock()
    quiet = InputQuiet(clock=clock, sleep=clock.sleep)
    quiet.touch()
    assert quiet.wait() == 0 and clock.slept == []


def test_a_cancel_or_the_longest_wait_ends_the_wait() -> None:
    clock = FakeClock()
    held: list[InputQuiet] = []

    def sleep_with_a_key_held_down(seconds: float) -> None:
        clock.sleep(seconds)
        held[0].touch()  # a key repeat on every look: the input never pauses

    held.append(InputQuiet(clock=clock, sleep=sleep_with_a_key_held_down, quiet=0.3, longest=1.0))
    held[0].touch()
    assert _in_a_worker(held[0].wait) == pytest.approx(1.0, abs=0.05)  # given up: the totals still come
    quiet = InputQuiet(clock=clock, sleep=clock.sleep, quiet=0.3, longest=1.0)
    quiet.touch()
    assert _in_a_worker(lambda: quiet.wait(lambda: True)) == 0  # cancelled: stop now, not after the pause


def test_the_poll_waits_then_answers_the_cancel() -> None:
    clock = FakeClock()
    quiet = InputQuiet(clock=clock, sleep=clock.sleep, quiet=0.3)
    quiet.touch()
    poll = quiet.poll(lambda: False)
    assert _in_a_worker(poll) is False
    assert clock.now >= 100.3


@pytest.mark.anyio
async def test_a_key_in_the_app_holds_a_worker_back_for_the_quiet_time() -> None:
    """Through the real app: the key is noted as it comes, so a worker polling right after waits for the pause
    (no upper bound is asserted: a busy machine only makes the wait longer)."""
    app = make_app(SAMPLE)
    async with app.run_test(size=(120, 40)) as pilot:
        quiet = input_quiet_of(app)
        assert quiet is app.input_quiet
        await wait_for(pilot, lambda: app.explorer.tree_result is not None, what="the tree's count")
        assert _in_a_worker(quiet.wait) < quiet.quiet  # nothing pressed for a while: little or no wait
        # A pause too long to end on its own here (a busy machine must not let it pass before the worker looks):
        # the worker waits until it gives up.
        quiet.quiet, quiet.longest = 60.0, 0.5
        await pilot.press("w")  # wrap on/off: any key the explorer answers
        waited = _in_a_worker(quiet.wait)
        assert waited >= 0.45


@pytest.mark.anyio
async def test_the_tree_cut_polls_through_the_pause(monkeypatch: pytest.MonkeyPatch) -> None:
    """The explorer's background cut of the whole tree (counts, histogram, lint) asks between files through the
    app's pause: its poll, called from a worker right after a key, waits."""
    import chunkscope.tui.screens.explorer as explorer

    polls: list = []
    real = explorer.chunk_tree

    def spying(docs, resolved, config, cancelled, **kw):
        polls.append(cancelled)
        return real(docs, resolved, config, cancelled, **kw)

    monkeypatch.setattr(explorer, "chunk_tree", spying)
    app = make_app(SAMPLE)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.explorer.tree_result is not None, what="the tree's count")
        assert polls
        app.input_quiet.quiet, app.input_quiet.longest = 60.0, 0.5  # as above: the wait ends at its limit
        await pilot.press("w")
        start = time.monotonic()
        assert _in_a_worker(polls[-1]) is False  # not cancelled...
        assert time.monotonic() - start >= 0.45  # ...and it waited for the pause first


def test_one_run_waits_the_longest_wait_in_all_not_per_unit() -> None:
    """Input that never pauses (a key held down): a run of 20 files is held back 1 s in all, not 1 s per file."""
    clock = FakeClock()
    quiet: list[InputQuiet] = []

    def sleep_with_a_key_held_down(seconds: float) -> None:
        clock.sleep(seconds)
        quiet[0].touch()

    quiet.append(InputQuiet(clock=clock, sleep=sleep_with_a_key_held_down, quiet=0.3, longest=1.0))
    quiet[0].touch()
    poll = quiet[0].poll(lambda: False)
    start = clock.now
    assert _in_a_worker(lambda: [poll() for _ in range(20)]) == [False] * 20
    assert clock.now - start == pytest.approx(1.0, abs=0.05)
