"""Shared test set-up: an isolated cache, no network, and the paths of the corpora."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SAMPLE_DOCS = REPO / "sample_docs"
CORPUS = REPO.parent / "shared" / "corpus" / "rust-book"

# Nothing in the tests may reach for a model hub.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


@pytest.fixture(scope="session", autouse=True)
def _isolated_cache(tmp_path_factory: pytest.TempPathFactory):
    """Every test session gets its own chunkscope cache (embeddings, stores, tiktoken ranks)."""
    if "CHUNKSCOPE_TEST_CACHE" in os.environ:
        os.environ["CHUNKSCOPE_CACHE"] = os.environ["CHUNKSCOPE_TEST_CACHE"]
    else:
        os.environ["CHUNKSCOPE_CACHE"] = str(tmp_path_factory.mktemp("chunkscope-cache"))
    yield


@pytest.fixture(scope="session")
def corpus() -> Path:
    if not CORPUS.is_dir():
        pytest.skip(f"the Rust book corpus is not at {CORPUS} (it lives in ../shared/corpus beside the repo)")
    return CORPUS


@pytest.fixture(scope="session")
def sample_docs() -> Path:
    return SAMPLE_DOCS
