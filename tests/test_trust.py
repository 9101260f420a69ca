"""What a docs tree's chunkscope.toml may do: secrets only to hosts the user named, code only when allowed.

Real servers on 127.0.0.1 log the headers they receive: an embeddings endpoint (tests/openai_server.py) and a
stand-in for a Qdrant server that records every request's ``api-key``. A URL named only by the tree's config never
receives the user's key unless the user allows the tree (``--trust-tree-config`` or the environment variable).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pytest

from chunkscope.cli import main
from chunkscope.config.reader import ConfigError, load_config, resolve_strategy
from chunkscope.cli.options import TRUST_FLAG
from chunkscope.config.trust import TRUST_ENV, is_loopback, secret_refusal
from chunkscope.chunking.params import ParamError
from chunkscope.embedding.embedder import EmbedError, embedder_for

from .loopback import LoopbackServer, Reply, Request
from .openai_server import MODEL, EmbeddingsServer

OPENAI_KEY = "sk-user-secret-0123456789"
QDRANT_KEY = "qdrant-user-secret-9876"


def fake_vectors(texts: Sequence[str]) -> np.ndarray:
    """Distinct unit-ish vectors without a model: the tests are about headers, not meaning."""
    return np.array([[1.0, float(len(t) % 7), float(i % 5), 0.5] for i, t in enumerate(texts)], dtype=np.float32)


@pytest.fixture
def keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    monkeypatch.setenv("QDRANT_API_KEY", QDRANT_KEY)
    monkeypatch.delenv(TRUST_ENV, raising=False)
    monkeypatch.delenv("QDRANT_URL", raising=False)


@pytest.fixture
def endpoint(keys: None) -> Iterator[EmbeddingsServer]:
    with EmbeddingsServer(fake_vectors, key=None) as srv:  # accepts any key (or none) and logs what it got
        yield srv


def write_tree(root: Path, toml: str) -> Path:
    docs = root / "docs"
    docs.mkdir(parents=True)
    (docs / "intro.md").write_text("# Intro\n\nBread needs flour, water and time.\n", encoding="utf-8")
    (docs / "chunkscope.toml").write_text(toml, encoding="utf-8")
    return docs


def embedder_toml(url: str) -> str:
    return f'[embedder]\nmodel = "openai:{MODEL}"\nurl = "{url}"\n'


def auths(srv: EmbeddingsServer) -> set[str]:
    return {r["auth"] for r in srv.requests}


# --- the embedder's key ---------------------------------------------------------------------------------------


def test_a_url_from_the_trees_config_never_receives_the_key(tmp_path: Path, endpoint: EmbeddingsServer) -> None:
    docs = write_tree(tmp_path, embedder_toml(endpoint.base_url))
    cfg = load_config(docs)
    assert cfg.origin("embedding.url") == "tree"
    embedder_for(cfg).encode(["bread"])
    assert endpoint.requests and auths(endpoint) == {""}


def test_allowed_once_the_trees_url_receives_the_key(tmp_path: Path, endpoint: EmbeddingsServer,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    docs = write_tree(tmp_path, embedder_toml(endpoint.base_url))
    embedder_for(load_config(docs, trust_tree=True)).encode(["bread"])
    assert auths(endpoint) == {f"Bearer {OPENAI_KEY}"}
    endpoint.requests.clear()
    monkeypatch.setenv(TRUST_ENV, "1")  # CI's way
    embedder_for(load_config(docs)).encode(["flour"])
    assert auths(endpoint) == {f"Bearer {OPENAI_KEY}"}


def test_the_same_url_named_by_the_user_receives_the_key(tmp_path: Path, endpoint: EmbeddingsServer,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    docs = write_tree(tmp_path, 'strategy = "fixed"\n')
    user = tmp_path / "user" / "chunkscope.toml"
    user.parent.mkdir()
    user.write_text(embedder_toml(endpoint.base_url), encoding="utf-8")
    monkeypatch.setenv("CHUNKSCOPE_USER_CONFIG", str(user))
    cfg = load_config(docs)
    assert (cfg.origin("embedding.url"), cfg.origin("strategy"), cfg.user_source) == ("user", "tree", user)
    embedder_for(cfg).encode(["bread"])
    # On the command line too, over a tree that names another host.
    cli_cfg = load_config(write_tree(tmp_path / "fork", embedder_toml("https://collector.example")))
    embedder_for(cli_cfg, f"openai:{MODEL}", endpoint.base_url).encode(["water"])
    assert auths(endpoint) == {f"Bearer {OPENAI_KEY}"}


def test_a_key_kept_back_is_named_when_the_endpoint_asks_for_one(tmp_path: Path, keys: None) -> None:
    with EmbeddingsServer(fake_vectors, key=OPENAI_KEY) as srv:
        docs = write_tree(tmp_path, embedder_toml(srv.base_url))
        with pytest.raises(EmbedError) as err:
            embedder_for(load_config(docs)).encode(["bread"])
    msg = str(err.value)
    assert "HTTP 401" in msg and f"{TRUST_ENV}=1" in msg and str(docs / "chunkscope.toml") in msg
    assert OPENAI_KEY not in msg


def test_the_tree_cannot_choose_which_variable_is_sent(tmp_path: Path, keys: None,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", "ghp-secret")
    docs = write_tree(tmp_path, f'[embedder]\nmodel = "openai:text-embedding-3-small"\napi_key_env = "GITHUB_TOKEN"\n')
    assert "api_key_env" in (load_config(docs).embedder_spec().key_refusal or "")
    assert load_config(docs, trust_tree=True).embedder_spec().key_refusal is None
    # The default variable to the default host: what every user of OpenAI's API expects.
    plain = write_tree(tmp_path / "plain", '[embedder]\nmodel = "openai:text-embedding-3-small"\n')
    assert load_config(plain).embedder_spec().key_refusal is None


def test_the_cli_flag_allows_the_tree(tmp_path: Path, endpoint: EmbeddingsServer, capsys) -> None:
    docs = write_tree(tmp_path, embedder_toml(endpoint.base_url) + f'[qdrant]\npath = "{tmp_path / "store"}"\n')
    assert main(["query", str(docs), "what does bread need", "--json", "--threshold", "-1"]) == 0
    assert endpoint.requests and auths(endpoint) == {""}
    endpoint.requests.clear()
    capsys.readouterr()
    assert main(["query", str(docs), "how long does bread take", "--json", "--threshold", "-1", TRUST_FLAG]) == 0
    assert endpoint.requests and auths(endpoint) == {f"Bearer {OPENAI_KEY}"}
    assert OPENAI_KEY not in capsys.readouterr().out


# --- plain http and loopback ----------------------------------------------------------------------------------


@pytest.mark.parametrize(("url", "origin", "refused"), [
    ("http://127.0.0.1:8000/v1", "cli", False),
    ("http://localhost:8000/v1", "user", False),
    ("http://[::1]:8000/v1", "env", False),
    ("http://10.0.0.5:8000/v1", "cli", True),      # plain http off this machine: never, whoever named it
    ("http://embed.example.com/v1", "user", True),
    ("https://embed.example.com/v1", "user", False),
    ("https://embed.example.com/v1", "tree", True),
    ("https://api.openai.com/v1", "tree", False),  # the embedder's default host
])
def test_plain_http_carries_a_secret_only_to_loopback(url: str, origin, refused: bool) -> None:
    reason = secret_refusal(url, origin, tree_trusted=False, default_url="https://api.openai.com/v1")
    assert (reason is not None) == refused
    if refused and url.startswith("http:"):
        assert "loopback" in reason  # type: ignore[operator]


def test_loopback_is_this_machine_only() -> None:
    assert all(is_loopback(h) for h in ("localhost", "127.0.0.1", "127.1.2.3", "::1", "[::1]", "api.localhost"))
    assert not any(is_loopback(h) for h in ("localhost.example.com", "10.0.0.1", "0.0.0.0", "example.com", ""))


# --- the Qdrant key -------------------------------------------------------------------------------------------


class HeaderLog(LoopbackServer):
    """A server on 127.0.0.1 that records each request's ``api-key`` header and answers 401 (it wants a key)."""

    def __init__(self) -> None:
        super().__init__()
        self.keys: list[str | None] = []

    def answer(self, request: Request) -> Reply:
        self.keys.append(request.headers.get("api-key"))
        return Reply(401, {"status": {"error": "Must provide an API key"}})


