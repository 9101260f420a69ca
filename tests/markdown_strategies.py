"""Set-up shared by the tests of the structure-aware strategies (``test_content_type``, ``test_header_window``):
documents decoded from text, generated Markdown for the invariant properties, and the sample docs."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import strategies as st

from chunkscope.document.loader import decode_document, load_docs

SAMPLE_DOCS = Path(__file__).resolve().parents[1] / "sample_docs"


def decoded_doc(text: str, path: str):
    """``text`` decoded as the document at ``path``, as the loader would (it must decode without problems)."""
    d, problems = decode_document(text.encode("utf-8"), path)
    assert d is not None and not problems
    return d


def _line(draw, words: st.SearchStrategy[str]) -> str:
    return " ".join(draw(st.lists(words, min_size=1, max_size=12)))


@st.composite
def markdown(draw, words: st.SearchStrategy[str], front_matter: str, fence_lines: list[str],
             max_fence_lines: int) -> str:
    """Headings 1-4, paragraphs, fences holding '#' comment lines, lists; sometimes front matter and CRLF.

    ``words`` make the lines, ``front_matter`` is the block sometimes put first, and a fence holds up to
    ``max_fence_lines`` of ``fence_lines``."""
    parts: list[str] = []
    if draw(st.booleans()):
        parts.append(front_matter)
    for _ in range(draw(st.integers(0, 14))):
        kind = draw(st.sampled_from(["h", "p", "p", "fence", "list", "blank"]))
        if kind == "h":
            parts.append("#" * draw(st.integers(1, 4)) + " " + _line(draw, words) + "\n")
        elif kind == "p":
            parts.append("\n".join(_line(draw, words) for _ in range(draw(st.integers(1, 4)))) + "\n")
        elif kind == "fence":
            body = [draw(st.sampled_from(fence_lines)) for _ in range(draw(st.integers(0, max_fence_lines)))]
            closed = draw(st.integers(0, 9)) > 0  # an unclosed fence runs to the end of the document
            parts.append("```" + draw(st.sampled_from(["", "python", "rust"])) + "\n" + "".join(b + "\n" for b in body)
                         + ("```\n" if closed else ""))
        elif kind == "list":
            parts.append("".join(f"- {_line(draw, words)}\n" for _ in range(draw(st.integers(1, 4)))))
        else:
            parts.append("\n")
        parts.append("\n")
    text = "".join(parts)
    if draw(st.integers(0, 9)) == 0:
        text = text.replace("\n", "\r\n")
    return text


def sample_documents():
    """The documents of ``sample_docs``; the test is skipped when it holds none."""
    if not SAMPLE_DOCS.is_dir() or not any(SAMPLE_DOCS.rglob("*.md*")):
        pytest.skip(f"no sample docs at {SAMPLE_DOCS}")
    return load_docs(SAMPLE_DOCS)
