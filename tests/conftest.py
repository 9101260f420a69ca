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

#: The terminal every test prints to, whatever the terminal that runs the suite (a 132x42 tmux, COLUMNS=60,
#: TERM=dumb, NO_COLOR=1, a pipe in CI): 80x25, the size rich falls back to when nothing is a terminal, which is
#: what CI has always seen. COLUMNS and LINES must be set: without them rich asks the terminal behind stdin,
#: which pytest leaves alone. A test that wants another width sets COLUMNS itself (monkeypatch restores this).
#: Set at import, before any fixture of any scope prints.
HERMETIC_TERMINAL = {"COLUMNS": "80", "LINES": "25", "TERM": "xterm-256color", "LC_ALL": "C.UTF-8",
                     "LANG": "C.UTF-8"}
#: Switches that change colour or terminal detection in rich and Textual; none of them may leak into a test.
TERMINAL_SWITCHES = ("NO_COLOR", "FORCE_COLOR", "CLICOLOR", "CLICOLOR_FORCE", "COLORTERM", "TTY_COMPATIBLE",
                     "TTY_INTERACTIVE", "JUPYTER_COLUMNS", "JUPYTER_LINES", "TEXTUAL_COLOR_SYSTEM")
os.environ.update(HERMETIC_TERMINAL)
for _name in TERMINAL_SWITCHES:
    os.environ.pop(_name, None)


@pytest.fixture(scope="session", autouse=True)
def _isolated_cache(tmp_path_factory: pytest.TempPathFactory):
    """Every test session gets its own chunkscope cache (embeddings, stores, tiktoken ranks)."""
    if "CHUNKSCOPE_TEST_CACHE" in os.environ:
        os.environ["CHUNKSCOPE_CACHE"] = os.environ["CHUNKSCOPE_TEST_CACHE"]
    else:
        os.environ["CHUNKSCOPE_CACHE"] = str(tmp_path_factory.mktemp("chunkscope-cache"))
    # The user's own chunkscope.toml never leaks into a test: an empty folder's (a test may write one there).
    os.environ["CHUNKSCOPE_USER_CONFIG"] = str(tmp_path_factory.mktemp("user-config") / "chunkscope.toml")
    yield


@pytest.fixture(scope="session")
def corpus() -> Path:
    if not CORPUS.is_dir():
        pytest.skip(f"the Rust book corpus is not at {CORPUS} (it lives in ../shared/corpus beside the repo)")
    return CORPUS


@pytest.fixture(scope="session")
def sample_docs() -> Path:
    return SAMPLE_DOCS


#: Three short documents on unrelated topics: a question about one must retrieve that one first.
TOPIC_DOCS = {
    "baking.md": "# Baking bread\n\nKnead the dough for ten minutes, let it rise until doubled, then bake the loaf at "
                 "220 degrees until the crust is golden brown.\n",
    "sailing.md": "# Sailing\n\nTo tack, push the tiller away, let the boom swing across the boat, and trim the jib "
                  "sheet on the new side as the bow passes through the wind.\n",
    "taxes.md": "# Filing taxes\n\nKeep every receipt, report your income from each employer, and file the return "
                "before the April deadline to avoid a penalty.\n",
}


@pytest.fixture()
def topic_docs(tmp_path: Path) -> Path:
    """A docs folder holding `TOPIC_DOCS` (model-backed query tests)."""
    docs = tmp_path / "docs"
    docs.mkdir()
    for name, text in TOPIC_DOCS.items():
        (docs / name).write_text(text, encoding="utf-8")
    return docs


@pytest.fixture()
def store(tmp_path: Path):
    """A `Store` for ``tmp_path/docs`` in its own folder, closed after the test."""
    from chunkscope.retrieval.store import Store

    s = Store(tmp_path / "docs", path=tmp_path / "qdrant")
    yield s
    s.close()


@pytest.fixture()
def window_tree(tmp_path: Path):
    """The loaded tree of `tuning_helpers.WINDOW_DOCS` (the tuning tests: sweep and tune)."""
    from chunkscope.document.loader import load_docs

    from .tuning_helpers import WINDOW_DOCS, write_docs

    return load_docs(write_docs(tmp_path / "docs", WINDOW_DOCS))


@pytest.fixture
def anyio_backend() -> str:
    """The Pilot tests run on asyncio (Textual's loop)."""
    return "asyncio"


@pytest.fixture()
def read_only_dir(tmp_path: Path):
    """A folder nothing can be written in: a read-only tmpfs for root (who ignores permissions), else mode 0555."""
    import subprocess

    folder = tmp_path / "read-only"
    folder.mkdir()
    if os.geteuid() != 0:
        folder.chmod(0o555)
        yield folder
        folder.chmod(0o755)
        return
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=64k", "tmpfs", str(folder)],
                      capture_output=True).returncode != 0:
        pytest.skip("cannot make a read-only folder here")
    yield folder
    subprocess.run(["umount", str(folder)], check=False)

