"""Embedder and embedding cache: lazy imports, cache hits and misses, truncation counts, corruption, concurrency."""

from __future__ import annotations

import multiprocessing as mp
import os
import sqlite3
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

from chunkscope.embedding.embedder import CACHE_FILE, EmbedError, Embedder, EmbeddingCache, model_dimension, model_identity, text_sha
from chunkscope.embedding.spec import EmbedderSpecError
from chunkscope.paths import default_model_dir

SRC = str(Path(__file__).resolve().parents[1] / "src")


@pytest.fixture(scope="module")
def embedder(tmp_path_factory):
    """One loaded model for the module; its cache lives in a temporary folder."""
    e = Embedder(cache_dir=tmp_path_factory.mktemp("embcache"))
    yield e
    e.close()


def _vec(seed: int, dim: int = 8) -> np.ndarray:
    v = np.random.default_rng(seed).standard_normal(dim).astype(np.float32)
    return v / np.linalg.norm(v)


# --- no heavy imports -----------------------------------------------------------------------------------------


def test_core_modules_import_neither_torch_nor_ui(tmp_path):
    code = (
        "import sys\n"
        "import chunkscope.embedding.embedder, chunkscope.retrieval.store, chunkscope.retrieval.retriever, chunkscope.evaluation.evaluate\n"
        "from chunkscope.embedding.embedder import Embedder\n"
        "e = Embedder()\n"
        "print(e.dim, e.max_seq_length, e.model_id)\n"
        "bad = [m for m in ('torch', 'sentence_transformers', 'transformers', 'rich', 'textual') if m in sys.modules]\n"
        "assert not bad, bad\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={"PYTHONPATH": SRC, "CHUNKSCOPE_CACHE": str(tmp_path), "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["384", "256", "all-MiniLM-L6-v2"]


def test_dimension_and_identity_without_torch(tmp_path):
    d = default_model_dir()
    assert model_dimension(d) == 384
    assert model_identity("all-MiniLM-L6-v2", d) == "all-MiniLM-L6-v2"
    # A model given by path is named after its folder plus a content hash: stable, and distinct per model.
    other = tmp_path / "mymodel"
    other.mkdir()
    (other / "config.json").write_text('{"hidden_size": 16}')
    a = model_identity(str(other), other)
    assert a.startswith("mymodel-") and a == model_identity(str(other), other)
    (other / "config.json").write_text('{"hidden_size": 32}')
    assert model_identity(str(other), other) != a


# --- load errors ----------------------------------------------------------------------------------------------


def test_missing_model_folder_is_one_line_embed_error(tmp_path):
    with pytest.raises(EmbedError) as err:
        Embedder(str(tmp_path / "no-such-model"), cache_dir=tmp_path)
    msg = str(err.value)
    assert "\n" not in msg and "no-such-model" in msg


def test_folder_without_model_files_is_embed_error(tmp_path):
    empty = tmp_path / "empty-model"
    empty.mkdir()
    with pytest.raises(EmbedError, match="no sentence-transformers model"):
        Embedder(str(empty), cache_dir=tmp_path)


@pytest.mark.model
def test_broken_model_files_fail_on_load_with_embed_error(tmp_path):
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "config.json").write_text("{ this is not json")
    (broken / "modules.json").write_text("[]")
    e = Embedder(str(broken), cache_dir=tmp_path)  # cheap: nothing loaded yet
    with pytest.raises(EmbedError) as err:
        e.embed(["hello"])
    assert "\n" not in str(err.value) and "broken" in str(err.value)


# --- the real model -------------------------------------------------------------------------------------------


@pytest.mark.model
def test_embed_normalized_and_cached(embedder):
    texts = ["Lidar measures distance with laser pulses.", "Motors move the joints.", "Lidar measures distance with laser pulses."]
    e1 = embedder.embed(texts)
    v1, s1 = e1.vectors, e1.stats
    assert v1.shape == (3, 384) and v1.dtype == np.float32
    assert np.allclose(np.linalg.norm(v1, axis=1), 1.0, atol=1e-5)
    assert np.array_equal(v1[0], v1[2])
    assert (s1.texts, s1.hits, s1.misses) == (3, 0, 2)  # the duplicate is embedded once
    e2 = embedder.embed(texts[:2] + ["A new sentence about grippers."])
    v2, s2 = e2.vectors, e2.stats
    assert (s2.hits, s2.misses) == (2, 1)
    assert np.allclose(v2[:2], v1[:2], atol=1e-6)
    # The cached vector equals a fresh encode of the same text.
    assert np.allclose(embedder.encode([texts[1]])[0], v1[1], atol=1e-5)


