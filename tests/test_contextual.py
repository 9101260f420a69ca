"""``embed_prefix = "llm"`` (contextual retrieval) against a real loopback chat server: ``chunkscope contexts``
prices and writes each chunk's context once; every other command reads the cache and never asks the model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from .chat_server import ChatServer, situate
from chunkscope.chunking.params import ParamError
from chunkscope.chunking.registry import get_strategy
from chunkscope.cli import main
from chunkscope.config.reader import load_config, resolve_strategy
from chunkscope.document.loader import Document
from chunkscope.llm.chat import ChatSpec
from chunkscope.llm.contextual import CachedContexts, ContextCache, context_key, model_identity
from chunkscope.tokens import get_tokenizer

PAGES = {
    "ownership.md": "# Ownership\n\nOwnership is a set of rules that govern memory.\n\n"
                    "## Borrowing\n\nReferences let you use a value without owning it.\n",
    "traits.md": "# Traits\n\nA trait defines shared behaviour.\n\n## Bounds\n\nTrait bounds restrict generic types.\n",
}


@pytest.fixture(autouse=True)
def _own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CHUNKSCOPE_CACHE", str(tmp_path / "cache"))  # a test's contexts are its own


def make_docs(root: Path, url: str | None) -> Path:
    root.mkdir(exist_ok=True)
    for name, text in PAGES.items():
        (root / name).write_text(text, encoding="utf-8")
    llm = f'[llm]\nmodel = "openai:fake-chat"\nurl = "{url}"\n' if url else ""
    (root / "chunkscope.toml").write_text(
        f'strategy = "section"\n[strategies.section]\nembed_prefix = "llm"\n{llm}', encoding="utf-8")
    return root


def chunk_rows(docs: Path, capsys: pytest.CaptureFixture[str]) -> tuple[list[dict[str, Any]], str]:
    assert main(["chunk", str(docs), "--format", "jsonl", "--no-lint"]) == 0
    out, err = capsys.readouterr()
    return [json.loads(line) for line in out.splitlines()], err


def test_contexts_are_priced_written_once_and_shown_in_embed_text(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with ChatServer(situate) as srv:
        docs = make_docs(tmp_path / "docs", srv.base_url)
        before, err = chunk_rows(docs, capsys)
        assert srv.requests == []  # chunking never asks the model
        assert all(r["embed_text"] is None for r in before)
        assert f"{len(before)} of {len(before)} chunks have no LLM context" in err
        assert f"chunkscope contexts {docs}" in err

        assert main(["contexts", str(docs), "--yes"]) == 0
        lines = capsys.readouterr().err.splitlines()
        assert "tokens in" in lines[0] and "fake-chat" in lines[0]  # the cost comes before anything is sent
        assert len(srv.requests) == len(before)
        assert srv.requests[0]["body"]["model"] == "fake-chat"
        assert "<document>\n# Ownership" in srv.requests[0]["body"]["messages"][-1]["content"]
        # The estimate counts exactly what was sent (system and user messages, cl100k).
        count = get_tokenizer("cl100k_base").count
        sent = sum(count(m["content"]) for r in srv.requests for m in r["body"]["messages"])
        assert f"about {sent:,} tokens in and at most {100 * len(before):,} out" in lines[0]

        after, err = chunk_rows(docs, capsys)
        assert "no LLM context" not in err
        assert main(["contexts", str(docs), "--yes"]) == 0  # everything cached: nothing is sent again
        assert "have a context" in capsys.readouterr().err
        assert len(srv.requests) == len(before)
    sources = {name: text for name, text in PAGES.items()}
    for r in after:
        source = sources[r["path"]]
        assert r["text"] == source[r["start"]:r["end"]]  # the chunk stays an exact slice
        title = source.splitlines()[0].removeprefix("# ")
        assert r["embed_text"].startswith(f"From the page {title}: about ")
        assert r["embed_text"].endswith("\n\n" + r["text"])
        assert r["embed_tokens"] > r["tokens"]  # the context is counted in what the model reads


def test_embed_offset_points_at_the_text_after_the_context(tmp_path: Path) -> None:
    cache = ContextCache(tmp_path / "c.sqlite3")
    spec = ChatSpec("fake-chat", "http://127.0.0.1:1/v1")
    doc = Document.from_text(PAGES["ownership.md"], "ownership.md")
    strategy = get_strategy("section", embed_prefix="llm")
    strategy.use_contexts(CachedContexts(spec, cache))
    plain = strategy.chunk(doc)
    cache.put(context_key(model_identity(spec), doc.text, plain[0].text), "About ownership.")
    chunks = strategy.chunk(doc)
    c = chunks[0]
    assert c.embed_text == "About ownership.\n\n" + c.text
    assert c.embed_offset == len("About ownership.\n\n")
    assert c.embed_text[c.embed_offset:] == doc.text[c.start:c.end]
    assert all(o.embed_text_override is None for o in chunks[1:])  # no context: embedded as it is


def test_the_key_changes_with_the_page_the_chunk_and_the_model() -> None:
    spec = ChatSpec("a", "http://x/v1")
    key = context_key(model_identity(spec), "page", "chunk")
    assert key == context_key(model_identity(spec), "page", "chunk")
    assert len({key, context_key(model_identity(spec), "page2", "chunk"),
                context_key(model_identity(spec), "page", "chunk2"),
                context_key(model_identity(ChatSpec("b", "http://x/v1")), "page", "chunk"),
                context_key(model_identity(spec), "pagec", "hunk")}) == 5


def test_an_edited_page_asks_again_only_for_its_chunks(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with ChatServer(situate) as srv:
        docs = make_docs(tmp_path / "docs", srv.base_url)
        assert main(["contexts", str(docs), "--yes"]) == 0
        first = len(srv.requests)
        (docs / "traits.md").write_text(PAGES["traits.md"].replace("shared", "common"), encoding="utf-8")
        capsys.readouterr()
        assert main(["contexts", str(docs), "--yes"]) == 0
        err = capsys.readouterr().err
    # Every chunk of the edited page has a new key (the page is part of it); the other page's are cached.
    per_page = first // 2
    assert len(srv.requests) == first + per_page
    assert err.startswith(f"{per_page} of {first} chunks have no context")


def test_off_a_terminal_nothing_is_sent_without_yes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with ChatServer(situate) as srv:
        docs = make_docs(tmp_path / "docs", srv.base_url)
        rc = main(["contexts", str(docs)])
    err = capsys.readouterr().err
    assert rc == 2
    assert srv.requests == []
    assert "tokens in" in err.splitlines()[0] and "--yes" in err


def test_a_failing_endpoint_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with ChatServer(situate) as srv:
        srv.fail_next = [400] * 10
        docs = make_docs(tmp_path / "docs", srv.base_url)
        rc = main(["contexts", str(docs), "--yes"])
    err = capsys.readouterr().err
    assert rc == 2
    failed = [line for line in err.splitlines() if line.startswith("failed:")]
    assert len(failed) == 1 and "HTTP 400" in failed[0] and "fake-chat" in failed[0]
    assert len(srv.requests) == 1  # a dead endpoint is not asked once per chunk
    assert "Traceback" not in err


def test_without_a_chat_model_it_fails_before_chunking(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    docs = make_docs(tmp_path / "docs", None)
    with pytest.raises(ParamError, match=r"\[llm\] model"):
        resolve_strategy(load_config(docs))
    assert main(["chunk", str(docs)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "[llm] model" in err[0] and "chunk-error" not in err[0]


def test_a_strategy_without_a_provider_says_what_to_set() -> None:
    doc = Document.from_text(PAGES["ownership.md"], "ownership.md")
    with pytest.raises(ParamError, match=r"\[llm\] model"):
        get_strategy("section", embed_prefix="llm").chunk(doc)


@pytest.mark.model
def test_index_embeds_the_contexts_once_they_are_written(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with ChatServer(situate) as srv:
        docs = make_docs(tmp_path / "docs", srv.base_url)
        assert main(["index", str(docs), "--json"]) == 0
        out, err = capsys.readouterr()
        total = json.loads(out)["embedded"]
        assert f"{total} of {total} chunks have no LLM context" in err
        assert main(["contexts", str(docs), "--yes"]) == 0
        capsys.readouterr()
        # The index made before the contexts is stale: every chunk's embed text changed, so each is embedded again.
        assert main(["index", str(docs), "--json"]) == 0
        out, err = capsys.readouterr()
        report = json.loads(out)
        assert report["embedded"] == total and report["unchanged"] == 0
        assert "no LLM context" not in err
        assert main(["index", str(docs), "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["embedded"] == 0
        assert len(srv.requests) == total  # indexing never asked the model


@pytest.mark.anyio
async def test_the_app_says_how_many_chunks_have_no_context(tmp_path: Path) -> None:
    from .pilot import make_app, wait_for

    with ChatServer(situate) as srv:
        app = make_app(make_docs(tmp_path / "docs", srv.base_url))
        async with app.run_test() as pilot:
            notes = lambda: [n for n in app._notifications if n.title == "contexts missing"]  # noqa: E731, SLF001
            await wait_for(pilot, notes, what="the missing-contexts notice")
            assert notes()[0].message.startswith("4 of 4 chunks have no LLM context")
        assert srv.requests == []  # the app never asks the model
