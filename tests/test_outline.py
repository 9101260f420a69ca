"""The outline (line table, headings, fences): the fast line scan must equal markdown-it's answer exactly.

`structure.outline` scans when it can be sure and derives from the full parse otherwise; either way the result
must be what the parse gives. These tests compare the two on the real corpus, on the sample docs and on generated
Markdown built to hit every rule the scanner models or refuses (fences of all shapes, setext candidates, lists,
quotes, HTML, math, containers, tables, tabs, CR/CRLF line endings, front matter, inline markup in headings).
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, settings, strategies as st

from chunkscope.chunking.registry import get_strategy
from chunkscope.document.loader import Document, decode_document, load_docs
from chunkscope.document.outline_scan import Unsure, scan
from chunkscope.document.structure import _parser, outline_from_structure, parse_structure

REPO = Path(__file__).resolve().parents[1]
CORPUS = REPO.parent / "shared" / "corpus" / "rust-book"
SAMPLE_DOCS = REPO / "sample_docs"
NO_CORPUS = f"the Rust book corpus is not at {CORPUS} (it lives in ../shared/corpus beside the repo)"


def doc_of(text: str, path: str = "ch03-02-kinematics.md") -> Document:
    d, _ = decode_document(text.encode("utf-8"), path)
    assert d is not None
    return d


def fresh(d: Document) -> Document:
    return Document(d.path, d.text, d.front_matter, d.body_start)


def key(o) -> tuple:
    heads = [(h.level, h.text, h.anchor, h.start, h.end, h.line, h.number, h.path, h.index) for h in o.headings]
    return heads, list(o.fences), list(o.line_starts), o.text_length


def reference(d: Document):
    """The outline markdown-it gives, on a copy of ``d`` that has never been scanned."""
    return outline_from_structure(parse_structure(fresh(d)), len(d.text))


def check(d: Document) -> str:
    """Assert the outline of a never-parsed copy equals the parse's; return how it was made."""
    o = fresh(d).outline
    ref = reference(d)
    assert key(o) == key(ref), f"{d.path}: the {o.source} outline differs from markdown-it's"
    return o.source


def corpus_docs(root: Path, reason: str) -> list[Document]:
    if not root.is_dir():
        pytest.skip(reason)
    return load_docs(root).documents


# --- real documents -------------------------------------------------------------------------------------------


@pytest.mark.corpus
def test_rust_book_outlines_equal_markdown_it_and_take_the_fast_path() -> None:
    docs = corpus_docs(CORPUS, NO_CORPUS)
    sources = [check(d) for d in docs]
    fast = sources.count("fast")
    print(f"\nRust book: {fast}/{len(docs)} files take the fast path")
    # The Rust book is plain Markdown (quotes, HTML comments, <Listing> tags): the scanner must handle all of it.
    assert fast >= 0.95 * len(docs)
    # And the outline is real: hundreds of headings and fences, inside quotes too.
    total_headings = sum(len(d.outline.headings) for d in docs)
    total_fences = sum(len(d.outline.fences) for d in docs)
    assert total_headings > 500 and total_fences > 900


def test_sample_docs_outlines_equal_markdown_it() -> None:
    docs = corpus_docs(SAMPLE_DOCS, "sample_docs/ is not there")
    if not docs:
        pytest.skip("sample_docs/ holds no documents yet")
    sources = [check(d) for d in docs]
    print(f"\nsample_docs: {sources.count('fast')}/{len(docs)} files take the fast path")


# --- how the outline is made ------------------------------------------------------------------------------------


def test_a_parsed_document_always_derives_its_outline() -> None:
    d = doc_of("# Title\n\nText.\n\n```\ncode\n```\n")
    d.structure  # parsed first
    o = d.outline
    assert o.source == "derived"
    assert o.headings is d.structure.headings
    assert o is d.outline  # cached


def test_an_unparsed_plain_document_is_scanned_and_never_parsed() -> None:
    d = doc_of("# Title\n\nText.\n\n## Part `two`\n\n```rust\n# not a heading\n```\n")
    o = d.outline
    assert o.source == "fast"
    assert not d.analysis.structure_parsed
    assert [(h.level, h.text, h.anchor, h.path) for h in o.headings] == [
        (1, "Title", "title", ("Title",)), (2, "Part two", "part-two", ("Title", "Part two"))]
    start = d.text.index("```rust")
    assert o.fences == [(start, d.text.index("```\n", start + 3) + 3)]
    assert o.fence_at(start + 5) and not o.fence_at(start) and not o.fence_at(o.fences[0][1])


def test_chunking_with_recursive_or_fixed_never_parses() -> None:
    text = "# A\n\n" + "Words and more words. " * 300 + "\n\n```\n" + "code line\n" * 200 + "```\n"
    for name in ("recursive", "fixed"):
        d = doc_of(text)
        chunks = get_strategy(name, chunk_size=100, chunk_overlap=10).chunk(d)
        assert chunks and not d.analysis.structure_parsed
        assert d.outline.source == "fast"


