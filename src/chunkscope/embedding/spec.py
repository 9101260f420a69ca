"""Which embedding model a user's pipeline runs, said once: the base class every embedding backend extends.

An `EmbedderSpec` is pure data, cheap to make and safe to import anywhere (no torch, no HTTP): the tokenizer that
counts what the model reads, the limit it truncates at, the score threshold that belongs to it, the *identity*
that keys the embedding cache and the collection names (so switching embedders never mixes vectors), and the
factory of the encoder that runs it. Each backend is one subclass in its own module under
`chunkscope.embedding.backends`, listed in `chunkscope.embedding.registry`, which also reads what a user writes
(``all-MiniLM-L6-v2``, ``st:PATH``, ``openai:MODEL``) into one.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

if TYPE_CHECKING:
    from chunkscope.embedding.encoders import Encoder, EncoderOptions

DEFAULT_API_KEY_ENV = "OPENAI_API_KEY"


class EmbedderSpecError(ValueError):
    """An embedder that cannot be used as written; one line for the user."""


@dataclass(frozen=True)
class EmbedderSpec(ABC):
    """One embedding model, as the user named it; a subclass per backend says what it is and what runs it.

    Attributes:
        model: the model's name (``text-embedding-3-small``) or folder.
        url: the endpoint's base URL (endpoint backends only), up to and including ``/v1``.
        api_key_env: the environment variable holding the endpoint's key (endpoint backends only).
        max_tokens_override: a limit the user set (``[embedder] max_tokens``) over the model's own.
        key_refusal: why the key must not go to ``url`` (`chunkscope.config.trust`), None when it may.
    """

    #: The backend's name in the registry (``minilm``, ``st``, ``openai``).
    kind: ClassVar[str]
    #: What a user writes before the model's name to pick this backend (``openai:``); None: no prefix.
    prefix: ClassVar[str | None] = None
    #: Whether the model is served at a URL (``[embedder] url``); a local model refuses one.
    takes_url: ClassVar[bool] = False

    model: str
    url: str | None = None
    api_key_env: str = DEFAULT_API_KEY_ENV
    max_tokens_override: int | None = None
    key_refusal: str | None = field(default=None, compare=False)

    @classmethod
    def from_user(cls, model: str, url: str | None = None, api_key_env: str | None = None,
                  max_tokens: int | None = None) -> "EmbedderSpec":
        """The spec of ``model`` as the user configured it: a local model's (`chunkscope.embedding.registry.parse_embedder`
        has already refused a URL for it); an endpoint backend (`takes_url`) overrides this to keep its URL and key.

        Raises:
            EmbedderSpecError: what the user wrote cannot be used.
        """
        return cls(model, max_tokens_override=max_tokens)

    # -- what the model is --

    @property
    def text(self) -> str:
        """The spec as a user writes it (``openai:text-embedding-3-small``)."""
        return f"{self.prefix or ''}{self.model}"

    @property
    def is_default(self) -> bool:
        """Whether this is the packaged default model."""
        return False

    @property
    def model_dir(self) -> Path | None:
        """The local folder of a local model (raises `TokenizerError` when it does not exist); None for others."""
        return None

    @property
    @abstractmethod
    def identity(self) -> str:
        """Keys the embedding cache and collection names: two embedders whose vectors differ never share one."""

    @property
    @abstractmethod
    def tokenizer_name(self) -> str:
        """The `chunkscope.tokens` tokenizer that counts what this model reads."""

    @property
    @abstractmethod
    def model_max_tokens(self) -> int:
        """What the model itself reads of one text, in `tokenizer_name` tokens."""

    @property
    def max_tokens(self) -> int:
        """What the model reads of one text: the user's limit when set, else the model's own."""
        return self.max_tokens_override or self.model_max_tokens

    @property
    def default_threshold(self) -> float | None:
        """The score threshold that belongs to this model; None when nobody measured one (no threshold)."""
        return None

    @property
    def known_dim(self) -> int | None:
        """The vector size when it is known without asking the model."""
        return None

    # -- what runs it --

    def required_modules(self, options: "EncoderOptions") -> tuple[tuple[str, str], ...]:
        """The (module, distribution) pairs the encoder needs, looked up before any work (`extras.require_extra`)."""
        return ()

    def check_ready(self) -> None:
        """Raise `chunkscope.embedding.encoders.EmbedError` when what the model needs on disk is not there."""

    @abstractmethod
    def make_encoder(self, options: "EncoderOptions") -> "Encoder":
        """The encoder for texts a caller needs at once (a question): the quickest to load."""

    def make_bulk_encoder(self, options: "EncoderOptions") -> "Encoder | None":
        """The encoder for many texts (indexing) when it differs from `make_encoder`'s (a GPU); None: the same."""
        return None