@pytest.mark.model
def test_cache_survives_a_new_embedder(embedder):
    embedder.embed(["persisted sentence one"])
    fresh = Embedder(cache_dir=embedder.cache_dir)
    stats = fresh.embed(["persisted sentence one"]).stats
    assert (stats.hits, stats.misses) == (1, 0)
    assert not fresh.loaded  # a cache hit never loads the model
    fresh.close()


@pytest.mark.model
def test_truncated_texts_are_counted(embedder):
    long = " ".join(f"word{i}" for i in range(400))  # far more than 256 word pieces
    assert embedder.embed([long, "short text"]).stats.truncated == 1
    again = embedder.embed([long]).stats  # a cache hit still knows its length
    assert again.hits == 1 and again.truncated == 1


# --- the cache file -------------------------------------------------------------------------------------------


def test_cache_roundtrip_and_dim_check(tmp_path):
    with EmbeddingCache(tmp_path / CACHE_FILE) as c:
        c.put_many("m", [("a", _vec(1), 5), ("b", _vec(2), 7)])
        got = c.get_many("m", ["a", "b", "zzz"], dim=8)
        assert set(got) == {"a", "b"}
        assert np.array_equal(got["a"][0], _vec(1)) and got["b"][1] == 7
        assert c.get_many("other-model", ["a"]) == {}
        assert c.get_many("m", ["a"], dim=16) == {}  # a vector of the wrong size is a miss, not garbage
        assert c.count("m") == 2


@pytest.mark.parametrize("damage", ["garbage", "truncated", "foreign"])
def test_corrupt_cache_is_moved_aside_and_rebuilt(tmp_path, damage):
    path = tmp_path / CACHE_FILE
    with EmbeddingCache(path) as c:
        c.put_many("m", [(text_sha(f"t{i}"), _vec(i), 3) for i in range(200)])
    if damage == "garbage":
        path.write_bytes(b"\x00garbage bytes, not a database" * 100)
    elif damage == "truncated":
        raw = path.read_bytes() if path.stat().st_size else b""
        # Keep the header, scribble over the pages: SQLite's own checks must notice.
        with sqlite3.connect(path) as conn:
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        raw = path.read_bytes()
        path.write_bytes(raw[:100] + b"\xff" * (len(raw) - 100))
    else:
        path.unlink()
        with sqlite3.connect(path) as conn:
            conn.execute("CREATE TABLE something_else (x)")
    with pytest.warns(RuntimeWarning, match="moved it to"):
        c = EmbeddingCache(path)
    try:
        assert c.warnings and "corrupt" in c.warnings[0]
        aside = list(tmp_path.glob(f"{CACHE_FILE}.corrupt-*"))
        assert len([p for p in aside if not p.name.endswith(("-wal", "-shm"))]) == 1
        assert c.count() == 0
        c.put_many("m", [("x", _vec(9), 1)])
        assert set(c.get_many("m", ["x"])) == {"x"}
    finally:
        c.close()
    # The rebuilt file opens cleanly.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        EmbeddingCache(path).close()


def _writer(path: str, worker: int, n: int) -> None:
    c = EmbeddingCache(path)
    for i in range(n):
        # Overlapping keys (every worker writes "shared-i") and private ones, in many small transactions.
        c.put_many("m", [(f"shared-{i}", _vec(i), 1), (f"w{worker}-{i}", _vec(1000 * worker + i), 2)])
        c.get_many("m", [f"shared-{i}", f"w{worker}-{i}"])
    c.close()


