"""Sentence embeddings on ONNX Runtime: the model exported to ONNX once (with torch), then run without torch.

`export_onnx` writes a local sentence-transformers model of the shape ``Transformer → Pooling → Normalize`` (the
packaged all-MiniLM-L6-v2 is one) to a single ONNX file whose graph does all three steps, with dynamic batch and
sequence axes. It is the only function here that needs torch (and transformers, which sentence-transformers
brings); it checks the file it wrote against torch before moving it into place. `ensure_onnx` does that export
once per model into the user cache, keyed by a hash of the model's files, under a file lock so two processes
never export at the same time.

`OnnxEncoder` loads that file in an ONNX Runtime session and tokenizes with the ``tokenizers`` library from the
model folder's ``tokenizer.json``: importing this module or building the encoder imports neither torch nor
sentence-transformers (ONNX Runtime itself is imported when an encoder is built). Its vectors match
sentence-transformers' ``encode`` to cosine 0.9999 or better (``tests/test_onnx.py`` on varied texts,
``bench/bench_onnx.py`` on every chunk of the Rust book).

Choices, each measured with ``bench/bench_onnx.py`` or while writing this module:

- The TorchScript exporter (``dynamo=False``), although torch 2.9+ defaults to the ``torch.export`` one: it needs
  neither onnxscript nor an external-data file, exports in about a second rather than five, and its graph was the
  faster of the two in ONNX Runtime. Both give the same vectors; ``exporter="dynamo"`` remains available.
- The model is exported with transformers' plain ("eager") attention, not its SDPA path: SDPA's export traces
  data-dependent branches into constants (TracerWarnings) and ran about 15% slower in ONNX Runtime.
- Pooling and normalisation are in the graph: the session returns (batch, 384), not (batch, length, 384).
  Pooling in numpy instead measured the same (within 2% of CPU time), and this keeps the encoder trivial.
- Each run is single-threaded and small (about 512 word pieces); several run at once (see `OnnxEncoder`).
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import tempfile
import threading
import time
import warnings
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from chunkscope.embedding.model_info import model_identity, read_json
from chunkscope.paths import cache_home, model_max_seq_length

if TYPE_CHECKING:
    import onnxruntime

#: Bump when what `export_onnx` writes changes (inputs, outputs, what the graph computes): files exported by an
#: older chunkscope are then exported again instead of being trusted.
ONNX_FORMAT = 1
ONNX_FILE = "model.onnx"
#: Beside the ONNX file: the versions and settings it was exported with, and how well it matched torch.
META_SUFFIX = ".json"
INPUT_NAMES = ("input_ids", "attention_mask", "token_type_ids")
OUTPUT_NAME = "sentence_embedding"
#: Opset 17 has LayerNormalization as one operator; ONNX Runtime 1.16 and later run it.
OPSET = 17
#: An export whose vectors differ more than this from torch's is never written into place.
MIN_EXPORT_COSINE = 0.9999
#: The sentence-transformers pooling modes the export knows (new ``pooling_mode`` names, and the old boolean
#: ``pooling_mode_*`` keys that map to them).
_POOLING_KEYS = {
    "pooling_mode_cls_token": "cls",
    "pooling_mode_max_tokens": "max",
    "pooling_mode_mean_tokens": "mean",
    "pooling_mode_mean_sqrt_len_tokens": "mean_sqrt_len_tokens",
}
_PROBE_TEXTS = ("How do I borrow a value mutably?", "fn main() { println!(\"hello\"); }", "",
                "Ownership rules: each value has an owner. " * 40)


class OnnxError(Exception):
    """The model cannot be exported to, loaded from or run on ONNX; one line, shown to the user as is."""


@dataclass(frozen=True, slots=True)
class Pipeline:
    """What a sentence-transformers folder computes, as far as the ONNX export is concerned.

    Attributes:
        transformer_dir: the folder of the transformer module (the model folder itself for all-MiniLM-L6-v2).
        pooling: ``mean``, ``cls``, ``max`` or ``mean_sqrt_len_tokens``.
        normalize: whether a Normalize module follows the pooling (L2, as ``F.normalize``).
        max_seq_length: word pieces the model reads, [CLS] and [SEP] included; the rest is cut off.
    """

    transformer_dir: Path
    pooling: str
    normalize: bool
    max_seq_length: int


def read_pipeline(model_dir: str | os.PathLike[str]) -> Pipeline:
    """Read ``modules.json`` and the pooling config of a sentence-transformers folder (no torch).

    Raises:
        OnnxError: the folder is not ``Transformer → Pooling [→ Normalize]`` with one pooling mode this module
            exports (a Dense layer, weighted-mean or concatenated pooling, ...).
    """
    model_dir = Path(model_dir)
    modules = read_json(model_dir / "modules.json")
    if not isinstance(modules, list) or not modules:
        raise OnnxError(f"{model_dir}: no readable modules.json, so the ONNX export cannot know what to export")
    kinds = [str(m.get("type", "")).rsplit(".", 1)[-1] if isinstance(m, dict) else "?" for m in modules]
    if kinds not in (["Transformer", "Pooling"], ["Transformer", "Pooling", "Normalize"]):
        raise OnnxError(f"{model_dir}: the ONNX export handles Transformer, Pooling and Normalize modules only, "
                        f"not {' → '.join(kinds)}")
    transformer_dir = model_dir / str(modules[0].get("path", ""))
    cfg = read_json(model_dir / str(modules[1].get("path", "")) / "config.json")
    if not isinstance(cfg, dict):
        raise OnnxError(f"{model_dir}: the pooling module has no readable config.json")
    named = cfg.get("pooling_mode")
    if isinstance(named, str):
        modes = [named]
    elif isinstance(named, list):
        modes = [str(m) for m in named]
    else:
        modes = [mode for key, mode in _POOLING_KEYS.items() if cfg.get(key) is True]
        modes += [k for k, v in cfg.items() if k.startswith("pooling_mode_") and k not in _POOLING_KEYS and v is True]
    if len(modes) != 1 or modes[0] not in _POOLING_KEYS.values():
        raise OnnxError(f"{model_dir}: the ONNX export handles one pooling mode of "
                        f"{', '.join(sorted(_POOLING_KEYS.values()))}, not {', '.join(modes) or 'none'}")
    return Pipeline(transformer_dir, modes[0], kinds[-1] == "Normalize", model_max_seq_length(transformer_dir))


def onnx_path(model_dir: str | os.PathLike[str], cache_dir: str | os.PathLike[str]) -> Path:
    """Where the ONNX file of ``model_dir`` lives under ``cache_dir`` (pass `chunkscope.paths.cache_home()`).

    The folder is named by a hash of the model's files (`chunkscope.embedding.model_info.model_identity` of the folder
    itself, even for the packaged default), so another model, or another version of the same package, never
    reuses the file.
    """
    model_dir = Path(model_dir)
    return Path(cache_dir) / "onnx" / model_identity(str(model_dir), model_dir) / ONNX_FILE


def _meta_path(path: Path) -> Path:
    return path.with_suffix(META_SUFFIX)


def exported(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` holds a finished export of the current `ONNX_FORMAT` (its JSON record says so)."""
    path = Path(path)
    meta = read_json(_meta_path(path))
    return path.is_file() and isinstance(meta, dict) and meta.get("format") == ONNX_FORMAT


