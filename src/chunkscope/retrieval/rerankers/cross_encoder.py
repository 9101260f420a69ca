"""``st:PATH``: a local sentence-transformers CrossEncoder folder, run by torch (imported on first use only)."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from chunkscope.embedding.encoders import first_line, offline_env
from chunkscope.extras import EMBED_MODULES, MissingExtra, require_extra
from chunkscope.retrieval.rerankers.base import Reranker, RerankError, RerankSpec


class CrossEncoderReranker(Reranker):
    """Scores (query, chunk) pairs with a CrossEncoder read from a folder; never downloads anything."""

    def __init__(self, spec: RerankSpec) -> None:
        super().__init__(spec)
        self.folder = Path(spec.name).expanduser()
        self._model: Any = None
        self._lock = threading.Lock()

    def load(self) -> None:
        with self._lock:
            if self._model is not None:
                return
            if not (self.folder / "config.json").is_file():
                raise RerankError(f"{self.where()}: {self.folder} is not a model folder (no config.json)")
            try:
                require_extra(EMBED_MODULES)
            except MissingExtra as exc:
                raise RerankError(f"{self.where()}: {exc}") from None
            offline_env()  # a folder only: no Hugging Face library may try the network
            from sentence_transformers import CrossEncoder

            try:
                self._model = CrossEncoder(str(self.folder), device="cpu", local_files_only=True)
            except Exception as exc:  # noqa: BLE001 - torch and transformers raise anything; one line names the folder
                raise RerankError(f"{self.where()}: cannot load the CrossEncoder: {first_line(exc)}") from None

    def _score(self, query: str, documents: Sequence[str]) -> list[float]:
        self.load()
        try:
            out = self._model.predict([(query, d) for d in documents], show_progress_bar=False,
                                      convert_to_numpy=True)
        except Exception as exc:  # noqa: BLE001 - one line naming the model, never a traceback
            raise RerankError(f"{self.where()}: scoring failed: {first_line(exc)}") from None
        flat = out.reshape(len(documents), -1)
        if flat.shape[1] != 1:
            raise RerankError(f"{self.where()}: the model gives {flat.shape[1]} scores per pair; a reranker gives one")
        return [float(x) for x in flat[:, 0]]

    def close(self) -> None:
        with self._lock:
            self._model = None