def test_two_processes_share_the_cache_safely(tmp_path):
    path = str(tmp_path / CACHE_FILE)
    EmbeddingCache(path).close()
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(path, w, 150)) for w in (1, 2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0, 0]
    with EmbeddingCache(path) as c:
        assert c.warnings == []
        assert c.count("m") == 150 + 2 * 150
        got = c.get_many("m", [f"shared-{i}" for i in range(150)] + [f"w2-{i}" for i in range(150)])
        assert len(got) == 300
        assert np.array_equal(got["shared-7"][0], _vec(7)) and np.array_equal(got["w2-3"][0], _vec(2003))
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_stop_before_any_batch_raises_cancelled_without_loading(tmp_path):
    from chunkscope.progress import CancelToken, Cancelled

    cancel = CancelToken()
    cancel.cancel()
    e = Embedder(cache_dir=tmp_path)
    with pytest.raises(Cancelled, match="0 of 2"):
        e.embed(["one text", "another text"], cancel=cancel)
    assert not e.loaded and e.total_stats.misses == 2
    e.close()


def test_cancel_token_polls_its_source_and_stays_cancelled():
    from chunkscope.progress import CancelToken, Cancelled

    asked = {"stale": False}
    token = CancelToken(poll=lambda: asked["stale"])
    assert not token.cancelled
    token.raise_if_cancelled()  # nothing happens
    asked["stale"] = True
    assert token.cancelled
    asked["stale"] = False
    assert token.cancelled  # once cancelled, a token stays so
    with pytest.raises(Cancelled, match="stopped here"):
        token.raise_if_cancelled("stopped here")


def test_progress_reports_rate_and_time_left_and_its_place_in_a_larger_job():
    from chunkscope.progress import Phase, Progress

    start = Progress(Phase.EMBED, 0, 100, unit="texts", started=0.0, label="recursive")
    assert start.rate is None or start.done == 0
    half = start.advanced(50, cached=10)
    # 40 new texts over the elapsed time: the rate excludes the 10 that came from the cache.
    assert half.rate == pytest.approx(40 / half.elapsed, rel=0.01)
    assert half.seconds_left == pytest.approx(50 / half.rate, rel=0.01)
    line = half.describe()
    assert line.startswith("embedding recursive: 50/100 texts") and "10 cached" in line and "left" in line
    whole = Progress(Phase.SWEEP, 2, 12, unit="configurations", label="chunk_size=256")
    nested = half.within(whole).describe()
    assert nested.startswith("sweeping 3/12 configurations (chunk_size=256)") and "embedding recursive" in nested
    assert Progress(Phase.INDEX, 5, 5).seconds_left == 0.0


@pytest.mark.model
def test_default_embedder_runs_on_onnx_without_torch_after_the_first_export(tmp_path):
    """The first process exports the model (torch, once); the next ones embed on ONNX Runtime alone, with the
    vectors torch gives (so caches and collections made with either are shared)."""
    env = {"PYTHONPATH": SRC, "CHUNKSCOPE_CACHE": str(tmp_path), "PATH": "/usr/bin:/bin", "HF_HUB_OFFLINE": "1"}
    code = (
        "import sys, json\n"
        "from chunkscope.embedding.embedder import Embedder\n"
        "e = Embedder(use_cache=False)\n"
        "v = e.encode(['How do I borrow a value mutably?'])[0]\n"
        "print(json.dumps({'runtime': type(e.encoder).__name__, 'torch': 'torch' in sys.modules,"
        " 'vec': [float(x) for x in v]}))\n"
    )
    first = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=600)
    assert first.returncode == 0, first.stderr
    second = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=600)
    assert second.returncode == 0, second.stderr
    import json

    out = json.loads(second.stdout)
    assert out["runtime"] == "OnnxMiniLMEncoder" and out["torch"] is False
    torch_vec = Embedder(use_cache=False, runtime="torch").encode(["How do I borrow a value mutably?"])[0]
    assert float(np.dot(torch_vec, np.asarray(out["vec"], dtype=np.float32))) > 0.9999


# --- a cache folder that cannot be written (issue 21, item 6) --------------------------------------------------


def _mount_tmpfs(folder: Path, options: str) -> bool:
    """A small tmpfs at ``folder`` (root only): the one way to make a full or read-only disk for root."""
    if os.geteuid() != 0:
        return False
    return subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(folder)],
                          capture_output=True).returncode == 0


