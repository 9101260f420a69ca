"""The ``openai:`` embedder against a real HTTP server speaking the OpenAI embeddings protocol on 127.0.0.1.

The server (tests/openai_server.py) embeds with the local all-MiniLM-L6-v2, so its vectors can be checked against
the offline embedder's; it refuses bad keys and unknown models as OpenAI does and answers 429/500 when told to.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from chunkscope.embedding.embedder import EmbedError, Embedder
from chunkscope.embedding.registry import parse_embedder
from chunkscope.embedding.spec import EmbedderSpecError
from chunkscope.embedding.backends.openai import endpoint_url

from .openai_server import GOOD_KEY, MODEL, EmbeddingsServer

SRC = str(Path(__file__).resolve().parents[1] / "src")


@pytest.fixture(scope="module")
def local(tmp_path_factory):
    """The offline model that both serves the endpoint's vectors and checks them."""
    e = Embedder(cache_dir=tmp_path_factory.mktemp("local-emb"), use_cache=False)
    yield e
    e.close()


@pytest.fixture()
def server(local):
    with EmbeddingsServer(local.encode) as srv:
        yield srv


def endpoint_embedder(srv: EmbeddingsServer, tmp_path: Path, **kw) -> Embedder:
    return Embedder(f"openai:{MODEL}", url=srv.base_url, cache_dir=tmp_path / "emb", **kw)


# --- the spec: no server needed -----------------------------------------------------------------------------


def test_spec_kinds_identities_limits_and_thresholds():
    default = parse_embedder(None)
    assert (default.kind, default.identity, default.tokenizer_name) == ("minilm", "all-MiniLM-L6-v2", "all-MiniLM-L6-v2")
    small = parse_embedder("openai:text-embedding-3-small")
    assert small.url == "https://api.openai.com/v1" and small.max_tokens == 8191 and small.known_dim == 1536
    assert small.default_threshold == 0.7 and small.tokenizer_name == "cl100k_base"
    ollama = parse_embedder("openai:nomic-embed-text", "http://localhost:11434/v1/")
    vllm = parse_embedder("openai:nomic-embed-text", "http://gpu-box:8000/v1")
    # The same model name on two servers: two identities, so caches and collections never mix their vectors.
    assert ollama.identity != vllm.identity and "localhost:11434" in ollama.identity
    assert ollama.default_threshold is None  # nobody measured one for it: no threshold unless the user sets one
    assert parse_embedder("openai:x", "http://h/v1", max_tokens=512).max_tokens == 512
    with pytest.raises(EmbedderSpecError, match="unknown embedder kind 'cohere'"):
        parse_embedder("cohere:embed-v3")
    with pytest.raises(EmbedderSpecError, match="is for openai:MODEL endpoints"):
        parse_embedder("all-MiniLM-L6-v2", "http://localhost:1/v1")
    with pytest.raises(EmbedderSpecError, match="not an http"):
        parse_embedder("openai:m", "localhost:11434")


def test_endpoint_url_keeps_azure_query():
    assert endpoint_url("http://h:1/v1") == "http://h:1/v1/embeddings"
    assert endpoint_url("http://h:1/v1/embeddings") == "http://h:1/v1/embeddings"
    azure = "https://r.openai.azure.com/openai/deployments/emb?api-version=2024-02-01"
    assert endpoint_url(azure) == "https://r.openai.azure.com/openai/deployments/emb/embeddings?api-version=2024-02-01"


# --- against the server -------------------------------------------------------------------------------------