def test_unsure_documents_fall_back_to_the_parse() -> None:
    cases = [
        "Title\n=====\n",  # setext
        "Text\n<Listing>\n# heading\n",  # a lone tag cannot interrupt a paragraph (here it is text)
        "<Listing>\n# not a heading\n",  # ... but may start one (here it does)
        "- # heading in a list item\n",
        "- item\n\n    ```\n    code\n    ```\n",  # a fence inside a list item
        "Para\n$$\nx\n$$\n",  # math after a paragraph line
        "# a | b\n--- | ---\n",  # a table, not a heading
        "> ---\n$$\n\n# y\n$$\n",  # a quote's region, parsed alone, would cut this math block short
        "<div> | a\n---|---\n# h\n",  # a table, whose rows a heading ends (not an HTML block to the blank line)
    ]
    for text in cases:
        with pytest.raises(Unsure):
            scan(text, _parser().parse)
        d = doc_of(text)
        assert d.outline.source == "derived"
        assert key(d.outline) == key(reference(d))


def test_html_blocks_that_surely_start_are_scanned() -> None:
    text = "<div>\n# not a heading\n```\n</div>\n\n<!-- a\n\n# nor this\n-->\n# Real\n"
    d = doc_of(text)
    assert d.outline.source == "fast"
    assert [h.text for h in d.outline.headings] == ["Real"] and d.outline.fences == []
    assert key(d.outline) == key(reference(d))


def test_nul_characters_fall_back() -> None:
    d = Document("x.md", "# a\x00b\n")
    assert d.outline.source == "derived"
    assert d.outline.headings[0].text == "a\ufffdb"


def test_line_of_and_heading_path_agree_with_the_structure() -> None:
    text = "---\ntitle: T\n---\n# One\r\n\r\ntext\r\n## Two\rmore\r> ### Three\r> q\r\n\r\n#### Four #\n"
    d = doc_of(text)
    o = d.outline
    assert o.source == "fast"
    st = reference(d)
    for off in range(len(text) + 1):
        assert o.line_of(off) == st.line_of(off)
        assert o.heading_path_at(off) == st.heading_path_at(off)
    assert [h.text for h in o.headings] == ["One", "Two", "Three", "Four"]
    assert o.headings[2].start == text.index("> ###")  # a quote's heading starts at its ">" like the Block


def test_document_line_of_needs_no_parse() -> None:
    d = doc_of("a\nb\r\nc\rd")
    assert [d.line_of(i) for i in range(len(d.text))] == [1, 1, 2, 2, 2, 3, 3, 4]
    assert not d.analysis.structure_parsed


# --- generated Markdown: fast-or-fallback == derived, always ------------------------------------------------------

WORD = st.sampled_from([
    "Foo", "bar", "Ünïcödé", "中文", "🦀", "3.2", "Chapter 4:", "a|b", "#", "##", "x#", "\\#", "`code`", "`a[b]`",
    "``x ` y``", "`", "*em*", "_u_", "**b**", "~~s~~", "[link](http://x.y)", "[ref]", "[ref][]", "[x][ref]",
    "![img](a.png)", "<http://a.b>", "<span>s</span>", "&amp;", "&copy;", "$x^2$", "$$", "!", "\\", "{#custom-id}",
    "{#frames}", "\u2003", "é",
])
TEXT = st.lists(WORD, min_size=0, max_size=5).map(" ".join)
INDENT = st.sampled_from(["", "", "", " ", "  ", "   ", "    ", "     ", "\t", " \t", "      "])


@st.composite
def atx(draw) -> str:
    hashes = "#" * draw(st.integers(1, 7))
    sep = draw(st.sampled_from([" ", " ", "\t", "", "  "]))
    close = draw(st.sampled_from(["", "", " #", " ##", "#", " # ", "\t##", " #x"]))
    trail = draw(st.sampled_from(["", "", " ", "\t"]))
    return draw(INDENT) + hashes + sep + draw(TEXT) + close + trail


@st.composite
def fence(draw) -> str:
    ch = draw(st.sampled_from("`~"))
    n = draw(st.integers(3, 5))
    info = draw(st.sampled_from(["", "rust", "python title", " js", "a`b", "~~", "{.x}"]))
    body = draw(st.lists(st.sampled_from([
        "code", "# comment", "## not heading", "```", "~~~", "````", "  ```", "    ```", "> # q", "<div>", "",
        "$$", ":::", "---", "===", "- item", "\t```", "```  ", "``` x",
    ]), max_size=5))
    close_kind = draw(st.sampled_from(["same", "same", "longer", "shorter", "other", "text", "none", "indented"]))
    closers = {
        "same": ch * n, "longer": ch * (n + 2), "shorter": ch * (n - 1), "other": ("~" if ch == "`" else "`") * n,
        "text": ch * n + " x", "none": None, "indented": draw(INDENT) + ch * n + draw(st.sampled_from(["", " ", "\t"])),
    }
    lines = [draw(INDENT) + ch * n + info, *body]
    if closers[close_kind] is not None:
        lines.append(closers[close_kind])
    return "\n".join(lines)


