"""The ONNX path for the default model: an export whose vectors match sentence-transformers', run without torch.

The oracle is sentence-transformers itself (torch) on the same texts: every vector must be within cosine 0.9999
of its vector. The export is made once per module into a temporary folder.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from chunkscope.embedding.backends.onnx_export import (
    MIN_EXPORT_COSINE,
    ONNX_FORMAT,
    OnnxEncoder,
    OnnxError,
    ensure_onnx,
    export_onnx,
    exported,
    onnx_path,
    read_pipeline,
)
from chunkscope.paths import default_model_dir

SRC = str(Path(__file__).resolve().parents[1] / "src")

#: Short and long, prose and code, Markdown, several scripts, emoji, whitespace, the empty text; several run far
#: past the model's 256 word pieces so truncation is exercised (checked in the test).
TEXTS = [
    "",
    " ",
    "\n\t\n",
    "a",
    "Rust",
    "How do I borrow a value mutably?",
    "What is the difference between a String and a &str?",
    "  leading and trailing spaces  ",
    "UPPER CASE and lower case and MiXeD CaSe",
    "fn main() {\n    let mut v = Vec::new();\n    v.push(1);\n    println!(\"{v:?}\");\n}",
    "impl<T: Display + PartialOrd> Pair<T> { fn cmp_display(&self) { if self.x >= self.y { } } }",
    "```rust\nlet guess: u32 = \"42\".parse().expect(\"Not a number!\");\n```",
    "| Name | Type |\n|---|---|\n| x | i32 |\n| s | String |",
    "See https://doc.rust-lang.org/book/ch04-01-what-is-ownership.html#ownership-rules for the rules.",
    "Ceci n'est pas une pipe : l'élève a réussi à l'examen, naïve façade.",
    "Größenänderung der Straße über Nacht",
    "日本語のテキストと中文文本，混合在一起。",
    "Русский текст о владении и заимствовании.",
    "العربية نص قصير",
    "emoji 🚀🦀✨ and symbols ∑ ∫ √ ≤ ≥ ≠ →",
    "zero\u200bwidth\u200bspaces and a combining e\u0301 accent",
    "x" * 2000,
    "supercalifragilisticexpialidocious " * 30,
    "The quick brown fox jumps over the lazy dog. " * 60,
    "let x = 5; " * 150,
    "Ownership is a set of rules that govern how a Rust program manages memory. " * 12,
    "1234567890 " * 100,
    "# Heading\n\nSome paragraph text.\n\n## Subheading\n\n- item one\n- item two\n",
    "> A quoted line\n> another quoted line",
    "$$ E = mc^2 $$ and inline $a^2 + b^2 = c^2$",
    "<Tabs><TabItem value=\"a\">JSX in MDX</TabItem></Tabs>",
    "tab\tseparated\tvalues\tin\ta\trow",
    "Smart “quotes” and ‘apostrophes’ — and an ellipsis…",
    "😀" * 300,
    "word " * 255,
    "word " * 254,
    ("The Rust Programming Language, by Steve Klabnik and Carol Nichols, with contributions from the Rust "
     "Community. This version of the text assumes you are using Rust 1.85.0 or later."),
    "error[E0382]: borrow of moved value: `s1`\n --> src/main.rs:5:28\n  |\n2 |     let s1 = String::from(\"hello\");",
    "cargo new hello_cargo && cd hello_cargo && cargo build --release",
    "Ünïcödé " * 80,
    "所有权是一组管理内存的规则。" * 30,
    "🦀 ✨ " * 200,
    "match msg {\n    Message::Quit => quit(),\n    Message::Move { x, y } => move_to(x, y),\n}\n" * 20,
]


@pytest.fixture(scope="module")
def model_dir() -> Path:
    return default_model_dir()


@pytest.fixture(scope="module")
def export(tmp_path_factory, model_dir) -> Path:
    """The default model exported once for this module (needs torch: only this fixture does)."""
    return export_onnx(model_dir, tmp_path_factory.mktemp("onnx") / "model.onnx")


@pytest.fixture(scope="module")
def encoder(model_dir, export) -> OnnxEncoder:
    return OnnxEncoder(model_dir, export, threads=2)


@pytest.fixture(scope="module")
def st_model(model_dir):
    """sentence-transformers itself: the oracle."""
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(model_dir), device="cpu", local_files_only=True)


def _cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a = a / np.linalg.norm(a, axis=1, keepdims=True)
    b = b / np.linalg.norm(b, axis=1, keepdims=True)
    return np.sum(a * b, axis=1)


# --- vectors --------------------------------------------------------------------------------------------------


@pytest.mark.model
def test_vectors_match_sentence_transformers(encoder, st_model, model_dir):
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    tok.no_truncation()
    tok.no_padding()
    pieces = [len(e.ids) for e in tok.encode_batch(TEXTS)]
    assert sum(n > 256 for n in pieces) >= 8, "the texts must run past the model's 256 word pieces"
    assert 256 in pieces and 257 in pieces, "texts that just fit and just do not fit"

    got = encoder.encode(TEXTS)
    want = st_model.encode(TEXTS, batch_size=32, normalize_embeddings=True, convert_to_numpy=True)
    assert got.shape == (len(TEXTS), 384) and got.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)
    cos = _cosines(got, want)
    worst = int(np.argmin(cos))
    assert cos.min() >= 0.9999, f"text {worst} ({TEXTS[worst][:40]!r}): cosine {cos[worst]:.6f}"


@pytest.mark.model
def test_order_is_kept_whatever_the_batching(encoder, model_dir, export):
    """Texts are sorted by length into batches: each row must still be its own text's vector, however the
    batches fall (one text at a time is the reference: no padding at all)."""
    one_by_one = np.stack([encoder.encode([t])[0] for t in TEXTS])
    for batch_tokens, threads in ((1, 1), (300, 2), (4096, 1), (4096, 3)):
        batched = OnnxEncoder(model_dir, export, threads, batch_tokens=batch_tokens).encode(TEXTS)
        assert _cosines(batched, one_by_one).min() >= 0.99999, (batch_tokens, threads)
    shuffled = list(reversed(TEXTS))
    assert _cosines(encoder.encode(shuffled), one_by_one[::-1]).min() >= 0.99999
    # Distinct texts give distinct vectors (a row copied into the wrong place would show here too).
    sims = one_by_one[5:8] @ one_by_one[5:8].T
    assert sims[0, 1] < 0.99 and sims[1, 2] < 0.99


@pytest.mark.model
def test_batches_hold_texts_of_about_the_same_length_within_the_budget(model_dir, export):
    lengths = [3, 256, 12, 256, 40, 7, 200, 12, 1, 90]
    plan = OnnxEncoder(model_dir, export, batch_tokens=512).batches(lengths)
    assert sorted(i for rows in plan for i in rows) == list(range(len(lengths)))  # each text once
    flat = [lengths[i] for rows in plan for i in rows]
    assert flat == sorted(lengths, reverse=True)  # longest first, so a batch pads to its own first text
    assert all(len(rows) * lengths[rows[0]] <= 512 for rows in plan)
    assert [len(rows) for rows in plan][:2] == [2, 2]  # 256+256, then 200+90
    assert OnnxEncoder(model_dir, export, batch_tokens=100).batches([300, 5]) == [[0], [1]]  # too long: alone


@pytest.mark.model
def test_nothing_to_encode(encoder):
    out = encoder.encode([])
    assert out.shape == (0, 384) and out.dtype == np.float32


@pytest.mark.model
@pytest.mark.corpus
def test_rust_book_sample_matches_sentence_transformers(encoder, st_model, corpus):
    """A sample of the real corpus cut by the default strategy (the benchmark checks every chunk)."""
    from chunkscope.chunking.registry import get_strategy
    from chunkscope.document.loader import load_docs

    strategy = get_strategy("recursive")
    texts = [c.embed_text for d in load_docs(corpus) for c in strategy.chunk(d)]
    sample = texts[:: max(1, len(texts) // 60)]
    got = encoder.encode(sample)
    want = st_model.encode(sample, batch_size=32, normalize_embeddings=True, convert_to_numpy=True)
    cos = _cosines(got, want)
    assert len(sample) >= 50 and cos.min() >= 0.9999, cos.min()


# --- no torch at run time -------------------------------------------------------------------------------------


def test_importing_the_module_imports_no_runtime(tmp_path):
    code = (
        "import sys\n"
        "import chunkscope.embedding.backends.onnx_export\n"
        "bad = [m for m in ('torch', 'sentence_transformers', 'transformers', 'onnxruntime') if m in sys.modules]\n"
        "assert not bad, bad\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False,
                         env={"PYTHONPATH": SRC, "CHUNKSCOPE_CACHE": str(tmp_path), "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr


@pytest.mark.model
def test_encoding_from_an_existing_export_never_imports_torch(encoder, model_dir, export, tmp_path):
    code = (
        "import sys, json\n"
        "from chunkscope.embedding.backends.onnx_export import OnnxEncoder\n"
        f"enc = OnnxEncoder({str(model_dir)!r}, {str(export)!r})\n"
        "vec = enc.encode(['How do I borrow a value mutably?'])[0]\n"
        "bad = [m for m in ('torch', 'sentence_transformers', 'transformers') if m in sys.modules]\n"
        "print(json.dumps({'bad': bad, 'ort': 'onnxruntime' in sys.modules, 'vec': vec.tolist()}))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False,
                         env={"PYTHONPATH": SRC, "CHUNKSCOPE_CACHE": str(tmp_path), "PATH": "/usr/bin:/bin",
                              "HF_HUB_OFFLINE": "1"})
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["bad"] == [] and result["ort"]
    # The fresh process computed the same vector as this one: it really ran the model.
    here = encoder.encode(["How do I borrow a value mutably?"])
    assert _cosines(np.array([result["vec"]], dtype=np.float32), here)[0] >= 0.99999


# --- the export and the cache ---------------------------------------------------------------------------------


@pytest.mark.model
def test_export_records_its_versions(export):
    import onnxruntime
    import torch

    meta = json.loads(export.with_suffix(".json").read_text(encoding="utf-8"))
    assert meta["format"] == ONNX_FORMAT and meta["exporter"] == "torchscript"
    assert meta["torch"] == torch.__version__ and meta["onnxruntime"] == onnxruntime.__version__
    assert meta["pooling"] == "mean" and meta["normalize"] is True and meta["max_seq_length"] == 256
    assert meta["dim"] == 384 and meta["min_cosine_vs_torch"] >= MIN_EXPORT_COSINE
    # Written atomically: no temporary file is left beside it.
    assert sorted(p.name for p in export.parent.iterdir()) == ["model.json", "model.onnx"]


@pytest.mark.model
def test_ensure_onnx_exports_once_into_a_folder_keyed_by_the_model(model_dir, export, tmp_path):
    cache = tmp_path / "cache"
    path = onnx_path(model_dir, cache)
    assert path.parent.parent == cache / "onnx" and not path.exists()
    # An export made elsewhere, copied into place, is found and kept (no second export: same file, same time).
    path.parent.mkdir(parents=True)
    path.write_bytes(export.read_bytes())
    path.with_suffix(".json").write_bytes(export.with_suffix(".json").read_bytes())
    before = path.stat().st_mtime_ns
    assert ensure_onnx(model_dir, cache) == path and path.stat().st_mtime_ns == before
    # A record from another export format is not trusted.
    meta = json.loads(path.with_suffix(".json").read_text())
    path.with_suffix(".json").write_text(json.dumps({**meta, "format": ONNX_FORMAT - 1}))
    assert not exported(path)


def test_another_model_never_shares_the_file(model_dir, tmp_path):
    """Same files but one: another key. (Symlinks, so the 90 MB of weights are not copied.)"""
    other = tmp_path / "other-model"
    for f in model_dir.rglob("*"):
        target = other / f.relative_to(model_dir)
        if f.is_dir():
            target.mkdir(parents=True, exist_ok=True)
        elif f.name != "config.json" or f.parent != model_dir:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.symlink_to(f)
    config = json.loads((model_dir / "config.json").read_text())
    (other / "config.json").write_text(json.dumps({**config, "layer_norm_eps": 1e-6}))
    cache = tmp_path / "cache"
    assert onnx_path(other, cache) != onnx_path(model_dir, cache)
    assert onnx_path(model_dir, cache) == onnx_path(model_dir, cache)


@pytest.mark.model
def test_dynamo_exporter_gives_the_same_vectors(model_dir, encoder, tmp_path):
    pytest.importorskip("onnxscript", reason="the dynamo exporter needs onnxscript")
    path = export_onnx(model_dir, tmp_path / "dynamo.onnx", exporter="dynamo")
    other = OnnxEncoder(model_dir, path)
    assert _cosines(other.encode(TEXTS), encoder.encode(TEXTS)).min() >= 0.9999


# --- what cannot be exported or loaded ------------------------------------------------------------------------


def _model_folder(root: Path, modules: list[str], pooling: dict) -> Path:
    root.mkdir()
    entries = [{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"}]
    for i, kind in enumerate(modules, start=1):
        entries.append({"idx": i, "name": str(i), "path": f"{i}_{kind}",
                        "type": f"sentence_transformers.models.{kind}"})
        (root / f"{i}_{kind}").mkdir()
        (root / f"{i}_{kind}" / "config.json").write_text(json.dumps(pooling if kind == "Pooling" else {}))
    (root / "modules.json").write_text(json.dumps(entries))
    return root


def test_read_pipeline_of_the_default_model(model_dir):
    p = read_pipeline(model_dir)
    assert (p.pooling, p.normalize, p.max_seq_length, p.transformer_dir) == ("mean", True, 256, model_dir)


@pytest.mark.parametrize(("modules", "pooling", "words"), [
    (["Pooling", "Dense", "Normalize"], {"pooling_mode_mean_tokens": True}, "Dense"),
    (["Pooling"], {"pooling_mode_mean_tokens": True, "pooling_mode_max_tokens": True}, "max, mean"),
    (["Pooling"], {"pooling_mode_weightedmean_tokens": True}, "weightedmean"),
    (["Pooling"], {"pooling_mode": "lasttoken"}, "lasttoken"),
])
def test_layouts_the_export_does_not_handle_are_one_line_errors(tmp_path, modules, pooling, words):
    folder = _model_folder(tmp_path / "m", modules, pooling)
    with pytest.raises(OnnxError) as err:
        read_pipeline(folder)
    assert "\n" not in str(err.value) and words in str(err.value)


def test_new_style_pooling_config_is_read(tmp_path):
    folder = _model_folder(tmp_path / "m", ["Pooling"], {"pooling_mode": "cls"})
    p = read_pipeline(folder)
    assert (p.pooling, p.normalize) == ("cls", False)


@pytest.mark.model
def test_a_failed_export_leaves_nothing_behind(tmp_path, model_dir):
    broken = tmp_path / "broken"
    broken.mkdir()
    for name in ("modules.json", "sentence_bert_config.json", "tokenizer.json"):
        (broken / name).symlink_to(model_dir / name)
    (broken / "1_Pooling").mkdir()
    (broken / "1_Pooling" / "config.json").symlink_to(model_dir / "1_Pooling" / "config.json")
    (broken / "config.json").write_text("{ not json")
    dest = tmp_path / "out" / "model.onnx"
    with pytest.raises(OnnxError) as err:
        export_onnx(broken, dest)
    assert "\n" not in str(err.value) and "broken" in str(err.value)
    assert not dest.parent.exists() or list(dest.parent.iterdir()) == []


@pytest.mark.model
def test_an_export_that_disagrees_with_torch_is_never_moved_into_place(tmp_path, model_dir, monkeypatch):
    """The check after the export fails (made impossible to pass here): no file, no record, no temporary."""
    from chunkscope.embedding.backends import onnx_export as onnx_encoder

    monkeypatch.setattr(onnx_encoder, "MIN_EXPORT_COSINE", 1.5)
    dest = tmp_path / "out" / "model.onnx"
    with pytest.raises(OnnxError, match="disagrees with torch"):
        export_onnx(model_dir, dest)
    assert list(dest.parent.iterdir()) == []


def test_a_missing_onnx_package_is_named_before_any_work(tmp_path, model_dir, monkeypatch):
    """torch.onnx cannot write a file without the onnx package: the caller learns which package is missing."""
    monkeypatch.setitem(sys.modules, "onnx", None)  # what an install without it looks like to an import
    dest = tmp_path / "out" / "model.onnx"
    with pytest.raises(ImportError) as err:
        export_onnx(model_dir, dest)
    assert err.value.name == "onnx" and not dest.parent.exists()


def test_a_damaged_onnx_file_is_a_one_line_error(tmp_path, model_dir):
    bad = tmp_path / "model.onnx"
    bad.write_bytes(b"\x08\x07not a model" * 50)
    with pytest.raises(OnnxError) as err:
        OnnxEncoder(model_dir, bad)
    assert "\n" not in str(err.value) and str(bad) in str(err.value)


def test_a_record_without_its_model_is_not_an_export(tmp_path):
    """A crash between writing the JSON record and renaming the ONNX file into place leaves a record alone."""
    path = tmp_path / "model.onnx"
    path.with_suffix(".json").write_text(json.dumps({"format": ONNX_FORMAT}))
    assert not exported(path)
    path.write_bytes(b"x")
    assert exported(path)


# --- offline means offline (issue 21, item 9) and a cache that cannot be written (item 6) -----------------------


@pytest.mark.model
def test_nothing_is_written_outside_the_cache_folder(model_dir, export, tmp_path):
    """A fresh process with an empty HOME embeds on ONNX Runtime: HOME stays empty (ONNX Runtime's import made a
    device id and a database under ~/.cache/Microsoft), so does chunkscope's cache (its telemetry is off before it
    loads), and the process's own XDG_CACHE_HOME and ORT_DISABLE_TELEMETRY are as they were."""
    home = tmp_path / "home"
    home.mkdir()
    code = (
        "import os\n"
        "from chunkscope.embedding.backends.onnx_export import OnnxEncoder\n"
        f"OnnxEncoder({str(model_dir)!r}, {str(export)!r}).encode(['How do I borrow a value mutably?'])\n"
        "print(os.environ.get('XDG_CACHE_HOME'), os.environ.get('ORT_DISABLE_TELEMETRY'))\n"
    )
    cache = tmp_path / "cache"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False,
                         env={"PYTHONPATH": SRC, "CHUNKSCOPE_CACHE": str(cache), "HOME": str(home),
                              "PATH": "/usr/bin:/bin", "HF_HUB_OFFLINE": "1"})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "None None"
    assert [p.relative_to(home) for p in home.rglob("*")] == []
    assert not any(cache.rglob("deviceid")) and not any(cache.rglob("onnxruntime.db"))


@pytest.mark.model
def test_telemetry_is_switched_off_before_the_first_session(model_dir, export, monkeypatch):
    import onnxruntime

    from chunkscope.embedding.backends import onnx_export as module

    calls: list[str] = []
    real_session = onnxruntime.InferenceSession
    monkeypatch.setattr(module, "_telemetry_off", False)  # as in a fresh process
    monkeypatch.setattr(onnxruntime, "disable_telemetry_events", lambda: calls.append("telemetry off"))
    monkeypatch.setattr(onnxruntime, "InferenceSession",
                        lambda *a, **k: (calls.append("session"), real_session(*a, **k))[1])
    OnnxEncoder(model_dir, export)
    OnnxEncoder(model_dir, export)
    assert calls == ["telemetry off", "session", "session"]


def test_an_export_into_a_read_only_cache_names_the_cache_folder(model_dir, read_only_dir):
    from chunkscope.embedding.backends.onnx_export import ensure_onnx

    with pytest.raises(OnnxError) as err:
        ensure_onnx(model_dir, read_only_dir)
    msg = str(err.value)
    assert msg.startswith(str(read_only_dir / "onnx")) and "cannot write" in msg and "\n" not in msg
    assert str(model_dir) not in msg
