"""The library API a Python user meets first: ``chunk_text`` on a string, ``Document.from_text``, the TypeError
of ``Strategy.chunk`` on a string, and a light, lazy ``import chunkscope``."""

from __future__ import annotations

import subprocess
import sys
import warnings
from pathlib import Path

import pytest

import chunkscope
from chunkscope import (
    Document,
    ParamError,
    UnknownStrategy,
    chunk_text,
    get_strategy,
    load_docs,
)
from chunkscope.chunking.registry import strategy_names
from chunkscope.document.loader import decode_document

REPO = Path(__file__).resolve().parents[1]
SAMPLE = REPO / "sample_docs"

TEXT = """---
title: Kinematics
sidebar_position: 2
---
# Forward kinematics

Forward kinematics maps joint angles to the pose of the end effector. Each joint adds a rotation and a
translation, and chaining them gives the hand's position.

## Denavit-Hartenberg parameters

Four numbers per link describe its geometry: link length, twist, offset and joint angle.

```python
def fk(theta):
    return [cos(theta), sin(theta)]
```
"""


def sample_files() -> list[Path]:
    return sorted(p for p in SAMPLE.rglob("*") if p.suffix in (".md", ".mdx"))


def test_chunk_text_on_a_plain_string_gives_exact_slices_in_order() -> None:
    chunks = chunk_text(TEXT, chunk_size=24, chunk_overlap=0)
    assert len(chunks) > 2
    assert all(c.text == TEXT[c.start:c.end] for c in chunks)
    assert [c.index for c in chunks] == list(range(len(chunks)))
    assert all(a.start < b.start for a, b in zip(chunks, chunks[1:]))
    assert all(c.path == "doc.md" for c in chunks)
    assert chunks[-1].heading_path == ["Forward kinematics", "Denavit-Hartenberg parameters"]
    assert chunks[-1].end_line == TEXT.count("\n")


@pytest.mark.parametrize("name", [n for n in strategy_names() if n != "custom"])
def test_chunk_text_of_a_file_equals_chunking_the_loaded_tree(name: str) -> None:
    """A string plus its path gives the chunks (offsets, lines, tokens, metadata) loading the tree gives."""
    tree = load_docs(SAMPLE)
    strategy = get_strategy(name)
    for doc in tree.documents[:3]:
        from_tree = strategy.chunk(doc)
        from_text = chunk_text((SAMPLE / doc.path).read_text(encoding="utf-8"), name, path=doc.path)
        assert [c.to_dict() for c in from_text] == [c.to_dict() for c in from_tree]
        assert from_text, doc.path


def test_chunk_text_takes_parameters_or_a_configured_strategy() -> None:
    small = chunk_text(TEXT, "recursive", chunk_size=24, chunk_overlap=0)
    default = chunk_text(TEXT)
    assert len(small) > len(default) and max(c.tokens for c in small) <= 24
    configured = get_strategy("recursive", chunk_size=24, chunk_overlap=0)
    assert [c.text for c in chunk_text(TEXT, configured)] == [c.text for c in small]
    with pytest.raises(TypeError, match="parameters"):
        chunk_text(TEXT, configured, chunk_size=10)


def test_chunk_text_errors_are_clear() -> None:
    with pytest.raises(UnknownStrategy, match="unknown strategy 'nope'; choose one of .*recursive"):
        chunk_text(TEXT, "nope")
    with pytest.raises(ParamError, match="unknown parameter 'size'"):
        chunk_text(TEXT, "recursive", size=10)
    with pytest.raises(TypeError, match="takes a str, got bytes"):
        chunk_text(TEXT.encode(), "recursive")  # type: ignore[arg-type]


def test_strategy_chunk_refuses_a_string_and_points_to_chunk_text() -> None:
    with pytest.raises(TypeError, match=r"RecursiveStrategy.chunk\(\) takes a chunkscope Document, got str; .*chunk_text"):
        get_strategy("recursive").chunk("plain string")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="got NoneType"):
        get_strategy("fixed").chunk(None)  # type: ignore[arg-type]


@pytest.mark.parametrize("file", sample_files(), ids=lambda p: p.name)
def test_from_text_reads_a_string_as_load_docs_reads_the_file(file: Path) -> None:
    rel = file.relative_to(SAMPLE).as_posix()
    loaded, problems = decode_document(file.read_bytes(), rel)
    assert loaded is not None and not problems
    doc = Document.from_text(file.read_text(encoding="utf-8"), path=rel)
    assert (doc.path, doc.text, doc.front_matter, doc.body_start) == (
        loaded.path, loaded.text, loaded.front_matter, loaded.body_start)
    assert doc.source is None


def test_from_text_front_matter_and_its_problems() -> None:
    doc = Document.from_text(TEXT, path="intro/kinematics.md")
    assert doc.front_matter == {"title": "Kinematics", "sidebar_position": 2}
    assert TEXT[doc.body_start:].startswith("# Forward kinematics")

    bad = "---\ntitle: [unclosed\n---\n# Body\n"
    with pytest.warns(UserWarning, match=r"bad\.md: front-matter: malformed front matter at line 2"):
        doc = Document.from_text(bad, path="bad.md")
    loaded, problems = decode_document(bad.encode(), "bad.md")
    assert loaded is not None and [p.code for p in problems] == ["front-matter"]
    assert (doc.front_matter, doc.body_start) == ({}, loaded.body_start) == ({}, bad.index("# Body"))

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert Document.from_text("no front matter").front_matter == {}
    with pytest.raises(TypeError, match="takes a str"):
        Document.from_text(b"# bytes")  # type: ignore[arg-type]


def test_from_text_keeps_the_string_exactly_so_offsets_index_it() -> None:
    text = "\ufeff# Title\r\n\r\nBody text.\r\n"
    doc = Document.from_text(text)
    assert doc.text == text
    chunks = get_strategy("fixed", chunk_size=3, chunk_overlap=0).chunk(doc)
    assert "".join(c.text for c in chunks) == text
    assert all(c.text == text[c.start:c.end] for c in chunks)


def test_public_names_resolve_and_import_stays_light() -> None:
    for name in ("chunk_text", "UnknownStrategy", "StrategyPluginError", "Document", "get_strategy"):
        assert name in chunkscope.__all__
    assert all(getattr(chunkscope, name) is not None for name in chunkscope.__all__)
    assert chunkscope.chunk_text is chunk_text and issubclass(chunkscope.UnknownStrategy, ValueError)
    with pytest.raises(AttributeError, match="no attribute 'chunk_txt'"):
        chunkscope.chunk_txt  # noqa: B018

    code = (
        "import sys\n"
        "import chunkscope\n"
        "light = sorted(m for m in sys.modules if m.startswith('chunkscope'))\n"
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in {'yaml', 'tiktoken', 'markdown_it', 'numpy',"
        " 'rich', 'textual', 'torch', 'sentence_transformers', 'langchain_core', 'llama_index'}"
        " or m == 'importlib.metadata')\n"
        "chunkscope.chunk_text('# T\\n\\nbody\\n')\n"
        "print(light, heavy, 'chunkscope.chunking.drivers' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "['chunkscope'] [] True"