paragraph = st.lists(st.lists(WORD, min_size=1, max_size=5).map(" ".join), min_size=1, max_size=3).map("\n".join)
setext = st.tuples(paragraph, INDENT, st.sampled_from(["===", "---", "-", "=", "===  ", "- -", "--- x"])).map(
    lambda t: f"{t[0]}\n{t[1]}{t[2]}")
hr = st.sampled_from(["***", "---", "___", " - - -", "* * *"])
html = st.sampled_from([
    "<div>", "</div>", "<div>\n# inside", "<!-- c\n# inside\n-->", "<!-- x -->", "<!--\n```\n-->",
    "<span>a</span> text", '<Listing n="1">', "</Listing>", "<?php\n# x\n?>", "<![CDATA[\n# x\n]]>",
    "<script>\n# x\n</script>", '<a id="x"></a>', '<img src="a" />', "<pre>", "<!X\n# y\n>", "< notatag",
])
math = st.sampled_from(["$$", "$$ x $$", "$$\nx\n$$", "$$\n# x\n```\n$$", "$$ a", "b $$", "$$\n\n# y\n$$",
                        "$$ a $$ b", "$$$", "$$\n$$"])
container = st.sampled_from([":::note", ":::", "::::tip Title", "::::", ":::note\n# In\n:::", "::: x\n```\n:::",
                             ":::a\n:::b\n# x\n:::\n:::", "  :::", "::: \n```"])
table = st.sampled_from(["| a | b |\n|---|---|\n| 1 | 2 |", "# a | b\n--- | ---", "``` a | b\n--- | ---",
                         "<div> | a\n---|---\n# h", "$$ | x\n-|-\n$$", "::: a | b\n--|--\n# c", "| a |\n---",
                         "a | b\n---|---\n# h", "| x |\n|:-:|\n```\n|y|"])
reference_def = st.sampled_from(["[ref]: http://example.com", "[x]:\n/url", "[ref]: /u 'title\n# t'"])
tabs = st.sampled_from(["\t# x", "\t```", "-\tfoo", "#\tTab heading", ">\t# q", " \t~~~", "1.\t# h"])
indented_code = st.sampled_from(["    # code", "    ```", "    > q", "        # deep"])


@st.composite
def list_block(draw) -> str:
    marker = draw(st.sampled_from(["-", "*", "+", "1.", "2)", "10."]))
    first = draw(st.one_of(TEXT, atx(), st.just("```"), st.just("> # q"), st.just("<div>"), st.just(""),
                           st.just("$$"), st.just(":::")))
    lines = [f"{marker} {first}" if first else marker]
    for _ in range(draw(st.integers(0, 4))):
        pad = " " * draw(st.integers(0, 7))
        item = draw(st.one_of(TEXT, atx(), fence(), st.just("> # quoted"), st.just("<div>"), st.just("- nested"),
                              st.just("1. n"), st.just("---"), st.just("==="), st.just(""), st.just("$$\nx\n$$")))
        lines.extend(pad + ln for ln in item.split("\n"))
    return "\n".join(lines)


@st.composite
def quote(draw) -> str:
    lines = []
    for _ in range(draw(st.integers(1, 5))):
        prefix = draw(st.sampled_from(["> ", ">", "  > ", "> > ", "", ">\t"]))
        item = draw(st.one_of(TEXT, atx(), fence(), st.just("- item"), st.just("==="), st.just("---"),
                              st.just("<div>"), st.just(""), st.just("1. # x")))
        lines.extend(prefix + ln for ln in item.split("\n"))
    return "\n".join(lines)


front_matter = st.sampled_from(["", "", "---\ntitle: T\n---", "---\n# not\n...", "----\nx: 1\n---\n----",
                                "---\na: b", "---x\n# h\n---", "---\n\tb\n ---", "---\n---"])
block = st.one_of(
    atx(), atx(), fence(), fence(), paragraph, paragraph, setext, hr, html, math, container, table, reference_def,
    tabs, indented_code, list_block(), quote(), st.just(""),
)