@pytest.mark.model
def test_vectors_match_the_local_model_in_order_across_batches(server, local, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", GOOD_KEY)
    e = endpoint_embedder(server, tmp_path, batch_size=2)
    e.encoder.batch_size = 2  # three requests for five texts
    texts = ["Lidar measures distance.", "Ownership moves values.", "A borrow checker.", "Traits share behaviour.",
             "Closures capture their environment."]
    got = e.embed(texts)
    want = local.encode(texts)
    assert got.vectors.shape == (5, 384) and e.dim == 384
    assert np.min(np.sum(got.vectors * want, axis=1)) > 0.99999  # same order although replies come reversed
    assert len(server.requests) == 3 and all(r["auth"] == f"Bearer {GOOD_KEY}" for r in server.requests)
    # The cache is keyed by the endpoint's identity: asking again costs no request.
    again = e.embed(texts)
    assert again.stats.hits == 5 and len(server.requests) == 3
    assert e.model_id.startswith("openai-local-minilm-127.0.0.1")
    e.close()


@pytest.mark.model
def test_rate_limits_and_server_errors_are_retried(server, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", GOOD_KEY)
    e = endpoint_embedder(server, tmp_path, use_cache=False)
    e.encoder.backoff = 0.01
    server.fail_next = [429, 500, 503]
    v = e.encode(["one question"])
    assert v.shape == (1, 384)
    assert [r["status"] for r in server.requests] == [429, 500, 503, 200] and e.encoder.retries == 3
    server.fail_next = [500] * 10
    e.encoder.max_retries = 2
    with pytest.raises(EmbedError, match=r"still failing after 2 retries \(HTTP 500\)"):
        e.encode(["another"])
    e.close()


def test_bad_key_missing_model_and_refused_connection_fail_in_one_line(local, tmp_path, monkeypatch):
    # No model needed: the server refuses before it embeds.
    with EmbeddingsServer(lambda texts: np.zeros((len(texts), 4), np.float32)) as srv:
        monkeypatch.setenv("OPENAI_API_KEY", "sk-wrong-key-abcdef")
        e = endpoint_embedder(srv, tmp_path, use_cache=False)
        with pytest.raises(EmbedError) as bad:
            e.encode(["x"])
        msg = str(bad.value)
        assert "refused the API key (HTTP 401)" in msg and "OPENAI_API_KEY" in msg
        assert "sk-wrong" not in msg and "abcdef" not in msg and "\n" not in msg
        monkeypatch.setenv("OPENAI_API_KEY", GOOD_KEY)
        wrong = Embedder("openai:no-such-model", url=srv.base_url, use_cache=False)
        with pytest.raises(EmbedError, match="not found \\(HTTP 404\\): no model 'no-such-model'"):
            wrong.encode(["x"])
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    gone = Embedder(f"openai:{MODEL}", url=f"http://127.0.0.1:{port}/v1", use_cache=False)
    with pytest.raises(EmbedError, match="cannot connect .*is the server running"):
        gone.encode(["x"])


def test_openai_without_a_key_says_which_variable(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    e = Embedder("openai:text-embedding-3-small", use_cache=False)
    with pytest.raises(EmbedError, match="no API key: set OPENAI_API_KEY"):
        e.encode(["x"])  # refused before any request leaves the machine


def test_texts_over_the_limit_are_cut_before_sending(tmp_path, monkeypatch):
    seen: list[str] = []

    def encode(texts):
        seen.extend(texts)
        return np.ones((len(texts), 4), np.float32)

    with EmbeddingsServer(encode) as srv:
        monkeypatch.setenv("OPENAI_API_KEY", GOOD_KEY)
        e = Embedder(parse_embedder(f"openai:{MODEL}", srv.base_url, max_tokens=50), use_cache=False)
        long = "word " * 400
        e.encode([long, "short"])
        assert len(seen[0]) < len(long) and seen[0] == long[: len(seen[0])] and seen[1] == "short"
        assert e.count_tokens([long])[0] > 50 and e.max_seq_length == 50
        assert e.count_tokens([seen[0]])[0] <= 50  # what was sent is what the model reads


def test_an_endpoint_embedders_tokenizer_answers_what_eval_asks_of_it(monkeypatch):
    """eval judges a miss with the embedder's tokenizer (where reading stops, the limit, passage sizes in its
    tokens): an endpoint's must answer as a local model's does, in its tiktoken encoding (it raised
    AttributeError, so eval and the app's miss explanations failed with `openai:` embedders)."""
    from chunkscope.document.loader import Document
    from chunkscope.evaluation.regions import Region
    from chunkscope.evaluation.verdicts import _truncated_detail, _unread
    from chunkscope.tokens import tiktoken_encoding

    monkeypatch.setenv("OPENAI_API_KEY", GOOD_KEY)
    e = Embedder(parse_embedder(f"openai:{MODEL}", "http://127.0.0.1:9/v1", max_tokens=8), use_cache=False)
    tok, enc = e.tokenizer, tiktoken_encoding("cl100k_base")
    text = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigma"
    cut = tok.truncation_offset(text)
    assert len(enc.encode_ordinary(text[:cut])) == 8 and tok.max_seq_length == 8
    doc = Document.from_text(text, path="greek.md")
    assert tok.counter(doc).count(0, len(text)) == len(enc.encode_ordinary(text))
    assert e.count_tokens([text]) == [len(enc.encode_ordinary(text))]
    from chunkscope.chunking.registry import get_strategy

    (chunk,) = get_strategy("fixed", chunk_size=64, chunk_overlap=0).chunk(doc)
    late = text.index("sigma")
    assert _unread([chunk], doc, Region("greek.md", late, len(text)), tok)  # past the 8 tokens the model reads
    assert not _unread([chunk], doc, Region("greek.md", 0, 5), tok)
    assert "reads 8 " in _truncated_detail(tok, chunk)


# --- end to end through the command line ----------------------------------------------------------------------


def _cli(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "chunkscope", *args], capture_output=True, text=True, env=env,
                          timeout=600)


@pytest.mark.model
def test_index_query_eval_end_to_end_and_clear_failures(server, topic_docs, tmp_path):
    env = {**os.environ, "PYTHONPATH": SRC, "CHUNKSCOPE_CACHE": str(tmp_path / "cache"), "OPENAI_API_KEY": GOOD_KEY}
    flags = ["--embedder", f"openai:{MODEL}", "--embed-url", server.base_url]
    idx = _cli(["index", str(topic_docs), *flags, "--json"], env)
    assert idx.returncode == 0, idx.stderr
    report = json.loads(idx.stdout)
    assert report["embedded"] == 3 and "openai-local-minilm" in report["collection"]
    q = _cli(["query", str(topic_docs), "how do I tack a sailboat", *flags, "--json"], env)
    assert q.returncode == 0, q.stderr
    hits = json.loads(q.stdout)
    assert hits[0]["path"] == "sailing.md"
    queries = tmp_path / "q.jsonl"
    queries.write_text(json.dumps({"query": "when is the tax return due", "expect": {"path": "taxes.md"}}) + "\n")
    ev = _cli(["eval", str(topic_docs), str(queries), *flags, "--json"], env)
    assert ev.returncode == 0, ev.stderr
    assert json.loads(ev.stdout)["results"][0]["metrics"]["hit@1"] == 1.0
    # A bad key, a missing model, a refused connection: exit 2, one line, no traceback, no key.
    bad = _cli(["query", str(topic_docs), "x", *flags], {**env, "OPENAI_API_KEY": "sk-nope-123456"})
    assert bad.returncode == 2 and "refused the API key" in bad.stderr and "Traceback" not in bad.stderr
    assert "sk-nope" not in bad.stderr and len(bad.stderr.strip().splitlines()) == 1
    missing = _cli(["query", str(topic_docs), "x", "--embedder", "openai:nope", "--embed-url", server.base_url], env)
    assert missing.returncode == 2 and "no model 'nope'" in missing.stderr
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    refused = _cli(["index", str(topic_docs), "--embedder", f"openai:{MODEL}", "--embed-url",
                    f"http://127.0.0.1:{port}/v1"], env)
    assert refused.returncode == 2 and "cannot connect" in refused.stderr and "Traceback" not in refused.stderr


# --- replies that must never be kept (issue 21, items 1 and 6; the endpoint timeout of item 8) ------------------


def _fake_vectors(texts, dim: int = 8) -> np.ndarray:
    """Distinct healthy vectors, one per text, without a model."""
    rows = [np.random.default_rng(sum(map(ord, t))).standard_normal(dim) for t in texts]
    return np.asarray(rows, dtype=np.float32)


class Broken:
    """An endpoint's encode that serves ``mode`` ("nan", "zero", "ragged") until told ``healthy``."""

    def __init__(self, mode: str) -> None:
        self.mode = mode

    def __call__(self, texts):
        vecs = _fake_vectors(texts)
        if self.mode == "nan":
            vecs[-1, 3] = np.nan
        elif self.mode == "zero":
            vecs[0] = 0.0
        elif self.mode == "ragged":
            return [v if i else v[:-1] for i, v in enumerate(vecs)]
        return vecs


@pytest.mark.parametrize("mode, problem", [("nan", "NaN or infinite"), ("zero", "all zeros"),
                                           ("ragged", "different lengths in one reply")])
def test_a_bad_reply_is_one_line_nothing_is_cached_and_the_next_run_asks_again(tmp_path, monkeypatch, mode, problem):
    monkeypatch.setenv("OPENAI_API_KEY", GOOD_KEY)
    texts = ["first text", "second text", "third text"]
    broken = Broken(mode)
    with EmbeddingsServer(broken) as srv:
        first = endpoint_embedder(srv, tmp_path)
        with pytest.raises(EmbedError) as bad:
            first.embed(texts)
        msg = str(bad.value)
        assert problem in msg and srv.base_url in msg and "\n" not in msg
        assert first.cache is not None and first.cache.count() == 0  # nothing of the reply was kept
        first.close()
        broken.mode = "healthy"  # the server is fixed: the next run needs no manual step
        second = endpoint_embedder(srv, tmp_path)
        got = second.embed(texts)
        assert got.stats.misses == 3 and np.isfinite(got.vectors).all() and len(srv.requests) == 2
        assert second.embed(texts).stats.hits == 3
        second.close()


def test_a_bad_cached_vector_is_dropped_and_recomputed(tmp_path, monkeypatch):
    from chunkscope.embedding.embedder import text_sha

    monkeypatch.setenv("OPENAI_API_KEY", GOOD_KEY)
    with EmbeddingsServer(_fake_vectors) as srv:
        e = endpoint_embedder(srv, tmp_path)
        assert e.cache is not None
        poisoned = np.full(8, np.nan, dtype=np.float32)  # what an older chunkscope cached from a broken server
        e.cache.put_many(e.model_id, [(text_sha("a text"), poisoned, 3), (text_sha("zeros"), np.zeros(8, np.float32), 2)])
        got = e.embed(["a text", "zeros"])
        assert got.stats.hits == 0 and got.stats.misses == 2 and len(srv.requests) == 1
        assert np.isfinite(got.vectors).all() and np.all(np.linalg.norm(got.vectors, axis=1) > 0.99)
        assert e.embed(["a text", "zeros"]).stats.hits == 2  # the bad entries were replaced
        e.close()


def test_the_endpoint_timeout_is_configured_and_named_when_it_passes(tmp_path):
    from chunkscope.config.reader import ConfigError, parse_config
    from chunkscope.embedding.embedder import embedder_for

    with EmbeddingsServer(_fake_vectors, key=None) as srv:
        srv.delay = 1.0
        cfg = parse_config({"embedder": {"model": f"openai:{MODEL}", "url": srv.base_url, "timeout": 0.2}})
        e = embedder_for(cfg)
        e.encoder.max_retries, e.encoder.backoff = 1, 0.01
        with pytest.raises(EmbedError) as slow:
            e.encode(["x"])
        msg = str(slow.value)
        assert "no reply within 0.2s (2 attempts" in msg and srv.base_url in msg and "\n" not in msg
        srv.delay = 0.0
        assert e.encode(["x"]).shape == (1, 8)  # the same embedder answers once the server does
        e.close()
    for bad in (0, -1, "60", True):
        with pytest.raises(ConfigError, match="embedder.timeout must be a positive number of seconds"):
            parse_config({"embedder": {"timeout": bad}})


def test_index_after_a_nan_reply_succeeds_once_the_server_is_healthy(topic_docs, tmp_path):
    """Through the command line: a NaN or ragged reply is exit 2 with one line naming the endpoint (never exit 3,
    never the store blamed); fixed, the next `index` succeeds with no manual step."""
    broken = Broken("nan")
    env = {**os.environ, "PYTHONPATH": SRC, "CHUNKSCOPE_CACHE": str(tmp_path / "cache"), "OPENAI_API_KEY": GOOD_KEY}
    with EmbeddingsServer(broken) as srv:
        flags = ["--embedder", f"openai:{MODEL}", "--embed-url", srv.base_url]
        for mode in ("nan", "ragged"):
            broken.mode = mode
            bad = _cli(["index", str(topic_docs), *flags], env)
            lines = bad.stderr.strip().splitlines()
            assert bad.returncode == 2 and len(lines) == 1, bad.stderr
            assert srv.base_url in lines[0] and "Traceback" not in bad.stderr and "Qdrant" not in bad.stderr
        broken.mode = "healthy"
        good = _cli(["index", str(topic_docs), *flags, "--json"], env)
        assert good.returncode == 0, good.stderr
        assert json.loads(good.stdout)["embedded"] == 3