def ensure_onnx(model_dir: str | os.PathLike[str], cache_dir: str | os.PathLike[str]) -> Path:
    """The ONNX file of ``model_dir`` in ``cache_dir``, exported first if it is not there yet (needs torch then).

    A file lock beside the file makes a second process wait for the first one's export instead of doing it too.
    """
    path = onnx_path(model_dir, cache_dir)
    if exported(path):
        return path
    from filelock import FileLock

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with FileLock(str(path) + ".lock"):
            if not exported(path):
                export_onnx(model_dir, path)
    except OSError as exc:  # a full disk or a read-only cache: the folder to fix is the cache's, not the model's
        raise OnnxError(f"{path.parent}: cannot write the ONNX export there ({exc.strerror or _first_line(exc)})") from None
    return path


# --- the export (torch) ---------------------------------------------------------------------------------------


def _sentence_module(transformer: Any, pipeline: Pipeline, use_token_types: bool) -> Any:
    """A torch module: the transformer, then the pooling and normalisation the folder's modules.json asks for,
    written as sentence-transformers' Pooling and Normalize modules compute them."""
    import torch

    class SentenceEmbedding(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.transformer = transformer

        def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                    token_type_ids: torch.Tensor) -> torch.Tensor:
            extra = {"token_type_ids": token_type_ids} if use_token_types else {}
            states = self.transformer(input_ids=input_ids, attention_mask=attention_mask, **extra)[0]
            mask = attention_mask.unsqueeze(-1).to(states.dtype)
            if pipeline.pooling == "cls":
                pooled = states[:, 0]
            elif pipeline.pooling == "max":
                pooled = states.masked_fill(mask == 0, -1e9).max(dim=1).values
            else:
                count = mask.sum(dim=1).clamp(min=1e-9)
                pooled = (states * mask).sum(dim=1) / (count if pipeline.pooling == "mean" else count.sqrt())
            if pipeline.normalize:
                pooled = torch.nn.functional.normalize(pooled, p=2, dim=1)
            return pooled

    return SentenceEmbedding().eval()


