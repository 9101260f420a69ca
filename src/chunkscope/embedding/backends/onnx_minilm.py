"""The default model on ONNX Runtime, as an `Encoder`: torch once, for the export, then never.

The first load exports the packaged all-MiniLM-L6-v2 to ONNX into the user cache (`chunkscope.embedding.backends.onnx_export`,
checked against torch before it is kept); every later process only opens an ONNX Runtime session (hundredths of a
second, against seconds for importing torch), which is what makes ``chunkscope query`` cheap enough to run in a
loop. The vectors agree with torch's to cosine 0.9999 on every chunk of the Rust book (bench/bench_onnx.py), so
they share the embedding cache and the collections made with torch.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from chunkscope.embedding.encoders import EmbedError
from chunkscope.paths import cache_home

if TYPE_CHECKING:
    import numpy as np

    from chunkscope.embedding.backends.onnx_export import OnnxEncoder

#: The packaged model's vector size, known without loading anything.
MINILM_DIM = 384


class OnnxMiniLMEncoder:
    """all-MiniLM-L6-v2 on ONNX Runtime; loads (and exports, the very first time) on first use."""

    def __init__(self, name: str, model_dir: Path, *, max_seq_length: int, batch_size: int = 32,
                 threads: int | None = None, cache_dir: Path | None = None, device: str = "cpu") -> None:
        self.name = name
        self.model_dir = model_dir
        #: ``cpu``, or ``cuda`` through ONNX Runtime's CUDA provider.
        self.on = device
        self.max_seq_length = max_seq_length
        self.batch_size = batch_size
        self.threads = threads
        self.cache_dir = cache_dir
        self._encoder: OnnxEncoder | None = None
        self._lock = threading.Lock()
        self.load_seconds = 0.0

    @property
    def loaded(self) -> bool:
        return self._encoder is not None

    @property
    def device(self) -> str | None:
        return f"{self.on} (ONNX Runtime)" if self._encoder is not None else None

    def where(self) -> str:
        return self.name

    @property
    def known_dim(self) -> int | None:
        return self._encoder.dim if self._encoder is not None else MINILM_DIM

    def dim(self) -> int:
        return self.known_dim or MINILM_DIM

    @property
    def encode_seconds(self) -> float:
        return self._encoder.encode_seconds if self._encoder is not None else 0.0

    def load(self) -> None:
        self._load()

    def _load(self) -> OnnxEncoder:
        if self._encoder is not None:
            return self._encoder
        with self._lock:
            if self._encoder is not None:
                return self._encoder
            import time

            from chunkscope.embedding.backends.onnx_export import OnnxEncoder, OnnxError, ensure_onnx

            t0 = time.perf_counter()
            try:
                path = ensure_onnx(self.model_dir, self.cache_dir or cache_home())
                self._encoder = OnnxEncoder(self.model_dir, path, self.threads, device=self.on)
            except OnnxError as exc:
                raise EmbedError(f"{self.name}: {exc}") from None
            except ImportError as exc:  # onnxruntime missing, or torch for the first export
                from chunkscope.extras import RETRIEVAL_EXTRA, MissingExtra

                raise MissingExtra(RETRIEVAL_EXTRA, (exc.name or "onnxruntime").split(".")[0]) from None
            self.load_seconds = time.perf_counter() - t0
            return self._encoder

    def encode(self, texts: Sequence[str]) -> "np.ndarray":
        from chunkscope.embedding.backends.onnx_export import OnnxError

        try:
            return self._load().encode(texts)
        except OnnxError as exc:
            raise EmbedError(f"{self.name}: {exc}") from None

    def close(self) -> None:
        self._encoder = None
