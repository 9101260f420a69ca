"""The open file's chapter (the query pane's "this chapter only" filter) and colours follow the file shown, also
when its cut fails: they come with the cut's completion, and a failed cut, which has none, brings them itself."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("textual")

from chunkscope.tui.headless import session  # noqa: E402
from chunkscope.tui.headless.search import chapter_of  # noqa: E402
from tests.pilot import SAMPLE, make_app, wait_for  # noqa: E402

pytestmark = pytest.mark.anyio


async def test_a_file_whose_cut_fails_gets_its_own_chapter_and_colours(monkeypatch: pytest.MonkeyPatch,
                                                                       tmp_path: Path) -> None:
    from chunkscope.document.loader import load_docs

    monkeypatch.setenv("CHUNKSCOPE_CACHE", str(tmp_path / "cache"))  # no stored cut answers for the failing file
    docs = load_docs(SAMPLE).documents
    bad = next(d for d in docs if chapter_of(d) not in (None, chapter_of(docs[0])))
    real = session._safe_chunk

    def failing(doc, resolved):
        return ([], "ValueError: this file's cut fails") if doc.path == bad.path else real(doc, resolved)

    monkeypatch.setattr(session, "_safe_chunk", failing)
    app = make_app(SAMPLE)
    async with app.run_test(size=(160, 50)) as pilot:
        ex = app.explorer
        await wait_for(pilot, lambda: ex.current_chapter == chapter_of(docs[0]), what="the first file's chapter")
        ex.open_file(bad.path)
        await wait_for(pilot, lambda: ex.result is not None and ex.result.doc.path == bad.path and ex.result.error,
                       what="the failed cut")
        await pilot.pause(0.3)
        assert ex.current_chapter == chapter_of(bad)  # not the first file's
        assert ex.layout_data is not None and ex.layout_data.doc.path == bad.path
        assert ex.layout_data.colours, "the failed file's text was left without its colours"