def export_onnx(model_dir: str | os.PathLike[str], dest: str | os.PathLike[str], *,
                exporter: str = "torchscript") -> Path:
    """Export the sentence-transformers model in ``model_dir`` to the ONNX file ``dest``; returns ``dest``.

    The graph takes ``input_ids``, ``attention_mask`` and ``token_type_ids`` (int64, batch × length, both axes
    dynamic) and returns ``sentence_embedding`` (float32, batch × dim), pooled and normalised as the folder's
    modules.json says. The file is written beside ``dest`` under a temporary name, its vectors are compared with
    torch's on a few texts, and only then is it renamed into place (after ``dest`` with a ``.json`` suffix, which
    records the versions used); a failed or interrupted export leaves nothing behind.

    Args:
        exporter: ``"torchscript"`` (torch.onnx's TorchScript exporter) or ``"dynamo"`` (its ``torch.export``
            one, which needs the onnxscript package).

    Raises:
        OnnxError: the model's layout cannot be exported, the export fails, or its vectors differ from torch's.
        ImportError: onnx, torch, transformers or onnxruntime (or onnxscript, for dynamo) is missing (``name``
            says which).
    """
    if exporter not in ("torchscript", "dynamo"):
        raise OnnxError(f"unknown ONNX exporter {exporter!r}; choose torchscript or dynamo")
    model_dir, dest = Path(model_dir), Path(dest)
    pipeline = read_pipeline(model_dir)
    t0 = time.perf_counter()
    # torch.onnx needs the onnx package to write the file (and onnxscript for dynamo), but only says so as a
    # generic export failure once the model is loaded: asked first, a missing one is an ImportError naming it.
    import onnx  # noqa: F401
    if exporter == "dynamo" and importlib.util.find_spec("onnxscript") is None:
        raise ImportError("onnxscript is not installed", name="onnxscript")
    import torch
    from transformers import AutoModel
    from transformers.utils import logging as hf_logging

    # Loading weights draws a progress bar on stderr: a user running `query` must not see it. (Also done by
    # chunkscope's sentence-transformers encoder.)
    hf_logging.disable_progress_bar()
    hf_logging.set_verbosity_error()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            transformer = AutoModel.from_pretrained(str(pipeline.transformer_dir), local_files_only=True,
                                                    attn_implementation="eager")
    except Exception as exc:  # noqa: BLE001 - any load failure is one line for the user
        raise OnnxError(f"{model_dir}: cannot load the model for the ONNX export: {_first_line(exc)}") from None
    transformer.eval()
    use_token_types = int(getattr(transformer.config, "type_vocab_size", 0) or 0) > 0
    module = _sentence_module(transformer, pipeline, use_token_types)

    tokenizer = _load_tokenizer(pipeline.transformer_dir, pipeline.max_seq_length)
    encodings = [tokenizer.encode(t) for t in _PROBE_TEXTS]
    probe = _batch_arrays(encodings, tokenizer.pad_id)
    # The check runs a batch of another size and width than the traced one: a graph that kept the example's
    # shape as a constant somewhere fails it.
    check = [probe, _batch_arrays(encodings[:2], tokenizer.pad_id)]
    with torch.inference_mode():
        expected = np.concatenate([module(*(torch.from_numpy(a) for a in arrays)).numpy() for arrays in check])

    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=".tmp", dir=dest.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        sample = tuple(torch.from_numpy(a) for a in probe)
        axes = {name: {0: "batch", 1: "sequence"} for name in INPUT_NAMES}
        kwargs: dict[str, Any] = {"input_names": list(INPUT_NAMES), "output_names": [OUTPUT_NAME],
                                  "opset_version": OPSET}
        if exporter == "dynamo":
            batch, seq = torch.export.Dim("batch"), torch.export.Dim("sequence", max=pipeline.max_seq_length)
            kwargs.update(dynamo=True, external_data=False, verbose=False,
                          dynamic_shapes={name: {0: batch, 1: seq} for name in INPUT_NAMES})
            kwargs["opset_version"] = max(OPSET, 18)  # the dynamo exporter's lowest
        else:
            kwargs.update(dynamo=False, dynamic_axes={**axes, OUTPUT_NAME: {0: "batch"}})
        try:
            with warnings.catch_warnings(), torch.no_grad():
                # The TorchScript exporter's deprecation notice and the tracer's warnings about Python values in
                # transformers' code: the comparison below is what tells whether the graph generalises.
                warnings.simplefilter("ignore")
                torch.onnx.export(module, sample, str(tmp), **kwargs)
        except (ImportError, OSError):
            raise  # a missing package is named by the caller; a full disk names the cache folder (ensure_onnx)
        except Exception as exc:  # noqa: BLE001 - one line for the user
            raise OnnxError(f"{model_dir}: the ONNX export failed: {_first_line(exc)}") from None

        session = _session(tmp)
        got = np.concatenate([_run(session, arrays) for arrays in check])
        cosine = float(np.min(np.sum(_unit(got) * _unit(expected), axis=1)))
        if not cosine >= MIN_EXPORT_COSINE:
            raise OnnxError(f"{model_dir}: the exported ONNX model disagrees with torch (cosine {cosine:.5f})")
        del session

        ort = onnxruntime_quiet()
        meta = {
            "format": ONNX_FORMAT,
            "model_dir": str(model_dir),
            "exporter": exporter,
            "opset": kwargs["opset_version"],
            "pooling": pipeline.pooling,
            "normalize": pipeline.normalize,
            "max_seq_length": pipeline.max_seq_length,
            "dim": int(got.shape[1]),
            "min_cosine_vs_torch": round(cosine, 7),
            "torch": torch.__version__,
            "transformers": _version("transformers"),
            "onnxruntime": ort.__version__,
            "onnx": _version("onnx"),
            "onnxscript": _version("onnxscript") if exporter == "dynamo" else None,
            "seconds": round(time.perf_counter() - t0, 2),
            "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        }
        _write_atomically(_meta_path(dest), json.dumps(meta, indent=2) + "\n")
        os.replace(tmp, dest)
    finally:
        tmp.unlink(missing_ok=True)
    return dest


def _version(distribution: str) -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(distribution)
    except PackageNotFoundError:
        return None


def _write_atomically(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _unit(v: np.ndarray) -> np.ndarray:
    return v / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-12)


# --- running it (no torch) ------------------------------------------------------------------------------------


class _Tokenizer:
    """The model's fast tokenizer, truncating at ``max_seq_length`` and never padding (batches pad themselves)."""

    def __init__(self, folder: Path, max_seq_length: int) -> None:
        from tokenizers import Tokenizer

        path = folder / "tokenizer.json"
        if not path.is_file():
            raise OnnxError(f"{folder}: no tokenizer.json, which the ONNX encoder tokenizes with")
        tok = Tokenizer.from_file(str(path))
        # The file's own settings are not sentence-transformers': all-MiniLM-L6-v2's pads every text to 128 and
        # truncates at 128, where the model reads 256.
        pad = tok.padding
        self.pad_id = int(pad["pad_id"]) if pad else _pad_id(folder, tok)
        tok.no_padding()
        tok.enable_truncation(max_length=max_seq_length)
        self._tok = tok

    def encode(self, text: str) -> Any:
        return self._tok.encode(text)

    def encode_batch(self, texts: list[str]) -> list[Any]:
        return self._tok.encode_batch(texts)


def _pad_id(folder: Path, tok: Any) -> int:
    cfg = read_json(folder / "config.json") or {}
    if isinstance(cfg.get("pad_token_id"), int):
        return cfg["pad_token_id"]
    found = tok.token_to_id("[PAD]")
    return int(found) if found is not None else 0


def _load_tokenizer(folder: Path, max_seq_length: int) -> _Tokenizer:
    return _Tokenizer(folder, max_seq_length)


def _batch_arrays(encodings: Sequence[Any], pad_id: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """input_ids, attention_mask and token_type_ids of some encodings, padded to the longest of them."""
    width = max(len(e.ids) for e in encodings)
    ids = np.full((len(encodings), width), pad_id, dtype=np.int64)
    mask = np.zeros((len(encodings), width), dtype=np.int64)
    types = np.zeros((len(encodings), width), dtype=np.int64)
    for row, e in enumerate(encodings):
        n = len(e.ids)
        ids[row, :n] = e.ids
        mask[row, :n] = 1
        types[row, :n] = e.type_ids
    return ids, mask, types


_TELEMETRY_LOCK = threading.Lock()
_telemetry_off = False


def _import_environ() -> dict[str, str]:
    """The environment ONNX Runtime's first import sees.

    ``ORT_DISABLE_TELEMETRY=1`` is the documented opt-out of the 1DS telemetry that official Linux and macOS builds
    carry since 1.29 (its Privacy.md, "Disabling Telemetry"). The library reads it once, when it loads, and then
    never creates the uploader, its events, the device id or the offline database. That uploader is what looked up
    mobile.events.data.microsoft.com while chunkscope embedded: ``disable_telemetry_events()`` can only run after
    the load, so it drops later events while the uploader goes on retrying the one queued at start-up.
    ``XDG_CACHE_HOME`` points into chunkscope's cache for the releases in which the variable did not yet stop
    everything (before microsoft/onnxruntime#29843) and the device id was still written.
    """
    return {"ORT_DISABLE_TELEMETRY": "1", "XDG_CACHE_HOME": str(cache_home() / "onnxruntime")}


def onnxruntime_quiet() -> Any:
    """The ``onnxruntime`` module, imported so that it neither reaches the network nor writes outside chunkscope's
    cache: its telemetry is switched off before the library loads, and its events before any session exists.

    The variables of `_import_environ` are set only for the first import, then put back as they were: the
    library reads them only then, and a program that embeds chunkscope keeps its own environment (its
    subprocesses and its own use of ONNX Runtime's settings included). Where the program imported ONNX Runtime
    before chunkscope, only ``disable_telemetry_events()`` is left to do.
    """
    global _telemetry_off
    with _TELEMETRY_LOCK:
        if "onnxruntime" not in sys.modules:
            wanted = _import_environ()
            saved = {name: os.environ.get(name) for name in wanted}
            os.environ.update(wanted)
            try:
                import onnxruntime  # noqa: F401
            finally:
                for name, value in saved.items():
                    if value is None:
                        os.environ.pop(name, None)
                    else:
                        os.environ[name] = value
        import onnxruntime as ort

        if not _telemetry_off:
            ort.disable_telemetry_events()
            _telemetry_off = True
    return ort


#: ONNX Runtime's providers for a device: CUDA falls back to the CPU for an operator it does not run.
_PROVIDERS = {"cpu": ["CPUExecutionProvider"], "cuda": ["CUDAExecutionProvider", "CPUExecutionProvider"]}


def _session(path: Path, device: str = "cpu") -> onnxruntime.InferenceSession:
    ort = onnxruntime_quiet()
    opts = ort.SessionOptions()
    # Every run is single-threaded: parallelism comes from running several batches at once (`OnnxEncoder`), which
    # measured cheaper than splitting each operator over threads (no hand-over between operators, nor threads
    # spinning between them while the other cores are wanted by the app or another process).
    opts.intra_op_num_threads = 1
    opts.inter_op_num_threads = 1
    opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    opts.log_severity_level = 3  # errors only: its warnings about unused initialisers are not the user's business
    try:
        return ort.InferenceSession(str(path), sess_options=opts, providers=_PROVIDERS[device])
    except Exception as exc:  # noqa: BLE001 - a damaged or foreign file; one line
        raise OnnxError(f"{path}: not a usable ONNX model ({_first_line(exc)})") from None


def _run(session: onnxruntime.InferenceSession, arrays: tuple[np.ndarray, np.ndarray, np.ndarray]) -> np.ndarray:
    feeds = dict(zip(INPUT_NAMES, arrays))
    wanted = {i.name for i in session.get_inputs()}
    return session.run([OUTPUT_NAME], {k: v for k, v in feeds.items() if k in wanted})[0]


def default_threads() -> int:
    """The cores this process may run on (its CPU affinity, which a container or ``taskset`` may narrow)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


class OnnxEncoder:
    """A model exported by `export_onnx`, run by ONNX Runtime (on the CPU, or its CUDA provider): texts in, unit
    float32 vectors out.

    Building one imports onnxruntime and loads the session and the tokenizer (0.2 s on a busy two-core machine);
    torch is never imported.
    `encode` may be called from several threads at once (ONNX Runtime's ``run`` and the tokenizer are
    thread-safe).

    Texts are tokenized all at once, sorted longest first and cut into batches of about `batch_tokens` word
    pieces (padding included), so a batch pads only to texts of nearly its own length; the vectors go back in the
    order given. Each batch runs on one thread, and up to `threads` batches run at once.

    Args:
        model_dir: the sentence-transformers folder the file was exported from (its tokenizer.json and
            max_seq_length are used).
        onnx_path: the exported file (`ensure_onnx` gives it).
        threads: batches run at once (None: one per core this process may use). One text, a query, always runs
            on one thread.
        batch_tokens: word pieces per run, padding included (a text longer than this runs alone). Small runs
            keep the activations in the core's cache: on all-MiniLM-L6-v2, 512 pieces per run took about 30%
            less CPU than 32 texts of 256 (bench/bench_onnx.py, "batching").
        device: ``"cpu"`` or ``"cuda"`` (ONNX Runtime's CUDA provider: one stream of large runs, as a GPU wants).

    Raises:
        OnnxError: the file or the tokenizer cannot be loaded, or the file is not one `export_onnx` makes.
        ImportError: onnxruntime or tokenizers is not installed (``name`` says which).
    """

    def __init__(self, model_dir: str | os.PathLike[str], onnx_path: str | os.PathLike[str],
                 threads: int | None = None, *, batch_tokens: int = 512, device: str = "cpu") -> None:
        t0 = time.perf_counter()
        self.device = device
        self.model_dir = Path(model_dir)
        self.onnx_path = Path(onnx_path)
        pipeline = read_pipeline(self.model_dir)
        self.max_seq_length = pipeline.max_seq_length
        on_gpu = device == "cuda"
        self.threads = 1 if on_gpu else max(1, int(threads)) if threads else default_threads()
        # A GPU is fed a few large runs rather than many small ones; 64 texts of 256 pieces each.
        self.batch_tokens = max(1, int(batch_tokens)) * (32 if on_gpu else 1)
        self._tokenizer = _load_tokenizer(pipeline.transformer_dir, self.max_seq_length)
        self._session = _session(self.onnx_path, device)
        outputs = {o.name: o.shape for o in self._session.get_outputs()}
        inputs = {i.name for i in self._session.get_inputs()}
        shape = outputs.get(OUTPUT_NAME)
        if shape is None or len(shape) != 2 or not isinstance(shape[1], int) or not {*INPUT_NAMES[:2]} <= inputs:
            raise OnnxError(f"{self.onnx_path}: not a chunkscope ONNX export (no {OUTPUT_NAME} of batch × dim)")
        #: The vector size.
        self.dim: int = shape[1]
        self._lock = threading.Lock()
        #: Seconds building this encoder took, and seconds spent in `encode` over all calls.
        self.load_seconds = time.perf_counter() - t0
        self.encode_seconds = 0.0

    def __repr__(self) -> str:
        return f"OnnxEncoder({str(self.onnx_path)!r}, dim={self.dim}, threads={self.threads})"

    def batches(self, lengths: Sequence[int]) -> list[list[int]]:
        """The runs `encode` makes for texts of these word-piece lengths: indices, longest texts first."""
        order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
        out: list[list[int]] = []
        j = 0
        while j < len(order):
            n = max(1, self.batch_tokens // max(1, lengths[order[j]]))  # the first is the batch's longest
            out.append(order[j:j + n])
            j += n
        return out

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """L2-normalised float32 vectors, one row per text, in the order given (shape ``(len(texts), dim)``).

        Raises:
            OnnxError: ONNX Runtime failed on a batch.
        """
        t0 = time.perf_counter()
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if texts:
            encodings = self._tokenizer.encode_batch(list(texts))
            batches = self.batches([len(e.ids) for e in encodings])

            def run(rows: list[int]) -> None:
                arrays = _batch_arrays([encodings[i] for i in rows], self._tokenizer.pad_id)
                try:
                    out[rows] = _run(self._session, arrays)
                except Exception as exc:  # noqa: BLE001 - one line for the user
                    raise OnnxError(f"{self.onnx_path}: ONNX Runtime failed: {_first_line(exc)}") from None

            workers = min(self.threads, len(batches))
            if workers <= 1:
                for rows in batches:
                    run(rows)
            else:
                # ONNX Runtime lets go of the GIL while it runs, so these threads compute in parallel.
                with ThreadPoolExecutor(workers, thread_name_prefix="chunkscope-onnx") as pool:
                    list(pool.map(run, batches))
        elapsed = time.perf_counter() - t0
        with self._lock:
            self.encode_seconds += elapsed
        return out
