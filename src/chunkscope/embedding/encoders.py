"""The models behind `chunkscope.embedding.embedder.Embedder`: one small class per runtime, all answering `Encoder`.

An encoder turns texts into L2-normalised float32 vectors and nothing else; caching, de-duplication, batching for
progress and cancellation, and the statistics of each call are the `Embedder`'s, the same for every runtime.

- `SentenceTransformerEncoder`: any local sentence-transformers folder through torch (imported on first use).
- `OnnxMiniLMEncoder`: the packaged all-MiniLM-L6-v2 through ONNX Runtime; its ONNX file is exported once into the
  user cache (that one export needs torch), after which no process imports torch to embed.
- `chunkscope.embedding.backends.openai.OpenAIEncoder`: an OpenAI-compatible ``/v1/embeddings`` endpoint.

`chunkscope.embedding.embedder.make_encoder` picks one for an `EmbedderSpec`.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import threading
import time
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from chunkscope.embedding.spec import EmbedderSpec

if TYPE_CHECKING:
    import numpy as np

log = logging.getLogger(__name__)


class EmbedError(Exception):
    """The model cannot be loaded or run, or the endpoint refused; one line, shown to the user as is."""


class Encoder(Protocol):
    """What the `Embedder` needs of a model."""

    spec: EmbedderSpec
    #: Seconds the last `load` took (0 until loaded), and seconds spent inside the model over all calls.
    load_seconds: float
    encode_seconds: float

    @property
    def loaded(self) -> bool: ...

    @property
    def device(self) -> str | None: ...

    def dim(self) -> int: ...

    @property
    def known_dim(self) -> int | None:
        """The vector size when known without running the model (None: only a first call tells)."""
        ...

    def load(self) -> None: ...

    def encode(self, texts: Sequence[str]) -> "np.ndarray": ...

    def close(self) -> None: ...


def _offline_env() -> None:
    """Make sure no Hugging Face library ever tries the network, and keeps quiet on stderr."""
    for var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE"):
        os.environ[var] = "1"
    os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


class SentenceTransformerEncoder:
    """A local sentence-transformers model run by torch (imported on the first `load`)."""

    def __init__(self, spec: EmbedderSpec, model_dir: Path, *, dim: int | None, max_seq_length: int,
                 device: str | None = None, batch_size: int = 32, threads: int | None = None) -> None:
        self.spec = spec
        self.model_dir = model_dir
        self.max_seq_length = max_seq_length
        self.requested_device = device
        self.batch_size = batch_size
        self.threads = threads
        self._dim = dim
        self._st = None
        self._lock = threading.Lock()
        self.load_seconds = 0.0
        self.encode_seconds = 0.0

    @property
    def loaded(self) -> bool:
        return self._st is not None

    @property
    def device(self) -> str | None:
        return str(self._st.device) if self._st is not None else None

    def dim(self) -> int:
        if self._dim is None:  # an unusual model layout: ask the model itself
            self._dim = int(self._load().get_sentence_embedding_dimension())
        return self._dim

    @property
    def known_dim(self) -> int | None:
        return self._dim

    def load(self) -> None:
        self._load()

    def _load(self):
        if self._st is not None:
            return self._st
        with self._lock:
            if self._st is not None:
                return self._st
            t0 = time.perf_counter()
            _offline_env()
            from chunkscope.extras import EMBED_MODULES, RETRIEVAL_EXTRA, MissingExtra

            try:
                import torch
                from sentence_transformers import SentenceTransformer
            except ImportError as exc:
                missing = dict(EMBED_MODULES).get((exc.name or "").split(".")[0])
                if missing is not None:
                    raise MissingExtra(RETRIEVAL_EXTRA, missing) from None
                raise EmbedError(f"{self.spec.model}: sentence-transformers cannot be imported ({exc})") from None
            try:
                from transformers.utils import logging as hf_logging

                hf_logging.disable_progress_bar()
                hf_logging.set_verbosity_error()
            except Exception:  # noqa: BLE001 - quietening is best effort
                pass
            if self.threads:
                torch.set_num_threads(max(1, int(self.threads)))
            device = self.requested_device or ("cuda" if torch.cuda.is_available() else "cpu")
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    st = SentenceTransformer(str(self.model_dir), device=device, local_files_only=True)
            except Exception as exc:  # noqa: BLE001 - any load failure is one line for the user
                raise EmbedError(f"{self.spec.model}: cannot load the model from {self.model_dir}: "
                                 f"{_first_line(exc)}") from None
            st.max_seq_length = self.max_seq_length
            self._st = st
            self.load_seconds = time.perf_counter() - t0
            return st

    def encode(self, texts: Sequence[str]) -> "np.ndarray":
        import numpy as np

        st = self._load()
        t0 = time.perf_counter()
        try:
            vecs = st.encode(list(texts), batch_size=self.batch_size, normalize_embeddings=True,
                             convert_to_numpy=True, show_progress_bar=False)
        except Exception as exc:  # noqa: BLE001
            raise EmbedError(f"{self.spec.model}: encoding failed: {_first_line(exc)}") from None
        finally:
            self.encode_seconds += time.perf_counter() - t0
        return np.asarray(vecs, dtype=np.float32)

    def close(self) -> None:
        self._st = None


def onnx_runtime_available() -> bool:
    """Whether ONNX Runtime is installed (looked up, not imported)."""
    return importlib.util.find_spec("onnxruntime") is not None