@st.composite
def markdown(draw) -> str:
    blocks = draw(st.lists(block, max_size=10))
    gap = st.sampled_from(["\n", "\n\n", "\n\n", "\n  \n", "\n\n\n"])
    seps = draw(st.lists(gap, min_size=len(blocks), max_size=len(blocks)))
    text = "".join(b + s for b, s in zip(blocks, seps))
    fm = draw(front_matter)
    if fm:
        text = fm + "\n" + text
    text = text + draw(st.sampled_from(["", "", "   ", "\n", "\t"]))
    ending = draw(st.sampled_from(["\n", "\n", "\r\n", "\r", "mixed"]))
    if ending == "mixed":
        parts = text.split("\n")
        text = "".join(p + ("\r\n", "\n", "\r")[i % 3] for i, p in enumerate(parts[:-1])) + parts[-1]
    elif ending != "\n":
        text = text.replace("\n", ending)
    return text


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=markdown())
def test_generated_markdown_outline_equals_markdown_it(text: str) -> None:
    d = doc_of(text)
    source = check(d)
    event(source)


#: Characters that matter to block structure, to build texts no grammar above would think of.
MD_CHARS = "#`~<>$:=-*+|[]!\\&{}.1 \t\n\n\n\rabé中"


@settings(max_examples=1500, deadline=None)
@given(text=st.one_of(
    st.text(st.sampled_from(MD_CHARS), max_size=120),
    st.lists(st.sampled_from(["#", "```", "~~~", "> ", "- ", "1. ", "<div>", "<!--", "-->", "$$", ":::", "===",
                              "---", "    ", "  ", "\t", "a", "b c", "|", "\n", "\n", "\n\n", "\r\n", "`"]),
             max_size=40).map("".join),
    st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=200),
))
def test_arbitrary_text_outline_equals_markdown_it(text: str) -> None:
    event(check(doc_of(text)))


def _plain_doc(rng: random.Random) -> str:
    """Ordinary book Markdown: headings, prose, fences of every shape, lists, quotes, HTML comments."""
    parts = []
    for _ in range(rng.randint(3, 25)):
        k = rng.random()
        if k < 0.2:
            parts.append("#" * rng.randint(1, 6) + " " + rng.choice(["Intro", "Using `Box<T>`", "Why *not*?",
                                                                       "3.1 Frames {#f}", "Intro", "A & B"]))
        elif k < 0.45:
            parts.append(rng.choice(["Some text here.", "More text,\nover two lines.", "A `code` span and *em*."]))
        elif k < 0.65:
            ch = rng.choice("`~")
            n = rng.randint(3, 5)
            lines = ["let x = 1;", "# comment", "```", "~~~", ""]
            body = "\n".join(rng.choice(lines) for _ in range(rng.randint(0, 4)))
            close = rng.choice([ch * n, ch * (n + 1), ""])
            parts.append(f"{ch * n}{rng.choice(['', 'rust'])}\n{body}\n{close}".rstrip("\n"))
        elif k < 0.8:
            parts.append("\n".join(f"- item {i}" for i in range(rng.randint(1, 4))))
        elif k < 0.9:
            parts.append(rng.choice(["> ### Note\n>\n> text", "> plain quote", "> ```\n> code\n> ```"]))
        else:
            parts.append(rng.choice(["<!-- comment -->", "<!-- a\n# b\n-->", "<Listing>\n\n```\nx\n```\n\n</Listing>"]))
    return "\n\n".join(parts) + "\n"


def test_plain_generated_documents_mostly_take_the_fast_path() -> None:
    rng = random.Random(20240517)
    sources = [check(doc_of(_plain_doc(rng))) for _ in range(400)]
    # Unclosed fences swallow what follows, so some documents end up with HTML or lists the scanner refuses.
    assert sources.count("fast") >= 0.9 * len(sources), sources.count("fast")


# --- chunks do not depend on whether the document was parsed ------------------------------------------------------


def _chunks(d: Document, name: str, **params) -> list[dict]:
    return [c.to_dict() for c in get_strategy(name, **params).chunk(d)]


@pytest.mark.corpus
def test_corpus_chunks_are_the_same_parsed_or_not() -> None:
    docs = corpus_docs(CORPUS, NO_CORPUS)
    if SAMPLE_DOCS.is_dir():
        docs = docs + load_docs(SAMPLE_DOCS).documents
    for d in docs[::3]:
        for name, params in (("recursive", {}), ("fixed", {}), ("recursive", {"chunk_size": 128, "chunk_overlap": 0})):
            scanned = fresh(d)
            parsed = fresh(d)
            parsed.structure
            assert _chunks(scanned, name, **params) == _chunks(parsed, name, **params), d.path


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=markdown(), size=st.integers(8, 80), name=st.sampled_from(["recursive", "fixed"]))
def test_generated_chunks_are_the_same_parsed_or_not(text: str, size: int, name: str) -> None:
    scanned = doc_of(text)
    parsed = doc_of(text)
    parsed.structure
    params = {"chunk_size": size, "chunk_overlap": size // 4}
    assert _chunks(scanned, name, **params) == _chunks(parsed, name, **params)
