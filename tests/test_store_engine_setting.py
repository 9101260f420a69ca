"""``[qdrant] engine``: the embedded engine a chunkscope.toml chooses reaches the store the CLI and the app open."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from chunkscope.config.reader import ConfigError, load_config, parse_config
from chunkscope.retrieval.ids import workspace_dir


def test_the_engine_defaults_to_edge_and_a_bad_one_is_one_line_naming_the_file(tmp_path: Path) -> None:
    assert parse_config({}).qdrant_target().engine == "edge"
    assert parse_config({"qdrant": {"engine": "local"}}).qdrant_target().engine == "local"
    toml = tmp_path / "chunkscope.toml"
    with pytest.raises(ConfigError) as err:
        parse_config({"qdrant": {"engine": "sqlite"}}, toml)
    assert str(err.value) == f'{toml}: qdrant.engine must be "edge" or "local"'


@pytest.mark.model
def test_engine_local_in_the_tree_config_makes_index_use_local_mode(topic_docs: Path) -> None:
    (topic_docs / "chunkscope.toml").write_text('[qdrant]\nengine = "local"\n', encoding="utf-8")
    assert load_config(topic_docs).qdrant_target().engine == "local"
    proc = subprocess.run([sys.executable, "-m", "chunkscope", "index", str(topic_docs)], capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    workspace = workspace_dir(topic_docs)
    # qdrant-client's local mode keeps its meta.json in the workspace's "qdrant" folder; Edge's would be "edge".
    assert (workspace / "qdrant" / "meta.json").is_file()
    assert not (workspace / "edge").exists()


def test_the_app_opens_the_configured_engine(topic_docs: Path, tmp_path: Path) -> None:
    from chunkscope.config.reader import resolve_strategy
    from chunkscope.document.loader import load_docs
    from chunkscope.tui.headless.search import SearchSession

    for engine in ("local", "edge"):
        cfg = parse_config({"qdrant": {"engine": engine, "path": str(tmp_path / engine)}})
        session = SearchSession(load_docs(topic_docs), cfg)
        try:
            assert session.retriever(resolve_strategy(cfg, "recursive")).store.mode == engine
        finally:
            session.close()