def test_a_qdrant_url_from_the_trees_config_never_receives_the_key(tmp_path: Path, keys: None) -> None:
    pytest.importorskip("qdrant_client")
    from chunkscope.retrieval.engine import StoreError
    from chunkscope.retrieval.store import Store

    with HeaderLog() as server:
        docs = write_tree(tmp_path, f'[qdrant]\nurl = "{server.origin}"\n')
        target = load_config(docs).qdrant_target()
        assert (target.origin, target.api_key_env) == ("tree", None)
        with pytest.raises(StoreError, match=f"{TRUST_ENV}=1"):
            Store(docs, url=target.url, api_key_env=target.api_key_env)
        assert server.keys and set(server.keys) == {None}
        server.keys.clear()
        trusted = load_config(docs, trust_tree=True).qdrant_target()
        with pytest.raises(StoreError, match="refused the API key"):
            Store(docs, url=trusted.url, api_key_env=trusted.api_key_env)
        assert set(server.keys) == {QDRANT_KEY}


def test_qdrant_url_origins(tmp_path: Path, keys: None) -> None:
    docs = write_tree(tmp_path, '[qdrant]\nurl = "https://q.example:6333"\n')
    cfg = load_config(docs)
    assert cfg.qdrant_target("https://mine.example:6333").origin == "cli"
    assert cfg.qdrant_target("https://mine.example:6333").api_key_env == "QDRANT_API_KEY"
    assert load_config(write_tree(tmp_path / "bare", "")).qdrant_target(
        environ={"QDRANT_URL": "https://env.example"}).origin == "env"


