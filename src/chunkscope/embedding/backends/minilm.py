"""``all-MiniLM-L6-v2``: the packaged default model, offline, on ONNX Runtime (torch only for its one-time export).

A question runs on ONNX Runtime's CPU session, which opens in hundredths of a second; bulk embedding (indexing,
eval, sweep, tune) runs on a CUDA GPU when the machine has one (`chunkscope.embedding.device`), else on the same
CPU session. ``[embedder] runtime`` (onnx, torch) and ``device`` override the choice. ONNX and torch agree to
cosine 0.9999 (bench/bench_onnx.py), so vectors from either share the cache and the collections.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass

from chunkscope.embedding.backends.onnx_minilm import MINILM_DIM, OnnxMiniLMEncoder
from chunkscope.embedding.backends.sentence_transformers import LocalModelSpec
from chunkscope.embedding.encoders import Encoder, EncoderOptions
from chunkscope.extras import DEFAULT_MODEL_MODULES, EMBED_MODULES
from chunkscope.paths import DEFAULT_EMBED_MODEL

#: all-MiniLM-L6-v2's cosine scores run lower than OpenAI's. Measured by bench/bench_threshold.py on the 50
#: Rust book questions (bench/rust_book_queries.jsonl, strategy recursive): the right answer at rank 1 scored
#: 0.455-0.841 (median 0.572, 30 questions), so seed 004's 0.7 would keep only 23% of them. 0.45 is the highest
#: threshold that keeps at least 95% of right rank-1 answers (it kept all 30) while dropping 20% of the wrong
#: rank-1 hits (most wrong hits are near misses from the right chapter, 0.355-0.747, which no threshold separates).
MINILM_THRESHOLD = 0.45
#: What the packaged model reads when its folder does not say (word pieces, [CLS]/[SEP] included).
MINILM_MAX_TOKENS = 256


def onnx_runtime_available() -> bool:
    """Whether ONNX Runtime is installed (looked up, not imported)."""
    return importlib.util.find_spec("onnxruntime") is not None


@dataclass(frozen=True)
class MiniLMSpec(LocalModelSpec):
    """The packaged all-MiniLM-L6-v2."""

    kind = "minilm"

    @property
    def text(self) -> str:
        return DEFAULT_EMBED_MODEL

    @property
    def is_default(self) -> bool:
        return True

    @property
    def folder_name(self) -> str:
        return DEFAULT_EMBED_MODEL

    @property
    def fallback_max_tokens(self) -> int:
        return MINILM_MAX_TOKENS

    @property
    def identity(self) -> str:
        # Its plain name whichever runtime runs it: caches and collections made with torch stay valid.
        return DEFAULT_EMBED_MODEL

    @property
    def tokenizer_name(self) -> str:
        return DEFAULT_EMBED_MODEL

    @property
    def default_threshold(self) -> float:
        return MINILM_THRESHOLD

    def runs_on_onnx(self, options: EncoderOptions) -> bool:
        """Whether a question runs on ONNX Runtime: unless torch is asked for (``runtime``, or a GPU ``device``,
        which torch keeps) or ONNX Runtime is not installed."""
        if options.runtime == "torch":
            return False
        return options.runtime == "onnx" or (onnx_runtime_available() and options.device in (None, "cpu"))

    def required_modules(self, options: EncoderOptions) -> tuple[tuple[str, str], ...]:
        return (*(() if self.runs_on_onnx(options) else EMBED_MODULES), *DEFAULT_MODEL_MODULES)

    def make_encoder(self, options: EncoderOptions) -> Encoder:
        if not self.runs_on_onnx(options):
            return self.torch_encoder(options)
        device = "cuda" if options.runtime == "onnx" and (options.device or "").startswith("cuda") else "cpu"
        return self._onnx(options, device)

    def make_bulk_encoder(self, options: EncoderOptions) -> Encoder | None:
        """A GPU for many texts, when the user left the choice to chunkscope and the machine has one."""
        if options.device is not None or options.runtime is not None or not self.runs_on_onnx(options):
            return None
        from chunkscope.embedding.device import bulk_device

        where = bulk_device()
        if where.device == "cpu":
            return None
        if where.runtime == "onnx":
            return self._onnx(options, where.device)
        return self.torch_encoder(EncoderOptions(device=where.device, batch_size=max(options.batch_size, 128),
                                                 threads=options.threads))

    def _onnx(self, options: EncoderOptions, device: str) -> OnnxMiniLMEncoder:
        return OnnxMiniLMEncoder(self.text, self.model_dir, max_seq_length=self.max_tokens,
                                 batch_size=options.batch_size, threads=options.threads, device=device)

    @property
    def known_dim(self) -> int:
        return MINILM_DIM