@pytest.fixture()
def full_dir(tmp_path):
    folder = tmp_path / "full"
    folder.mkdir()
    if not _mount_tmpfs(folder, "size=96k"):
        pytest.skip("cannot make a small file system here (needs root)")
    yield folder
    subprocess.run(["umount", str(folder)], check=False)


def test_a_read_only_cache_is_one_line_naming_the_cache_folder(read_only_dir):
    e = Embedder(cache_dir=read_only_dir / "embeddings")
    with pytest.raises(EmbedError) as err:
        e.embed(["one text"])
    msg = str(err.value)
    assert msg.startswith(f"embedding cache {read_only_dir / 'embeddings'}: cannot use it") and "\n" not in msg
    assert not e.loaded  # refused before the model was loaded


def test_a_full_disk_is_one_line_naming_the_cache_folder_and_keeps_what_was_written(full_dir):
    cache = EmbeddingCache(full_dir / "embeddings" / CACHE_FILE)
    cache.put_many("m", [("first", _vec(1, 384), 1)])
    with pytest.raises(EmbedError) as err:
        for start in range(0, 2000, 50):
            cache.put_many("m", [(f"t{i}", _vec(i, 384), 1) for i in range(start, start + 50)])
    msg = str(err.value)
    assert msg.startswith(f"embedding cache {full_dir / 'embeddings'}: cannot use it (") and "full" in msg
    assert "\n" not in msg
    assert np.array_equal(cache.get_many("m", ["first"])["first"][0], _vec(1, 384))  # the file is still sound
    cache.close()


# --- where bulk embedding runs (issue 22; no GPU here: the choice is tested with stand-ins) ---------------------


def test_bulk_device_asks_no_runtime_without_an_nvidia_driver(monkeypatch):
    from chunkscope.embedding import device

    def never() -> bool:
        raise AssertionError("a runtime was asked on a machine without a GPU driver")

    monkeypatch.setattr(device, "nvidia_driver_present", lambda: False)
    monkeypatch.setattr(device, "onnx_cuda_available", never)
    monkeypatch.setattr(device, "torch_cuda_available", never)
    assert device.bulk_device() == device.BulkDevice("onnx", "cpu")


@pytest.mark.parametrize("ort_cuda, torch_cuda, want", [
    (True, True, ("onnx", "cuda")),  # the GPU without torch's import
    (False, True, ("torch", "cuda")),
    (False, False, ("onnx", "cpu")),  # a driver but nothing that can use it
])
def test_bulk_device_prefers_onnx_runtimes_cuda_then_torchs(monkeypatch, ort_cuda, torch_cuda, want):
    from chunkscope.embedding import device

    monkeypatch.setattr(device, "nvidia_driver_present", lambda: True)
    monkeypatch.setattr(device, "onnx_cuda_available", lambda: ort_cuda)
    monkeypatch.setattr(device, "torch_cuda_available", lambda: torch_cuda)
    assert device.bulk_device() == device.BulkDevice(*want)


@pytest.mark.parametrize("where, kind, on", [(("onnx", "cuda"), "OnnxMiniLMEncoder", "cuda"),
                                             (("torch", "cuda"), "SentenceTransformerEncoder", "cuda")])
def test_the_default_models_bulk_encoder_follows_the_device_and_the_users_setting_wins(monkeypatch, where, kind, on):
    from chunkscope.embedding import device
    from chunkscope.embedding.encoders import EncoderOptions
    from chunkscope.embedding.registry import parse_embedder

    monkeypatch.setattr(device, "bulk_device", lambda: device.BulkDevice(*where))
    spec = parse_embedder(None)
    bulk = spec.make_bulk_encoder(EncoderOptions())
    assert type(bulk).__name__ == kind
    assert (bulk.on if kind == "OnnxMiniLMEncoder" else bulk.requested_device) == on
    # A question always runs on ONNX Runtime's CPU session; [embedder] device or runtime overrides the choice.
    assert type(spec.make_encoder(EncoderOptions())).__name__ == "OnnxMiniLMEncoder"
    assert spec.make_bulk_encoder(EncoderOptions(device="cpu")) is None
    assert spec.make_bulk_encoder(EncoderOptions(runtime="onnx")) is None
    forced = spec.make_encoder(EncoderOptions(device="cuda"))
    assert type(forced).__name__ == "SentenceTransformerEncoder" and forced.requested_device == "cuda"


