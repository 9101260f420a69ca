"""Soft wrap in the explorer's source view, driven with Pilot: rows are no longer lines, and nothing is lost."""

from __future__ import annotations

from pathlib import Path

import pytest
from rich.cells import cell_len

from chunkscope.config.reader import Config, resolve_strategy

pytest.importorskip("textual")

from chunkscope.tui.app import ChunkscopeApp  # noqa: E402
from chunkscope.tui.screens.compare import CompareScreen  # noqa: E402
from chunkscope.tui.screens.explorer import ExplorerScreen  # noqa: E402
from chunkscope.tui.widgets.source_view import SourceView  # noqa: E402
from tests import pilot  # noqa: E402
from tests.pilot import wait_for  # noqa: E402

pytestmark = pytest.mark.anyio

SIZE = (160, 50)
#: One paragraph per line, the Docusaurus habit: each sentence holds a word found nowhere else ("w17z").
PARAGRAPH_1 = " ".join(f"Sentence {i} of the first paragraph says w{i}z about joints and frames." for i in range(40))
PARAGRAPH_2 = " ".join(f"Line two sentence {i} names q{i}k and keeps going for a while." for i in range(40))
URL = "https://example.com/" + "".join(f"segment{i}/" for i in range(30))  # no space to break at
WIDE = "中文字符在这里，“引号”和表情👍🏽与e\u0301。" * 12  # wide characters, an emoji with its modifier, an accent
FILLER = "".join(f"Filler line {i}.\n" for i in range(80))  # more lines than the view has rows, unwrapped too
DOC = f"# Long lines\n\nA short line.\n\n{PARAGRAPH_1}\n\n{URL}\n\n{WIDE}\n\n{PARAGRAPH_2}\n\n## Tail\n\nThe end, short.\n\n{FILLER}"



@pytest.fixture
def docs(tmp_path: Path) -> Path:
    root = tmp_path / "docs"
    root.mkdir()
    (root / "long.md").write_text(DOC, encoding="utf-8")
    return root


def make_app(docs: Path, config: Config | None = None) -> ChunkscopeApp:
    # Small windows without overlap: chunk boundaries fall inside the long lines, each text in one chunk.
    return pilot.make_app(docs, config or Config(), "fixed", chunk_size=40, chunk_overlap=0)


async def opened(pilot, app: ChunkscopeApp) -> tuple[ExplorerScreen, SourceView]:
    ex = app.explorer
    await wait_for(pilot, lambda: ex.result is not None and ex.result.complete and ex.layout_data is not None
                   and ex.layout_data.chunks is ex.result.chunks and ex.tree_result is not None, what="long.md")
    view = ex.query_one(SourceView)
    view.focus()
    await pilot.pause()
    return ex, view


def line_index(text: str) -> int:
    """0-based line of the document holding ``text``."""
    return DOC[:DOC.index(text)].count("\n")


def rows_of(view: SourceView, y: int) -> list[str]:
    """The drawn rows of line ``y`` (gutter included), as text."""
    first, after = view.row_of_line(y), view.row_of_line(y + 1)
    top = round(view.scroll_y)
    return [view.render_line(row - top).text for row in range(first, after)]


def screen_text(view: SourceView) -> str:
    """Everything on screen in the text columns, whitespace removed (rows end wherever the wrap put them)."""
    gw = view.layout_data.gutter_width
    rows = [view.render_line(y).text[gw:] for y in range(view.scrollable_content_region.height)]
    return "".join("".join(rows).split())


def squash(text: str) -> str:
    return "".join(text.split())


