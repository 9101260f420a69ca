"""The LangChain splitter, the LlamaIndex node parser and ``chunk --format langchain``, through the real
frameworks: exact slices, the chunk's place in the metadata, no network, and a clear error without the extra."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from chunkscope import chunk_text, get_strategy, load_docs
from chunkscope.cli import main
from chunkscope.site.urls import chunk_url

REPO = Path(__file__).resolve().parents[1]
SAMPLE = REPO / "sample_docs"
SITE = "https://book.example.com/docs"
LOCATION = {"path", "index", "start", "end", "start_line", "end_line", "tokens", "heading_path", "url"}

try:
    import langchain_core.documents  # noqa: F401
    import langchain_text_splitters  # noqa: F401

    HAVE_LANGCHAIN = True
except ImportError:
    HAVE_LANGCHAIN = False
try:
    import llama_index.core  # noqa: F401

    HAVE_LLAMA = True
except ImportError:
    HAVE_LLAMA = False

needs_langchain = pytest.mark.skipif(
    not HAVE_LANGCHAIN, reason="the langchain extra is not installed (pip install 'chunkscope[langchain]')")
needs_llama = pytest.mark.skipif(
    not HAVE_LLAMA, reason="the llama-index extra is not installed (pip install 'chunkscope[llama-index]')")


def tree_docs():
    return load_docs(SAMPLE).documents


def expected_metadata(doc, chunk, site_url=SITE) -> dict:
    """What a chunk's metadata must say, from chunkscope's own pipeline on the loaded file."""
    return {**chunk.metadata, "path": chunk.path, "index": chunk.index, "start": chunk.start, "end": chunk.end,
            "start_line": chunk.start_line, "end_line": chunk.end_line, "tokens": chunk.tokens,
            "heading_path": chunk.heading_path, "url": chunk_url(site_url, doc, chunk)}


def run_python(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                          env={**os.environ, **env})


# Sockets refused and every attempt recorded, for the network checks below.
NO_NETWORK = """
import os, socket, sys
attempts = []
def refuse(*args, **kwargs):
    attempts.append(repr(args[:2]))
    raise OSError("network refused by the test")
