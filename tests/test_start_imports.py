"""What the explorer's first frame costs: `chunkscope DOCS` reaches it without loading what only later work needs.

The command runs as a user starts it (`chunkscope.cli.main`: the parser, the config's checks, the tree), in a fresh
interpreter, with the app headless; at the first line of the first file drawn, the modules loaded so far are
recorded. Speed itself is measured by bench/bench_tui.py (first paint); this keeps the gain from slipping back
unseen, one convenient import at a time.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("textual")

from tests.pilot import SAMPLE  # noqa: E402

#: Run in a fresh interpreter: `chunkscope tui DOCS` with `run_app` swapped for a headless run that stops at the
#: first paint (the first line of a file drawn), printing what was loaded by then.
FIRST_FRAME_SCRIPT = r"""
import json, os, sys

import chunkscope.tui.app as app_module
from chunkscope.cli import main
from chunkscope.tui.widgets.source_view import SourceView

state = {}
render_line = SourceView.render_line


def first_paint(self, y):
    if self.layout_data is not None and "modules" not in state:
        state["modules"] = sorted(sys.modules)
        self.app.exit()
    return render_line(self, y)


SourceView.render_line = first_paint


def headless(tree, config, resolved, *, queries=(), queries_name=""):
    app = app_module.ChunkscopeApp(tree, config, resolved, queries=queries, queries_name=queries_name)
    app.run(headless=True, size=(120, 40))
    return 0


app_module.run_app = headless
state["code"] = main(["tui", sys.argv[1]])
print(json.dumps(state), flush=True)
os._exit(0)  # the first cut's worker may still be running: the record is all this run is for
"""

#: Loaded after the first frame, when the work that needs them starts: the tokenizers (the first cut), the store
#: and the reranker's module (the first question), evaluation (a verdict, the probe), lint (the first cut's
#: findings), the custom strategy (a tree naming one), OpenSSL's hashes, statistics (the histogram's median, once
#: there are chunks), and the installed packages' metadata (the strategy picker lists the plugins' strategies).
NOT_BEFORE_THE_FIRST_FRAME = (
    "chunkscope.tokens",
    "chunkscope.retrieval.store",
    "chunkscope.retrieval.engine",
    "chunkscope.retrieval.rerank",
    "chunkscope.retrieval.rerankers.base",
    "chunkscope.retrieval.parents",
    "chunkscope.evaluation.",
    "chunkscope.lint",
    "chunkscope.chunking.strategies.custom",
    "chunkscope.embedding.embedder",
    "chunkscope.llm.contextual",
    "hashlib",
    "importlib.metadata",
    "statistics",
    "numpy",
    "tiktoken",
    "torch",
)


def first_frame(tmp_path: Path) -> dict:
    env = {**os.environ, "CHUNKSCOPE_CACHE": str(tmp_path / "cache"),
           "CHUNKSCOPE_USER_CONFIG": str(tmp_path / "no-user-config.toml")}
    proc = subprocess.run([sys.executable, "-c", FIRST_FRAME_SCRIPT, str(SAMPLE)], capture_output=True, text=True,
                          timeout=120, env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_the_first_frame_is_drawn_before_the_tokenizers_the_store_and_evaluation_load(tmp_path: Path) -> None:
    state = first_frame(tmp_path)
    assert state["code"] == 0 and "modules" in state, state
    loaded = [m for m in state["modules"]
              if any(m == name or m.startswith(name if name.endswith(".") else name + ".")
                     for name in NOT_BEFORE_THE_FIRST_FRAME)]
    assert loaded == [], f"loaded before the first frame: {loaded}"