async def test_long_lines_wrap_and_every_character_is_drawn(docs):
    app = make_app(docs)
    async with app.run_test(size=SIZE) as pilot:
        ex, view = await opened(pilot, app)
        assert view.wrap  # the explorer's default
        layout = ex.layout_data
        gw = layout.gutter_width
        width = view.scrollable_content_region.width
        avail = width - gw
        assert avail < len(PARAGRAPH_1) // 10  # the fixture's lines really are much longer than the view
        assert view.virtual_size.height > layout.line_count
        assert view.max_scroll_x == 0  # nothing to scroll sideways
        view.scroll_to(y=0, animate=False, immediate=True)
        await pilot.pause()
        y = line_index(PARAGRAPH_1)
        rows = rows_of(view, y)
        assert len(rows) >= -(-len(PARAGRAPH_1) // avail)
        assert all(len(r) == width for r in rows)
        # The first row carries the line number; the others a blank gutter with the band bar.
        assert rows[0][:gw].split()[0] == str(y + 1)
        for r in rows[1:]:
            assert r[:gw - 2].strip() == "" and r[gw - 2] in "▌█"
        # Breaks fall after spaces, so the rows, trailing spaces dropped and joined by one space, are the line.
        assert " ".join(r[gw:].rstrip() for r in rows) == PARAGRAPH_1
        # A word longer than the view is cut at the column: every row but the last is full.
        url_rows = rows_of(view, line_index(URL))
        assert len(url_rows) == -(-len(URL) // avail)
        assert "".join(r[gw:].rstrip() for r in url_rows) == URL
        assert all(len(r[gw:]) == avail and " " not in r[gw:] for r in url_rows[:-1])
        # Wide characters are drawn whole, never wider than the view; the emoji keeps its modifier.
        wide_rows = rows_of(view, line_index(WIDE))
        assert len(wide_rows) >= -(-cell_len(WIDE) // avail)
        assert all(cell_len(r) == width for r in wide_rows)
        assert "".join(r[gw:].rstrip() for r in wide_rows) == WIDE
        # Short lines still take one row each.
        assert len(rows_of(view, line_index("A short line."))) == 1


async def test_rechunk_keeps_the_row_map(docs):
    app = make_app(docs)
    async with app.run_test(size=SIZE) as pilot:
        ex, view = await opened(pilot, app)
        rows_before = view._rows  # noqa: SLF001 - the cached wrap of this text at this width
        assert rows_before is not None
        before = [(c.start, c.end) for c in ex.result.chunks]
        # Live tuning: same text, other boundaries.
        resolved = resolve_strategy(ex.config, "fixed", {"chunk_size": 60, "chunk_overlap": 0})
        ex.set_strategy(resolved)
        await wait_for(pilot, lambda: ex.result.resolved is resolved and ex.result.complete
                       and ex.layout_data.chunks is ex.result.chunks, what="re-chunk at 60")
        assert [(c.start, c.end) for c in ex.result.chunks] != before
        assert view._rows is rows_before  # noqa: SLF001


async def test_click_on_a_continuation_row_selects_the_chunk_owning_that_text(docs):
    app = make_app(docs)
    async with app.run_test(size=SIZE) as pilot:
        ex, view = await opened(pilot, app)
        gw = ex.layout_data.gutter_width
        y = line_index(PARAGRAPH_2)
        height = view.scrollable_content_region.height
        for i in range(10, 40):
            word = f"q{i}k"
            offset = DOC.index(word)
            owner = next(c.index for c in ex.result.chunks if c.start <= offset < c.end)
            if owner not in (ex.selected, ex.layout_data.chunk_at(y, None)):
                break  # not the chunk at the line's start (what a click read as a line would pick), nor selected
        else:
            pytest.fail("the fixture has no chunk inside the long line")
        # Put the word's row on screen, then find where it is drawn.
        first = view.row_of_line(y)
        view.scroll_to(y=first + 2, animate=False, immediate=True)
        await pilot.pause()
        target = None
        for _ in range(200):
            top = round(view.scroll_y)
            for sy in range(height):
                text = view.render_line(sy).text
                if word in text[gw:]:
                    target = (top + sy, sy, text.index(word))
                    break
            if target is not None:
                break
            view.scroll_to(y=top + height, animate=False, immediate=True)
            await pilot.pause()
        assert target is not None, f"{word} is not drawn"
        row, sy, x = target
        assert first < row < view.row_of_line(y + 1)  # a continuation row of that line
        await pilot.click(SourceView, offset=(x + 1 + 1, sy + 1))  # +1: the border
        await wait_for(pilot, lambda: ex.selected == owner, what=f"click on {word} to select chunk {owner}")


async def test_scroll_to_chunk_brings_its_start_into_view(docs):
    app = make_app(docs)
    async with app.run_test(size=SIZE) as pilot:
        ex, view = await opened(pilot, app)
        assert view.wrap
        # Chunks below both long lines: with rows taken for lines, the view would stop far above them.
        tail = DOC.index("## Tail")
        index = next(c.index for c in ex.result.chunks if c.end > tail)
        view.scroll_to(y=0, animate=False, immediate=True)
        await pilot.pause()
        view.scroll_to_chunk(index)
        await pilot.pause()
        chunk = ex.result.chunks[index]
        assert squash(chunk.text)[:20] in screen_text(view)
        # And one starting in the middle of a long line.
        mid = DOC.index("q25k")
        index = next(c.index for c in ex.result.chunks if c.start > mid)
        view.scroll_to(y=0, animate=False, immediate=True)
        await pilot.pause()
        view.scroll_to_chunk(index)
        await pilot.pause()
        assert squash(ex.result.chunks[index].text)[:20] in screen_text(view)


async def test_w_toggles_wrap_and_keeps_the_top(docs):
    app = make_app(docs)
    async with app.run_test(size=SIZE) as pilot:
        ex, view = await opened(pilot, app)
        y = line_index(URL)
        view.scroll_to(y=view.row_of_line(y), animate=False, immediate=True)
        await pilot.pause()
        top_chunk = view.chunk_on_screen()
        assert view.line_at_row(round(view.scroll_y)) == y and round(view.scroll_y) != y
        await pilot.press("w")
        await wait_for(pilot, lambda: not view.wrap, what="wrap off")
        assert round(view.scroll_y) == y  # rows are lines again, the same line on top
        assert view.chunk_on_screen() == top_chunk
        assert view.virtual_size.height == ex.layout_data.line_count
        await pilot.press("w")
        await wait_for(pilot, lambda: view.wrap, what="wrap on")
        assert view.line_at_row(round(view.scroll_y)) == y and round(view.scroll_y) == view.row_of_line(y)
        assert view.chunk_on_screen() == top_chunk
        # The compare screen aligns two views line by line: it never wraps.
        ex.action_compare("recursive")
        await wait_for(pilot, lambda: isinstance(app.screen, CompareScreen), what="compare screen")
        assert not any(v.wrap for v in app.screen.query(SourceView))


async def test_without_wrap_a_long_line_is_cropped(docs):
    from chunkscope.config.reader import ConfigError, parse_config

    config = parse_config({"tui": {"wrap": False}})  # `[tui] wrap = false` in chunkscope.toml
    with pytest.raises(ConfigError, match="tui.wrap"):
        parse_config({"tui": {"wrap": "no"}})
    app = make_app(docs, config)
    async with app.run_test(size=SIZE) as pilot:
        ex, view = await opened(pilot, app)
        assert not view.wrap
        layout = ex.layout_data
        gw = layout.gutter_width
        width = view.scrollable_content_region.width
        assert view.virtual_size.height == layout.line_count and view.max_scroll_x > 0
        y = line_index(PARAGRAPH_1)
        view.scroll_to(y=y, animate=False, immediate=True)
        await pilot.pause()
        assert view.row_of_line(y) == y and view.line_at_row(y) == y
        text = view.render_line(0).text
        assert len(text) == width and text[gw:] == PARAGRAPH_1[:width - gw]
        assert view.render_line(1).text[gw:].strip() == ""  # the next row is the next (blank) line


def test_row_map_measures_lines_as_they_are_drawn():
    """Tabs, wide characters, control pictures, emoji, accents: rows never wider than asked, nothing lost."""
    from rich.cells import cell_len

    from chunkscope.safe_text import visible
    from chunkscope.document.outline_scan import line_starts_of
    from chunkscope.tui.row_map import TAB, RowMap

    line = "\t".join(["中文字符在这里", "emoji 👍🏽 and e\u0301", "bell \x07 esc \x1b[31m", "C1 \x85 done"] * 6)
    text = f"hi\n{line}\r\n{'word ' * 40}end\n"
    start = text.index(line)
    drawn = visible(line.replace("\t", TAB), oneline=True)
    for width in (15, 9, 4):
        rows = RowMap(text, line_starts_of(text), width)
        assert rows.row_count(0) == 1
        # Whole words per row, each row as full as the words allow.
        words = "word " * 40 + "end"
        w_start = text.index(words)
        w_rows = [words[slice(*rows.chars(2, k))] for k in range(rows.row_count(2))]
        assert "".join(w_rows) == words and rows.offset(2, 1, w_start) == w_start + rows.chars(2, 1)[0]
        if width >= len("word "):
            assert all(set(r.split()) <= {"word", "end"} and len(r) > width - 5 for r in w_rows[:-1])
        pieces = []
        for k in range(rows.row_count(1)):
            a, b = rows.chars(1, k)
            piece = drawn[a:b]
            assert 0 < cell_len(piece) <= width, (width, k, piece)
            # The row's first character is at the offset the map gives (clicks and band bars read it).
            off = rows.offset(1, k, start)
            assert len(visible(text[start:off].replace("\t", TAB), oneline=True)) == a
            pieces.append(piece)
        assert "".join(pieces) == drawn
        # No emoji cut from its modifier, no letter from its accent.
        assert all(not p.startswith(("\u0301", "🏽")) for p in pieces)
        assert rows.rows == 1 + rows.row_count(1) + rows.row_count(2) + 1  # the empty last line counts
        assert rows.locate(rows.row_of_line(2) + 1) == (2, 1)
    # A family emoji (three joined by ZWJ) is one glyph two cells wide: measured and kept as such.
    family = "\U0001f468\u200d\U0001f469\u200d\U0001f467"
    emoji = f"ab{family}cd{family}"
    rows = RowMap(emoji, [0], 4)
    assert [emoji[slice(*rows.chars(0, k))] for k in range(rows.row_count(0))] == [f"ab{family}", f"cd{family}"]


async def test_notes_after_a_line_wrap_with_it_instead_of_running_off_the_edge(docs):
    """Lint findings and the ✂ mark are drawn after their line; wrapped, they continue on rows of their own."""
    # Chunks of 400 tokens: the embedder reads 256 word pieces of each, so every chunk gets a long
    # embed-truncation note and a ✂ mark where the model stops reading.
    app = pilot.make_app(docs, Config(), "fixed", chunk_size=400, chunk_overlap=0)
    async with app.run_test(size=SIZE) as pilot_:
        ex, view = await opened(pilot_, app)
        layout = ex.layout_data
        gw = layout.gutter_width
        width = view.scrollable_content_region.width
        noted = sorted(layout.cut_lines | {line - 1 for line in layout.marks})
        notes = {y: "".join(text for text, _ in layout.pieces(y).note) for y in noted}  # as drawn after the text
        assert any(len(note) > width for note in notes.values()), "the fixture needs notes wider than the view"
        for y, note in notes.items():
            rows = rows_of(view, y)
            assert all(cell_len(r) == width for r in rows)
            start, end = layout.line_span(y)
            drawn = squash("".join(r[gw:] for r in rows))
            # The whole line, then the whole note: nothing cut at the edge.
            assert drawn == squash(DOC[start:end]) + squash(note), f"line {y + 1}"
            # The note's rows break between words, as the text's do: every word on a row is a whole one (unless
            # the line holds a word wider than the view: the URL, cut at the column).
            words = set(note.split()) | set(DOC[start:end].split())
            if all(len(w) < width - gw for w in DOC[start:end].split()):
                assert all(set(r[gw:].split()) <= words for r in rows), f"line {y + 1}"


async def test_a_url_in_the_chunk_detail_breaks_only_between_its_parts(sample_docs):
    """The detail pane breaks a URL after a /, ?, & or #, never inside a name (at every width)."""
    from chunkscope.config.reader import parse_config
    from chunkscope.tui.widgets.chunk_detail import ChunkDetail

    site = "https://robotics-handbook.example.org/docs/humanoid-kinematics-second-edition"
    path = "module-1-foundations/02-forward-kinematics.md"
    for size in ((80, 24), (120, 40), (160, 50)):
        app = pilot.make_app(sample_docs, parse_config({"site_url": site}))
        async with app.run_test(size=size) as pilot_:
            ex = app.explorer
            await wait_for(pilot_, lambda: ex.result is not None and ex.result.complete and ex.query("#detail"),
                           what="the explorer")
            ex.open_file(path)
            await wait_for(pilot_, lambda: ex.result.doc.path == path and ex.result.complete, what=path)
            ex.selected = 2
            detail = ex.query_one(ChunkDetail)
            from chunkscope.tui.headless.session import chunk_link

            url = chunk_link(ex.config, ex.result, ex.result.chunks[2])
            assert url.startswith(site) and "#" in url
            await wait_for(pilot_, lambda: any("https://" in s.text for s in detail.lines), what="the URL drawn")
            lines = [s.text for s in detail.lines]
            first = next(i for i, line in enumerate(lines) if "https://" in line)
            pieces = [lines[first][lines[first].index("https://"):].strip()]
            while len("".join(pieces)) < len(url):
                pieces.append(lines[first + len(pieces)].strip())
            assert "".join(pieces) == url, (size, pieces)
            # Each line ends at a separator: between the parts of a URL, never inside a word.
            assert all(not (a[-1].isalnum() and b[0].isalnum()) for a, b in zip(pieces, pieces[1:])), (size, pieces)
            assert all(len(piece) <= detail.scrollable_content_region.width for piece in pieces)


async def test_a_recut_keeps_the_rows_of_the_notes_until_its_own_notes_come(docs, monkeypatch):
    """The boundaries of a re-cut come before its lint and ✂ marks: meanwhile the rows the old notes took stay
    (blank), so the text does not jump up and back down, and the screen is not laid out again twice per change."""
    import threading

    from chunkscope.tui.screens import explorer as explorer_module

    app = pilot.make_app(docs, Config(), "fixed", chunk_size=400, chunk_overlap=0)
    async with app.run_test(size=SIZE) as pilot_:
        ex, view = await opened(pilot_, app)
        height = view.virtual_size.height
        y = line_index(PARAGRAPH_1)
        rows_before = len(rows_of(view, y))
        gate = threading.Event()
        original = explorer_module.complete_file

        def held(first, config):
            gate.wait(20)
            return original(first, config)

        monkeypatch.setattr(explorer_module, "complete_file", held)
        ex.set_strategy(resolve_strategy(ex.config, "fixed", {"chunk_size": 410, "chunk_overlap": 0}))
        await wait_for(pilot_, lambda: ex.result.resolved.params["chunk_size"] == 410
                       and ex.layout_data.chunks is ex.result.chunks, what="the new boundaries")
        assert not ex.result.complete and ex.layout_data.pieces(y).note == []  # no notes yet
        assert view.virtual_size.height == height and len(rows_of(view, y)) == rows_before
        gate.set()
        await wait_for(pilot_, lambda: ex.result.complete and ex.layout_data.chunks is ex.result.chunks,
                       what="the completed cut")
        note = "".join(text for text, _ in ex.layout_data.pieces(y).note)
        assert note and squash("".join(r[ex.layout_data.gutter_width:] for r in rows_of(view, y))).endswith(squash(note))


def test_row_map_wraps_a_note_with_its_line():
    """A note is wrapped as part of its line's drawing: rows never wider than asked, breaks after spaces, every
    character on one row, note rows standing for the line's end; other notes re-wrap only the noted lines."""
    from chunkscope.document.outline_scan import line_starts_of
    from chunkscope.tui.row_map import RowMap

    line = " ".join(f"word{i}" for i in range(30))
    text = f"short\n{line}\n中文字符在这里 and more text here\n"
    starts = line_starts_of(text)
    note = "  ◀ embed-truncation: chunk 0's embed text is 376 word pieces, so the rest is not embedded"
    for width in (20, 25, 40):  # wider than any word: a word wider than a row is cut at the width
        plain = RowMap(text, starts, width)
        rows = plain.with_notes({1: note, 2: note})
        assert rows.with_notes({1: note, 2: note}) is rows and rows.with_notes({}).rows == plain.rows
        for y, drawn in ((1, line + note), (2, "中文字符在这里 and more text here" + note)):
            pieces = [drawn[slice(*rows.chars(y, k))] for k in range(rows.row_count(y))]
            assert "".join(pieces) == drawn
            assert all(cell_len(piece.rstrip()) <= width for piece in pieces)
            assert all(piece.endswith(" ") for piece in pieces[:-1])  # whole words: every break after a space
            end = text.index("\n", starts[y])
            k_note = next(k for k in range(rows.row_count(y)) if rows.chars(y, k)[0] >= end - starts[y])
            assert rows.offset(y, k_note, starts[y]) == end  # a row of the note stands for the line's end
        assert rows.row_count(0) == plain.row_count(0) == 1  # lines without a note keep their rows
