"""One payload schema, on the Rust book: for every chunk of every strategy, what ``query --json`` prints is what
``chunk --format jsonl`` prints: the strategy's metadata and every field the two share.

Both commands run for real, in this process. ``query -k N`` with N at least the number of chunks returns every
chunk of the collection, so each one is read back from the store through the path a user's query takes. The
embedder is the real `Embedder` with a bag-of-words ``encode`` (the payload is the point here, not meaning): the
whole book is indexed in seconds per strategy, and ``semantic``, which embeds as it cuts, cuts the same way in both
commands. (`test_retrieval` checks the same on sample_docs, through the store alone.)
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from chunkscope.chunking.params import ParamError
from chunkscope.chunking.registry import get_strategy, strategy_names

from .tuning_helpers import BagOfWords

pytestmark = pytest.mark.corpus

#: What only a search result has: its place in the answer.
SEARCH_ONLY = {"rank", "score", "kept"}


@pytest.mark.parametrize("name", strategy_names())
def test_query_json_prints_each_chunks_metadata_as_chunk_jsonl_does(name: str, corpus: Path, tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    import chunkscope.embedding.embedder as embedder_module
    from chunkscope.cli import main

    try:
        get_strategy(name)
    except ParamError as exc:
        pytest.skip(f"{name} cannot run without arguments: {exc}")
    # Every embedder of both commands (the index's, and semantic's sentence vectors) is the bag of words.
    monkeypatch.setattr(embedder_module, "embedder_for", lambda *args, **kw: BagOfWords(tmp_path / "emb"))

    assert main(["chunk", str(corpus), "-s", name, "--format", "jsonl"]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.strip()]
    chunks = {(c["path"], c["start"], c["end"]): c for c in lines}
    assert len(chunks) == len(lines) > 100

    assert main(["query", str(corpus), "how does ownership work", "-s", name, "-k", str(len(lines) + 10),
                 "--json"]) == 0
    hits = json.loads(capsys.readouterr().out)
    assert sorted((h["path"], h["start"], h["end"]) for h in hits) == sorted(chunks)  # every chunk, once

    shared = (set(hits[0]) & set(lines[0])) - SEARCH_ONLY
    assert {"metadata", "text", "heading_path", "tokens", "embed_tokens", "start_line"} <= shared, shared
    for h in hits:
        c = chunks[(h["path"], h["start"], h["end"])]
        where = f"{name}: {h['path']}:{h['start_line']}"
        assert h["metadata"] == c["metadata"], where
        assert {k: h[k] for k in shared} == {k: c[k] for k in shared}, where
        assert h["chunk_index"] == c["index"], where