socket.socket.connect = refuse
socket.create_connection = refuse
socket.getaddrinfo = refuse
env_before = dict(os.environ)
"""
REPORT = """
changed = sorted(k for k in set(env_before) | set(os.environ) if env_before.get(k) != os.environ.get(k))
print(attempts, changed, "nltk" in sys.modules)
"""


# --- the core side: nothing of the frameworks is imported until an adapter is ---------------------------------


def test_the_core_and_the_shared_metadata_import_no_framework() -> None:
    proc = run_python("import sys, chunkscope.integrations\n"
                      "print(sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'rich', 'torch', "
                      "'sentence_transformers')))\n"
                      "import chunkscope.cli.commands.chunk\n"
                      "print(sorted(m for m in sys.modules if m.split('.')[0] in ('langchain_core', "
                      "'langchain_text_splitters', 'llama_index')))")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["[]", "[]"]


@pytest.mark.parametrize("module, blocked, extra", [
    ("chunkscope.integrations.langchain", "langchain_text_splitters", "langchain"),
    ("chunkscope.integrations.langchain", "langchain_core", "langchain"),
    ("chunkscope.integrations.llama_index", "llama_index", "llama-index"),
])
def test_a_missing_extra_says_what_to_install(module: str, blocked: str, extra: str) -> None:
    # None in sys.modules makes every import of the package fail, as if it were not installed.
    proc = run_python(f"import sys\nsys.modules[{blocked!r}] = None\n"
                      f"try:\n    import {module}\nexcept ImportError as e:\n    print(type(e).__name__, '|', e)\n")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("ImportError | ")
    assert f"pip install 'chunkscope[{extra}]'" in proc.stdout and "\n" not in proc.stdout.strip()


# --- LangChain ---------------------------------------------------------------------------------------------------


@needs_langchain
def test_split_text_gives_the_strategys_chunks_as_exact_slices() -> None:
    from langchain_text_splitters import TextSplitter

    from chunkscope.integrations.langchain import ChunkscopeTextSplitter

    splitter = ChunkscopeTextSplitter("section-sentence", max_tokens=128)
    assert isinstance(splitter, TextSplitter)
    for doc in tree_docs():
        texts = splitter.split_text(doc.text)
        assert texts == [c.text for c in chunk_text(doc.text, "section-sentence", max_tokens=128)]
        assert texts and all(t in doc.text for t in texts)


@needs_langchain
def test_split_documents_carries_the_chunks_place_and_the_inputs_metadata() -> None:
    from langchain_core.documents import Document as LCDocument

    from chunkscope.integrations.langchain import ChunkscopeTextSplitter

    docs = tree_docs()
    # As a LangChain loader reads them: absolute paths in "source", made relative again by docs_root.
    inputs = [LCDocument(page_content=d.text, metadata={"source": str(SAMPLE / d.path), "lang": "en"})
              for d in docs]
    splitter = ChunkscopeTextSplitter("recursive", chunk_size=200, chunk_overlap=20, docs_root=str(SAMPLE),
                                      site_url=SITE)
    out = splitter.split_documents(inputs)
    strategy = get_strategy("recursive", chunk_size=200, chunk_overlap=20)
    expected = [(d, c) for d in docs for c in strategy.chunk(d)]
    assert len(out) == len(expected) > len(docs)
    for lc, (doc, chunk) in zip(out, expected):
        assert lc.page_content == doc.text[lc.metadata["start"]:lc.metadata["end"]] == chunk.text
        assert lc.metadata == {"source": str(SAMPLE / doc.path), "lang": "en", **expected_metadata(doc, chunk)}
    urls = {lc.metadata["url"] for lc in out}
    assert f"{SITE}/module-1-foundations/coordinate-frames" in {u.split("#")[0] for u in urls}
    # Each chunk got its own copy of the input's metadata.
    out[0].metadata["lang"] = "changed"
    assert out[1].metadata["lang"] == "en" and inputs[0].metadata["lang"] == "en"
    # transform_documents, what LangChain's pipelines call, is the same split.
    assert [d.page_content for d in splitter.transform_documents(inputs)] == [d.page_content for d in out]


@needs_langchain
def test_create_documents_without_metadata_and_with_repeated_passages() -> None:
    from chunkscope.integrations.langchain import ChunkscopeTextSplitter

    text = "# Loop\n\n" + "Repeat this sentence exactly. " * 40
    splitter = ChunkscopeTextSplitter("fixed", chunk_size=20, chunk_overlap=5, path="guide/loops.md")
    out = splitter.create_documents([text])
    assert len(out) > 5 and len({d.page_content for d in out[1:-1]}) < len(out) - 2  # identical chunks repeat
    starts = [d.metadata["start"] for d in out]
    assert starts == sorted(set(starts))
    assert all(d.page_content == text[d.metadata["start"]:d.metadata["end"]] for d in out)
    assert all(d.metadata["source"] == d.metadata["path"] == "guide/loops.md" for d in out)
    # The page's H1 has no id in a Docusaurus build: the url is the page's.
    assert LOCATION <= set(out[0].metadata) and out[0].metadata["url"] == "/guide/loops"


@needs_langchain
def test_the_splitter_takes_a_configured_strategy_and_refuses_extra_parameters() -> None:
    from chunkscope.integrations.langchain import ChunkscopeTextSplitter

    strategy = get_strategy("section")
    assert ChunkscopeTextSplitter(strategy).strategy is strategy
    with pytest.raises(TypeError, match="parameters"):
        ChunkscopeTextSplitter(strategy, overlap_tokens=10)
    with pytest.raises(ValueError, match="unknown parameter"):
        ChunkscopeTextSplitter("recursive", chunk_sise=10)


@needs_langchain
def test_chunk_format_langchain_writes_what_document_model_dump_writes(capsys) -> None:
    from langchain_core.documents import Document as LCDocument

    from chunkscope.integrations.langchain import ChunkscopeTextSplitter

    assert main(["chunk", str(SAMPLE), "-s", "header-window", "--format", "langchain"]) == 0
    lines = capsys.readouterr().out.splitlines()
    records = [json.loads(line) for line in lines]
    docs = tree_docs()
    splitter = ChunkscopeTextSplitter("header-window")
    lib = splitter.split_documents([LCDocument(page_content=d.text, metadata={"source": d.path}) for d in docs])
    assert len(records) == len(lib) > 0
    for record, want in zip(records, lib):
        lc = LCDocument.model_validate(record)
        assert record == lc.model_dump() == want.model_dump()  # the exact serialised form, both ways
        text = (SAMPLE / record["metadata"]["path"]).read_text(encoding="utf-8")
        assert lc.page_content == text[lc.metadata["start"]:lc.metadata["end"]]


@needs_langchain
def test_langchain_use_reaches_no_network() -> None:
    code = NO_NETWORK + (
        "from chunkscope.integrations.langchain import ChunkscopeTextSplitter\n"
        "from langchain_core.documents import Document\n"
        f"docs = [Document(page_content=open(p, encoding='utf-8').read(), metadata={{'source': p}})"
        f" for p in {[str(p) for p in sorted(SAMPLE.rglob('*.md'))]!r}]\n"
        "assert ChunkscopeTextSplitter('section-sentence').split_documents(docs)\n"
    ) + REPORT
    proc = run_python(code)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[] [] False"


# --- LlamaIndex --------------------------------------------------------------------------------------------------


def pairs_with_a_gap(text: str) -> list[tuple[int, int]]:
    """A custom chunker (importable as tests.test_integrations:pairs_with_a_gap): the first character, then the
    last occurrence of "ab" — which also occurs in between, where str.find would look first."""
    return [(0, 1), (text.rindex("ab"), text.rindex("ab") + 2)]


@needs_llama
def test_node_parser_gives_exact_slices_with_the_chunks_place() -> None:
    from llama_index.core import Document as LIDocument
    from llama_index.core.node_parser import NodeParser
    from llama_index.core.schema import MetadataMode, NodeRelationship

    from chunkscope.integrations.llama_index import ChunkscopeNodeParser

    docs = tree_docs()
    inputs = [LIDocument(text=d.text, metadata={"file_path": str(SAMPLE / d.path), "lang": "en"}) for d in docs]
    parser = ChunkscopeNodeParser("section", docs_root=str(SAMPLE), site_url=SITE)
    assert isinstance(parser, NodeParser)
    nodes = parser.get_nodes_from_documents(inputs)
    strategy = get_strategy("section")
    expected = [(i, d, c) for i, d in enumerate(docs) for c in strategy.chunk(d)]
    assert len(nodes) == len(expected) > len(docs)
    for node, (i, doc, chunk) in zip(nodes, expected):
        assert node.text == doc.text[node.start_char_idx:node.end_char_idx] == chunk.text
        assert node.metadata == {"file_path": str(SAMPLE / doc.path), "lang": "en", "source": doc.path,
                                 **expected_metadata(doc, chunk)}
        assert node.ref_doc_id == inputs[i].id_
        # Embedded as chunkscope embeds it: the text and the user's own metadata, none of the added keys.
        embedded = node.get_content(metadata_mode=MetadataMode.EMBED)
        assert embedded.endswith(chunk.text) and "lang: en" in embedded and "start_line" not in embedded
    assert nodes[1].relationships[NodeRelationship.PREVIOUS].node_id == nodes[0].node_id


@needs_llama
def test_node_offsets_stay_exact_where_a_search_would_find_an_earlier_copy() -> None:
    from llama_index.core import Document as LIDocument

    from chunkscope.integrations.llama_index import ChunkscopeNodeParser

    text = "ab ab ab"
    assert text.find("ab", 1) == 3 != text.rindex("ab")  # the trap: an earlier copy after the first chunk
    parser = ChunkscopeNodeParser("custom", callable="tests.test_integrations:pairs_with_a_gap")
    nodes = parser.get_nodes_from_documents([LIDocument(text=text)])
    assert [(n.start_char_idx, n.end_char_idx) for n in nodes] == [(0, 1), (6, 8)]
    assert [(n.metadata["start"], n.metadata["end"]) for n in nodes] == [(0, 1), (6, 8)]


@needs_llama
def test_node_parser_in_an_ingestion_pipeline_and_its_cache_key() -> None:
    from llama_index.core import Document as LIDocument
    from llama_index.core.ingestion import IngestionPipeline

    from chunkscope.integrations.llama_index import ChunkscopeNodeParser

    text = (SAMPLE / "intro.md").read_text(encoding="utf-8")
    small = ChunkscopeNodeParser("recursive", chunk_size=100, chunk_overlap=10, path="intro.md")
    nodes = IngestionPipeline(transformations=[small]).run(documents=[LIDocument(text=text)])
    assert [n.text for n in nodes] == [c.text for c in chunk_text(text, chunk_size=100, chunk_overlap=10,
                                                                  path="intro.md")]
    # The strategy and its parameters are fields, so a pipeline's cache tells the two parsers apart.
    large = ChunkscopeNodeParser("recursive", chunk_size=300, path="intro.md")
    assert small.to_dict()["params"]["chunk_size"] == 100 and small.to_dict() != large.to_dict()
    assert ChunkscopeNodeParser(get_strategy("fixed")).strategy == "fixed"
    with pytest.raises(TypeError, match="parameters"):
        ChunkscopeNodeParser(get_strategy("fixed"), chunk_size=10)


@needs_llama
def test_llama_index_import_and_use_reach_no_network_and_set_no_environment() -> None:
    code = NO_NETWORK + (
        "from chunkscope.integrations.llama_index import ChunkscopeNodeParser\n"
        "from llama_index.core import Document\n"
        "from llama_index.core.ingestion import IngestionPipeline\n"
        f"docs = [Document(text=open(p, encoding='utf-8').read(), metadata={{'file_path': p}})"
        f" for p in {[str(p) for p in sorted(SAMPLE.rglob('*.md'))]!r}]\n"
        "assert IngestionPipeline(transformations=[ChunkscopeNodeParser('content-type')]).run(documents=docs)\n"
    ) + REPORT
    env = {k: v for k, v in os.environ.items() if k not in ("TIKTOKEN_CACHE_DIR", "NLTK_DATA")}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[] [] False"