class _Elsewhere:
    """The real encoder, reporting another device: what a GPU encoder looks like to the `Embedder`."""

    def __init__(self, real, device: str) -> None:
        self.real, self._device, self.calls = real, device, 0

    def __getattr__(self, name):
        return getattr(self.real, name)

    @property
    def device(self) -> str:
        return self._device

    def encode(self, texts):
        self.calls += 1
        return self.real.encode(texts)


@pytest.mark.model
def test_many_texts_run_on_the_bulk_device_a_question_never_does_and_stats_say_where(tmp_path, monkeypatch):
    from chunkscope.embedding.backends.minilm import MiniLMSpec
    from chunkscope.embedding.embedder import BULK_MIN_TEXTS

    made: list[_Elsewhere] = []

    def bulk(spec, options):
        made.append(_Elsewhere(spec.make_encoder(options), "cuda:0 (stand-in)"))
        return made[-1]

    monkeypatch.setattr(MiniLMSpec, "make_bulk_encoder", bulk)
    e = Embedder(cache_dir=tmp_path)
    one = e.embed(["How do I borrow a value mutably?"])
    e.embed_query("What is a trait?")
    assert made == [] and one.stats.device == "cpu (ONNX Runtime)"  # a question never loads the bulk encoder
    many = e.embed([f"text number {i} about ownership" for i in range(BULK_MIN_TEXTS)])
    assert len(made) == 1 and made[0].calls > 0 and many.stats.device == "cuda:0 (stand-in)"
    assert e.total_stats.device == "cuda:0 (stand-in)" and e.device == "cuda:0 (stand-in)"
    assert many.stats.to_dict()["device"] == "cuda:0 (stand-in)"
    assert e.embed(["text number 1 about ownership"]).stats.device is None  # all from the cache: nothing ran
    e.close()


# --- a backend is one class in the registry ---------------------------------------------------------------------


def test_a_new_backend_is_one_class_in_the_registry(tmp_path, monkeypatch):
    """A backend nobody wrote yet (what an Ollama or Cohere module would be): its class in `BACKENDS` is all the
    parser, the embedder, its cache and the token counter need."""
    from dataclasses import dataclass

    from chunkscope.embedding import registry
    from chunkscope.embedding.spec import EmbedderSpec
    from chunkscope.tokens import embed_tokenizer

    class Hashing:
        """Vectors from the text's hash, no model."""

        load_seconds = encode_seconds = 0.0
        loaded, device, known_dim = True, "nowhere", 8

        def where(self) -> str:
            return "echo:m"

        def dim(self) -> int:
            return 8

        def load(self) -> None: ...

        def close(self) -> None: ...

        def encode(self, texts):
            return np.stack([_vec(sum(map(ord, t))) for t in texts])

    @dataclass(frozen=True)
    class EchoSpec(EmbedderSpec):
        kind = "echo"
        prefix = "echo:"
        identity = property(lambda self: f"echo-{self.model}")
        tokenizer_name = property(lambda self: "cl100k_base")
        model_max_tokens = property(lambda self: 100)

        def make_encoder(self, options):
            return Hashing()

    monkeypatch.setitem(registry.BACKENDS, "echo", EchoSpec)
    spec = registry.parse_embedder("echo:m", max_tokens=5)
    assert type(spec) is EchoSpec and spec.text == "echo:m" and spec.max_tokens == 5
    e = Embedder("echo:m", cache_dir=tmp_path)
    assert e.embed(["a", "b"]).stats.misses == 2 and e.embed(["a", "b"]).stats.hits == 2
    assert e.cache is not None and e.cache.count("echo-m") == 2 and e.default_threshold is None
    tok = embed_tokenizer(spec)
    assert tok.max_seq_length == 5 and tok.count("hello world") == 2
    with pytest.raises(EmbedderSpecError, match="use all-MiniLM-L6-v2, st:PATH, openai:MODEL, echo:MODEL"):
        registry.parse_embedder("nope:m")
    e.close()
