"""``st:PATH``: any local sentence-transformers model, run by torch (imported on the first load, never before).

The folder may also be given bare (``[embedder] model = "models/my-model"``), as chunkscope.toml always allowed.
Its vectors are named after the folder plus a hash of its files (`chunkscope.embedding.model_info.model_identity`),
so moving the folder keeps its cache and two different models never share one.
"""

from __future__ import annotations

import threading
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from chunkscope.embedding.encoders import EmbedError, Encoder, EncoderOptions, first_line, offline_env
from chunkscope.embedding.model_info import model_dimension, model_identity
from chunkscope.embedding.spec import EmbedderSpec
from chunkscope.extras import EMBED_MODULES
from chunkscope.paths import TokenizerError, model_max_seq_length, resolve_model_dir

if TYPE_CHECKING:
    import numpy as np

#: What a model folder without a readable ``max_seq_length`` is taken to read.
FALLBACK_MAX_TOKENS = 512


@dataclass(frozen=True)
class LocalModelSpec(EmbedderSpec):
    """What every model in a local folder shares: its folder, its limit, the checks before it is loaded."""

    @property
    def folder_name(self) -> str:
        """The folder `model_dir` resolves (the packaged model's name for the default)."""
        return self.model

    @property
    def model_dir(self) -> Path:
        return resolve_model_dir(self.folder_name)

    @property
    def fallback_max_tokens(self) -> int:
        return FALLBACK_MAX_TOKENS

    @property
    def model_max_tokens(self) -> int:
        try:
            return model_max_seq_length(self.model_dir)
        except TokenizerError:
            return self.fallback_max_tokens

    def check_ready(self) -> None:
        try:
            folder = self.model_dir
        except TokenizerError as exc:
            raise EmbedError(str(exc)) from None
        if not (folder / "config.json").is_file() and not (folder / "modules.json").is_file():
            raise EmbedError(f"{self.model}: {folder} holds no sentence-transformers model (no config.json)")

    def torch_encoder(self, options: EncoderOptions) -> "SentenceTransformerEncoder":
        """This model on torch, where the user's ``device`` says (default: CUDA when torch sees a GPU)."""
        folder = self.model_dir
        return SentenceTransformerEncoder(self.text, folder, dim=model_dimension(folder),
                                          max_seq_length=self.max_tokens, device=options.device,
                                          batch_size=options.batch_size, threads=options.threads)


@dataclass(frozen=True)
class SentenceTransformerSpec(LocalModelSpec):
    """``st:PATH``: a local sentence-transformers folder."""

    kind = "st"
    prefix = "st:"

    @property
    def identity(self) -> str:
        return model_identity(self.model, self.model_dir)

    @property
    def tokenizer_name(self) -> str:
        return f"hf:{self.model}"

    def required_modules(self, options: EncoderOptions) -> tuple[tuple[str, str], ...]:
        return EMBED_MODULES

    def make_encoder(self, options: EncoderOptions) -> Encoder:
        return self.torch_encoder(options)


class SentenceTransformerEncoder:
    """A local sentence-transformers model run by torch (imported on the first `load`)."""

    def __init__(self, name: str, model_dir: Path, *, dim: int | None, max_seq_length: int,
                 device: str | None = None, batch_size: int = 32, threads: int | None = None) -> None:
        self.name = name
        self.model_dir = model_dir
        self.max_seq_length = max_seq_length
        self.requested_device = device
        self.batch_size = batch_size
        self.threads = threads
        self._dim = dim
        self._st: Any = None
        self._lock = threading.Lock()
        self.load_seconds = 0.0
        self.encode_seconds = 0.0

    @property
    def loaded(self) -> bool:
        return self._st is not None

    @property
    def device(self) -> str | None:
        return f"{self._st.device} (torch)" if self._st is not None else None

    def where(self) -> str:
        return self.name

    def dim(self) -> int:
        if self._dim is None:  # an unusual model layout: ask the model itself
            self._dim = int(self._load().get_sentence_embedding_dimension())
        return self._dim

    @property
    def known_dim(self) -> int | None:
        return self._dim

    def load(self) -> None:
        self._load()

    def _load(self) -> Any:
        if self._st is not None:
            return self._st
        with self._lock:
            if self._st is not None:
                return self._st
            t0 = time.perf_counter()
            offline_env()
            from chunkscope.extras import RETRIEVAL_EXTRA, MissingExtra

            try:
                import torch
                from sentence_transformers import SentenceTransformer
            except ImportError as exc:
                missing = dict(EMBED_MODULES).get((exc.name or "").split(".")[0])
                if missing is not None:
                    raise MissingExtra(RETRIEVAL_EXTRA, missing) from None
                raise EmbedError(f"{self.name}: sentence-transformers cannot be imported ({exc})") from None
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
                raise EmbedError(f"{self.name}: cannot load the model from {self.model_dir}: "
                                 f"{first_line(exc)}") from None
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
            raise EmbedError(f"{self.name}: encoding failed: {first_line(exc)}") from None
        finally:
            self.encode_seconds += time.perf_counter() - t0
        return np.asarray(vecs, dtype=np.float32)

    def close(self) -> None:
        self._st = None
