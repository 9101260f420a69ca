"""What every model runtime answers (`Encoder`), the options an embedder builds one with, and the vector check.

An encoder turns texts into L2-normalised float32 vectors and nothing else; caching, de-duplication, batching for
progress and cancellation, and the statistics of each call are the `chunkscope.embedding.embedder.Embedder`'s, the
same for every runtime. Each backend (`chunkscope.embedding.backends`) makes its own encoders; `check_vectors` is
the one gate every vector passes before it is cached, stored or searched with.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    import numpy as np

#: Seconds an endpoint may take to answer one request before it is asked again (``[embedder] timeout``).
DEFAULT_TIMEOUT = 60.0


class EmbedError(Exception):
    """The model cannot be loaded or run, the endpoint refused or answered nonsense, or the vector cache cannot
    be written; one line, shown to the user as is."""


class Truncator(Protocol):
    """What an endpoint's encoder needs of its tokenizer: where the model stops reading a text."""

    def truncation_offset(self, text: str, max_tokens: int | None = None) -> int: ...


@dataclass(frozen=True, slots=True)
class EncoderOptions:
    """How the user asked for a model to be run (``[embedder]`` and the `Embedder`'s arguments).

    Attributes:
        device: ``"cpu"``, ``"cuda"``… as the user set it; None: chunkscope chooses (`chunkscope.embedding.device`).
        batch_size: texts per model call.
        threads: intra-op threads of a local model (None: the runtime's default).
        runtime: ``"onnx"`` or ``"torch"`` for the default model (None: chunkscope chooses).
        timeout: seconds an endpoint may take to answer one request.
        tokenizer: the embedder's tokenizer, for a backend that cuts texts before sending them.
    """

    device: str | None = None
    batch_size: int = 32
    threads: int | None = None
    runtime: str | None = None
    timeout: float = DEFAULT_TIMEOUT
    tokenizer: Truncator | None = None


class Encoder(Protocol):
    """What the `Embedder` needs of a model runtime."""

    @property
    def load_seconds(self) -> float:
        """Seconds the last `load` took (0 until loaded)."""
        ...

    @property
    def encode_seconds(self) -> float:
        """Seconds spent inside the model over all calls."""
        ...

    @property
    def loaded(self) -> bool: ...

    @property
    def device(self) -> str | None:
        """Where the model runs once loaded (``"cpu (ONNX Runtime)"``, ``"cuda:0 (torch)"``, a host); None before."""
        ...

    def where(self) -> str:
        """The model (and endpoint) for a message; never a secret."""
        ...

    def dim(self) -> int: ...

    @property
    def known_dim(self) -> int | None:
        """The vector size when known without running the model (None: only a first call tells)."""
        ...

    def load(self) -> None: ...

    def encode(self, texts: Sequence[str]) -> "np.ndarray": ...

    def close(self) -> None: ...


def check_vectors(vectors: "np.ndarray", count: int, dim: int | None, where: str) -> None:
    """Raise `EmbedError` unless ``vectors`` holds ``count`` rows of ``dim`` finite numbers, none all zero.

    A NaN or a zero vector (which normalising turns into NaN) must never reach the cache or the store: cached, it
    would answer every later run; stored, Qdrant refuses it and the message would blame the store.
    """
    import numpy as np

    if vectors.ndim != 2 or vectors.shape[0] != count:
        got = vectors.shape[0] if vectors.ndim >= 1 else 0
        raise EmbedError(f"{where}: asked for {count} vectors, got {got}")
    if dim is not None and vectors.shape[1] != dim:
        raise EmbedError(f"{where}: vectors of size {vectors.shape[1]}, expected {dim}")
    if count == 0:
        return
    finite = np.isfinite(vectors).all(axis=1)
    if not finite.all():
        bad = int(np.count_nonzero(~finite))
        raise EmbedError(f"{where}: {bad} of {count} vectors hold NaN or infinite numbers; nothing of this reply "
                         "was kept")
    zero = ~np.any(vectors, axis=1)
    if zero.any():
        raise EmbedError(f"{where}: {int(np.count_nonzero(zero))} of {count} vectors are all zeros; nothing of "
                         "this reply was kept")


def offline_env() -> None:
    """Make sure no Hugging Face library ever tries the network, and keeps quiet on stderr."""
    for var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE"):
        os.environ[var] = "1"
    os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def first_line(exc: BaseException) -> str:
    """An exception's first line (its type's name when it says nothing)."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