# --- code named by the tree's config --------------------------------------------------------------------------


def chunker_tree(root: Path, where: str) -> Path:
    """A tree whose config names a chunker in the tree: importing it leaves a mark file."""
    docs = write_tree(root, where)
    (docs / "evil.py").write_text(
        "from pathlib import Path\n"
        "Path(__file__).with_name('IMPORTED').write_text('ran')\n"
        "def chunk(text):\n    return [text]\n", encoding="utf-8")
    return docs


@pytest.mark.parametrize("toml", [
    '[strategies.custom]\ncallable = "{evil}:chunk"\n',
    'strategy = "mine"\n[presets.mine]\nstrategy = "custom"\ncallable = "{evil}:chunk"\n',
])
def test_code_named_by_the_trees_config_runs_only_when_allowed(tmp_path: Path, toml: str,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(TRUST_ENV, raising=False)
    evil = tmp_path / "docs" / "evil.py"
    docs = chunker_tree(tmp_path, toml.format(evil=evil))
    cfg = load_config(docs)  # reading the config runs nothing
    name = "mine" if "presets" in toml else "custom"
    with pytest.raises(ParamError) as err:
        resolve_strategy(cfg, name)
    assert f"{TRUST_ENV}=1" in str(err.value) and "\n" not in str(err.value)
    assert not (docs / "IMPORTED").exists()
    # The same callable given by the user (the command line's --param) is the user's choice.
    assert resolve_strategy(cfg, "custom", {"callable": f"{evil}:chunk"}).name == "custom"
    assert (docs / "IMPORTED").exists()
    (docs / "IMPORTED").unlink()
    assert resolve_strategy(load_config(docs, trust_tree=True), name).name == "custom"
    assert (docs / "IMPORTED").exists()


def test_plain_lint_on_an_untrusted_tree_runs_none_of_its_code(tmp_path: Path, capsys,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(TRUST_ENV, raising=False)
    evil = tmp_path / "docs" / "evil.py"
    docs = chunker_tree(tmp_path, f'strategy = "custom"\n[strategies.custom]\ncallable = "{evil}:chunk"\n')
    assert main(["lint", str(docs)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"pass {TRUST_FLAG} (or set {TRUST_ENV}=1)" in err
    assert not (docs / "IMPORTED").exists()
    assert main(["lint", str(docs), TRUST_FLAG]) == 0
    assert (docs / "IMPORTED").exists()


# --- config files: the user's own, encodings, relative store paths ------------------------------------------------


def test_a_config_that_is_not_utf8_is_one_line_naming_it(tmp_path: Path, capsys) -> None:
    docs = write_tree(tmp_path, "")
    (docs / "chunkscope.toml").write_bytes('site_url = "https://caf\u00e9.example"\n'.encode("latin-1"))
    with pytest.raises(ConfigError, match=r"chunkscope\.toml: not UTF-8 \(byte 0xe9 at line 1\)"):
        load_config(docs)
    assert main(["stats", str(docs)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "chunkscope.toml: not UTF-8" in err


def test_a_relative_store_path_belongs_to_the_file_that_names_it(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    docs = write_tree(tmp_path, '[qdrant]\npath = "../.vectors"\n')
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert Path(load_config(docs).qdrant_target().path or "") == docs / ".." / ".vectors"


def test_the_trees_config_wins_over_the_users_table_by_table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    user = tmp_path / "user.toml"
    user.write_text('[query]\nk = 9\nthreshold = 0.2\n[qdrant]\nurl = "https://mine.example"\n', encoding="utf-8")
    monkeypatch.setenv("CHUNKSCOPE_USER_CONFIG", str(user))
    cfg = load_config(write_tree(tmp_path, '[query]\nk = 3\n[qdrant]\npath = "store"\n'))
    assert (cfg.k, cfg.threshold) == (3, 0.2)
    assert (cfg.origin("query.k"), cfg.origin("query.threshold")) == ("tree", "user")
    assert cfg.qdrant_target().url is None  # the tree names its own store: the user's server is not half-kept
    user.write_text("nonsense = 1\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=rf"{user.name}: unknown key 'nonsense'"):
        load_config(tmp_path / "docs")


# --- the README's CI recipe and the pre-commit hook ----------------------------------------------------------------

REPO = Path(__file__).resolve().parents[1]


def test_the_pre_commit_hook_runs_no_code_from_the_tree(tmp_path: Path, capsys,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    import yaml

    monkeypatch.delenv(TRUST_ENV, raising=False)
    (hook,) = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))
    program, *command = hook["entry"].split()
    assert program == "chunkscope" and TRUST_FLAG not in hook["args"]
    evil = tmp_path / "docs" / "evil.py"
    docs = chunker_tree(tmp_path, f'strategy = "custom"\n[strategies.custom]\ncallable = "{evil}:chunk"\n')
    monkeypatch.chdir(docs)  # pre-commit runs the hook at the repository's root: args ["."]
    assert main([*command, *hook["args"]]) == 2
    assert TRUST_FLAG in capsys.readouterr().err and not (docs / "IMPORTED").exists()


def test_the_readmes_ci_recipe_installs_nothing_from_the_checkout_and_runs_none_of_its_code(
        tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch) -> None:
    import shlex

    import yaml

    monkeypatch.delenv(TRUST_ENV, raising=False)
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    recipe = readme.split("# .github/workflows/chunks.yml\n", 1)[1].split("```", 1)[0]
    steps = yaml.safe_load(recipe)["jobs"]["lint-chunks"]["steps"]
    runs = [s["run"] for s in steps if "run" in s]
    install = next(r for r in runs if r.startswith("pip install"))
    assert "@" in install and " ./" not in install and " ." not in install  # pinned, never the pull request's tree
    lint = shlex.split(next(r for r in runs if r.startswith("chunkscope lint")))
    assert TRUST_FLAG not in lint and not any("CHUNKSCOPE_TRUST" in str(s.get("env", "")) for s in steps)
    evil = tmp_path / "docs" / "evil.py"
    docs = chunker_tree(tmp_path, f'[presets.mine]\nstrategy = "custom"\ncallable = "{evil}:chunk"\n')
    monkeypatch.chdir(docs.parent)
    # The recipe's own command, its strategy swapped for the tree's preset (which names the tree's code).
    argv = [a if a != "section-sentence" else "mine" for a in lint[1:]]
    assert main(argv) == 2
    assert TRUST_FLAG in capsys.readouterr().err and not (docs / "IMPORTED").exists()
