"""Configuration: ``chunkscope.toml`` or ``[tool.chunkscope]`` in pyproject.toml, strictly validated.

Found nearest-first: ``--config FILE``, else the docs root, else the working directory. Unknown keys are errors
that name the file and the key, so a typo never silently does nothing. Every field is documented in
``FIELDS`` (the README's configuration section is generated from the same words).

The user's own ``chunkscope.toml`` (in the platform's config folder, `user_config_path`) is read first and the
tree's file over it, table by table. `Config.origins` records which file gave each setting, because a docs tree's
file is untrusted input: what it may do is decided in `chunkscope.config.trust`.

Example::

    strategy = "mine"                 # default strategy or preset for every command
    site_url = "https://book.example.com/docs"
    ignore = ["drafts/**"]

    [strategies.recursive]            # defaults for a strategy's parameters
    chunk_size = 384

    [presets.mine]                    # a named strategy + parameters
    strategy = "section-sentence"
    max_tokens = 384
    embed_prefix = "breadcrumb"       # every strategy's: a header put before each chunk for embedding only

    [citations]                       # citation templates by strategy or preset
    section = "Source: Chapter {chapter_number}, Section {section_number} - {section_title}"

    [embedding]
    model = "all-MiniLM-L6-v2"

    [qdrant]
    url = "http://localhost:6333"      # a server; the API key comes from QDRANT_API_KEY only

    [query]
    k = 5
    threshold = 0.7

    [lint]
    select = ["oversize", "split-fence"]
    ignore = []
    severity = { undersize = "error" }
    thresholds = { embed-truncation = 256 }
    per_path_ignores = { "drafts/*.md" = ["oversize"] }
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from chunkscope.config.llm import LLM_FIELD, LLM_KEYS, check_llm_table, llm_spec
from chunkscope.config.rerank import RERANK_FIELD, RERANK_KEYS, check_rerank_table, rerank_spec
from chunkscope.config.trust import HOW_TO_ALLOW, Origin, code_refusal, secret_refusal, trust_from_environment
from chunkscope.config.values import seconds_problem
from chunkscope.chunking.params import ConstraintError, ParamError
from chunkscope.chunking.registry import UnknownStrategy, get_strategy, is_strategy_name, strategy_class, strategy_names
from chunkscope.chunking.strategy import Strategy
from chunkscope.embedding.backends.openai import OPENAI_URL
from chunkscope.embedding.registry import parse_embedder
from chunkscope.embedding.spec import DEFAULT_API_KEY_ENV, EmbedderSpec, EmbedderSpecError
from chunkscope.retrieval.search_modes import SEARCH_MODES
from chunkscope.site.config import SITE_KEYS, SiteConfigError, check_site_settings

if TYPE_CHECKING:
    from chunkscope.llm.chat import ChatSpec
    from chunkscope.retrieval.parents import ParentSpec
    from chunkscope.retrieval.rerankers.base import RerankSpec

CONFIG_NAME = "chunkscope.toml"
#: The variable naming the user's own config file, for users who keep it elsewhere (and hermetic tests).
USER_CONFIG_ENV = "CHUNKSCOPE_USER_CONFIG"
QDRANT_API_KEY_ENV = "QDRANT_API_KEY"

#: Top-level keys and what they mean.
FIELDS: dict[str, str] = {
    "strategy": "default strategy or preset name for every command (default: the built-in preset `default`, "
                "recursive sized to the embedder's window)",
    "site_url": "base URL of the published site; citations link to site_url + page route + #anchor",
    "ignore": "glob patterns (relative to the docs root) of files and folders to skip",
    "max_file_bytes": "files larger than this are reported and skipped (default 4 MiB)",
    "strategies": "per-strategy parameter defaults: [strategies.NAME] key = value",
    "presets": "named strategy + parameter sets: [presets.NAME] strategy = ..., key = value, and optionally "
               "search = dense|keyword|hybrid (how its questions are matched, as tune chose it)",
    "citations": "citation templates by strategy or preset name, over the chunk's metadata",
    "embedder": "model (all-MiniLM-L6-v2, st:PATH, openai:MODEL), url (an OpenAI-compatible endpoint), "
                "api_key_env (the variable holding its key; default OPENAI_API_KEY), max_tokens, device (cpu/cuda), "
                "batch_size, runtime (onnx/torch, for the default model), timeout (seconds an endpoint may take to "
                "answer; default 60)",
    "embedding": "the old name of [embedder] (still read)",
    "qdrant": "url of a Qdrant server (else QDRANT_URL; API key from QDRANT_API_KEY only) or path of a local "
              "store folder (relative to this file), not both; timeout in seconds; engine of the local store: "
              "edge (Qdrant Edge, the default) or local (qdrant-client's local mode, the fallback while Edge is "
              "beta)",
    "query": "k, threshold (default: the embedder's own) and search (dense, keyword, hybrid) for query/eval",
    "rerank": RERANK_FIELD,
    "retrieval": "parent: what each hit returns, small-to-big: none (the chunk), section, window:N (N tokens each "
                 "side) or page; results sharing a parent are merged (a preset may name its own parent)",
    "llm": LLM_FIELD,
    "lint": "select, ignore, severity, thresholds, per_path_ignores",
    "tui": "keymap: binding id -> keys; wrap: wrap long source lines (default true)",
    "site": "the Docusaurus site over its docusaurus.config: " + "; ".join(f"{k}: {v}" for k, v in SITE_KEYS.items()),
}
_EMBEDDER_KEYS = {"model", "url", "api_key_env", "max_tokens", "device", "batch_size", "runtime", "timeout"}
_SECTION_KEYS = {
    "embedder": _EMBEDDER_KEYS,
    "embedding": _EMBEDDER_KEYS,
    "qdrant": {"url", "path", "timeout", "engine"},
    "query": {"k", "threshold", "search"},
    "rerank": set(RERANK_KEYS),
    "retrieval": {"parent"},
    "llm": set(LLM_KEYS),
    "lint": {"select", "ignore", "severity", "thresholds", "per_path_ignores"},
    "tui": {"keymap", "wrap"},
    "site": set(SITE_KEYS),
}


class ConfigError(Exception):
    """Configuration cannot be used; the message names the file and the problem."""


@dataclass
class Config:
    """Validated configuration with defaults filled in."""

    source: Path | None = None
    #: The built-in "default" preset unless a file names another: `recursive` sized to the embedder's window.
    strategy: str = "default"
    site_url: str = ""
    ignore: list[str] = field(default_factory=list)
    max_file_bytes: int = 4 * 1024 * 1024
    strategies: dict[str, dict[str, Any]] = field(default_factory=dict)
    presets: dict[str, dict[str, Any]] = field(default_factory=dict)
    citations: dict[str, str] = field(default_factory=dict)
    embedding: dict[str, Any] = field(default_factory=dict)
    qdrant: dict[str, Any] = field(default_factory=dict)
    query: dict[str, Any] = field(default_factory=dict)
    rerank: dict[str, Any] = field(default_factory=dict)
    retrieval: dict[str, Any] = field(default_factory=dict)
    llm: dict[str, Any] = field(default_factory=dict)
    lint: dict[str, Any] = field(default_factory=dict)
    tui: dict[str, Any] = field(default_factory=dict)
    site: dict[str, Any] = field(default_factory=dict)
    #: Settings given on the command line over the file's (``"query.threshold"``…), so a view can say where a
    #: value came from.
    from_command_line: frozenset[str] = frozenset()
    #: Where each setting read from a file came from (``"embedding.url"``, ``"qdrant.url"``, ``"strategy"`` ->
    #: ``"tree"`` or ``"user"``); `with_command_line` marks its own ``"cli"``. See `origin`.
    origins: dict[str, Origin] = field(default_factory=dict)
    #: The user allowed the tree's config (`chunkscope.config.trust.TRUST_FLAG` / ``TRUST_ENV``): secrets may go
    #: to its URLs and its code may run.
    trust_tree: bool = False
    #: The user's own config file, when one was read under the tree's.
    user_source: Path | None = None

    def with_command_line(self, **values: Any) -> "Config":
        """A copy with ``section__key=value`` settings from the command line (None: not given)."""
        import copy

        cfg = copy.deepcopy(self)
        given = set(cfg.from_command_line)
        for name, value in values.items():
            if value is None:
                continue
            section, key = name.split("__", 1)
            getattr(cfg, section)[key] = value
            given.add(f"{section}.{key}")
            cfg.origins[f"{section}.{key}"] = "cli"
        cfg.from_command_line = frozenset(given)
        return cfg

    def origin(self, key: str) -> Origin:
        """Who set ``key`` (``"embedding.url"``): the tree's file, the user's, the command line, or the default."""
        return self.origins.get(key, "default")

    @property
    def embed_model(self) -> str:
        """The embedder as the user wrote it (``[embedder] model``)."""
        return str(self.embedding.get("model") or "all-MiniLM-L6-v2")

    def embedder_spec(self, model: str | None = None, url: str | None = None) -> EmbedderSpec:
        """The embedder: ``model``/``url`` (the caller's explicit choice, e.g. command-line flags) over
        ``[embedder]``. An explicit model without a url does not inherit the config's url (it may be local)."""
        e = self.embedding
        if model:
            spec = parse_embedder(model, url, api_key_env=e.get("api_key_env"), max_tokens=e.get("max_tokens"))
        else:
            spec = parse_embedder(e.get("model"), url or e.get("url"), api_key_env=e.get("api_key_env"),
                                  max_tokens=e.get("max_tokens"))
        if spec.url is None:
            return spec
        url_origin: Origin = "cli" if url else (self.origin("embedding.url") if e.get("url") else "default")
        refusal = secret_refusal(spec.url, url_origin, tree_trusted=self.trust_tree, default_url=OPENAI_URL,
                                 source=self.source)
        if refusal is None and spec.api_key_env != DEFAULT_API_KEY_ENV and self._untrusted("embedding.api_key_env"):
            # The tree would choose which of the user's variables is sent: any secret, to the default host.
            refusal = (f"{self.source}: api_key_env = {spec.api_key_env!r} is named by the docs tree's config; "
                       f"{HOW_TO_ALLOW}")
        return replace(spec, key_refusal=refusal) if refusal else spec

    def reranker(self, model: str | None = None, url: str | None = None, depth: int | None = None
                 ) -> RerankSpec | None:
        """The reranker after the search: ``model``/``url``/``depth`` (the caller's) over ``[rerank]``."""
        return rerank_spec(self.rerank, self.origin, trust_tree=self.trust_tree, source=self.source, model=model,
                           url=url, depth=depth)

    def chat_model(self, model: str | None = None, url: str | None = None) -> ChatSpec | None:
        """The chat model of the LLM stages: ``model``/``url`` (the caller's) over ``[llm]``; None when none is named.

        Raises:
            LlmError: the model or URL is malformed.
        """
        return llm_spec(self.llm, self.origin, trust_tree=self.trust_tree, source=self.source, model=model, url=url)

    def parent(self, given: str | None = None, preset: str | None = None) -> ParentSpec:
        """What a hit returns (`chunkscope.retrieval.parents`): ``given`` (the caller's), else the preset's
        ``parent``, else ``[retrieval] parent``, else ``none``."""
        from chunkscope.retrieval.parents import parse_parent  # here: the app's start-up does without retrieval

        return parse_parent(given or preset or self.retrieval.get("parent"))

    def _untrusted(self, key: str) -> bool:
        return self.origin(key) == "tree" and not self.trust_tree

    @property
    def k(self) -> int:
        return int(self.query.get("k", 5))

    @property
    def threshold(self) -> float | None:
        """``[query] threshold`` when set; None means: the embedder's own (`EmbedderSpec.default_threshold`)."""
        t = self.query.get("threshold")
        return None if t is None else float(t)

    @property
    def search_mode(self) -> str:
        return str(self.query.get("search", "dense"))

    def qdrant_target(self, url: str | None = None, environ: Mapping[str, str] | None = None) -> QdrantTarget:
        """Where the vectors live: ``url`` (the caller's explicit choice), else ``[qdrant] url``, else
        ``[qdrant] path`` (a local store), else the environment's ``QDRANT_URL``, else the default local store.

        The configuration beats the environment: a project that names its store keeps it in a shell that
        exports ``QDRANT_URL`` for other work.
        """
        q = self.qdrant
        timeout = float(q.get("timeout", 3.0))
        engine = str(q.get("engine", "edge"))
        origin: Origin
        if url:
            target, origin = url, "cli"
        elif q.get("url") or q.get("path"):
            if not q.get("url"):
                return QdrantTarget(url=None, path=q["path"], timeout=timeout, engine=engine)
            target, origin = q["url"], self.origin("qdrant.url")
        else:
            env = (os.environ if environ is None else environ).get("QDRANT_URL", "").strip()
            if not env:
                return QdrantTarget(url=None, path=None, timeout=timeout, engine=engine)
            target, origin = env, "env"
        refusal = secret_refusal(target, origin, tree_trusted=self.trust_tree, source=self.source)
        return QdrantTarget(url=target, path=None, timeout=timeout, origin=origin,
                            api_key_env=None if refusal else QDRANT_API_KEY_ENV, key_refusal=refusal)


@dataclass(frozen=True)
class QdrantTarget:
    """The vector store to open: a server ``url``, a local ``path``, or neither (the per-tree local store)."""

    url: str | None
    path: str | None
    timeout: float = 3.0
    #: Who named ``url`` (`chunkscope.config.trust.Origin`).
    origin: Origin = "default"
    #: The variable holding the server's API key, None when no key may go there (`key_refusal` says why).
    api_key_env: str | None = QDRANT_API_KEY_ENV
    key_refusal: str | None = None
    #: The local store's engine (``[qdrant] engine``): ``edge`` or ``local``; unused with ``url``.
    engine: str = "edge"


def find_config(docs: Path | None, explicit: str | Path | None = None) -> Path | None:
    """The config file to use: explicit, else nearest-first in the docs root, the Docusaurus site root whose
    ``docs/`` folder that is, then the working directory.

    A single file's docs root is its tree's (`chunkscope.document.loader.docs_root_of`), so a file alone is read with the
    configuration its whole tree is read with.
    """
    if explicit:
        p = Path(explicit)
        if not p.is_file():
            raise ConfigError(f"{explicit}: no such config file")
        return p
    from chunkscope.document.loader import docs_root_of, is_site_root, site_docs_above

    places = []
    if docs is not None:
        # A folder inside a site's docs is read as part of them (`load_docs`), so it has their config too.
        root = (site_docs_above(docs) or docs) if docs.is_dir() else docs_root_of(docs)
        places.append(root)
        site = Path(os.path.abspath(root)).parent
        if root.name == "docs" and is_site_root(site):
            places.append(site)
        elif site.name == "versioned_docs" and is_site_root(site.parent):  # a release's folder: the site's config
            places.append(site.parent)
    places.append(Path.cwd())
    for folder in places:
        cand = folder / CONFIG_NAME
        if cand.is_file():
            return cand
        py = folder / "pyproject.toml"
        if py.is_file():
            import tomllib  # only when there is a file to read (start-up time)

            try:
                data = tomllib.loads(py.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
                continue  # not a file of ours to judge: a pyproject.toml chunkscope cannot read is skipped
            if isinstance(data.get("tool"), dict) and "chunkscope" in data["tool"]:
                return py
    return None


def user_config_path(environ: Mapping[str, str] | None = None) -> Path:
    """The user's own ``chunkscope.toml``: ``CHUNKSCOPE_USER_CONFIG``, else the platform's config folder
    (``~/.config/chunkscope/chunkscope.toml`` on Linux). It need not exist."""
    named = (os.environ if environ is None else environ).get(USER_CONFIG_ENV, "").strip()
    if named:
        return Path(named).expanduser()
    from platformdirs import user_config_dir

    return Path(user_config_dir("chunkscope", appauthor=False)) / CONFIG_NAME


def load_config(docs: str | Path | None = None, explicit: str | Path | None = None, *,
                trust_tree: bool = False) -> Config:
    """Find, read and validate the configuration (defaults when there is none): the user's own file
    (`user_config_path`) under the tree's (`find_config`), table by table.

    Args:
        trust_tree: the user allows the tree's config (the command line's ``--trust-tree-config``); the
            environment's ``CHUNKSCOPE_TRUST_TREE_CONFIG=1`` allows it too.
    """
    trusted = trust_tree or trust_from_environment()
    user_path: Path | None = user_config_path()
    assert user_path is not None
    path = find_config(Path(docs) if docs is not None else None, explicit)
    if not user_path.is_file() or (path is not None and path.resolve() == user_path.resolve()):
        user_path = None  # none, or the tree's file is the user's own (its folder is the working directory)
    user = _read_file(user_path) if user_path is not None else {}
    tree = _read_file(path) if path is not None else {}
    if user:
        parse_config(user, user_path)  # the user's own mistakes are named in the user's own file
    data, origins = _layered(user, tree)
    if not trusted:
        _mark_tree_code(data, origins, path)
    cfg = parse_config(data, path if path is not None else user_path)
    cfg.origins, cfg.trust_tree, cfg.user_source = origins, trusted, user_path
    if path is None:
        cfg.source = user_path
    return cfg


def _read_file(path: Path) -> dict[str, Any]:
    """A config file's table (``[tool.chunkscope]`` of a pyproject.toml), with its relative paths made its own."""
    import tomllib

    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise ConfigError(f"{path}: not UTF-8 (byte 0x{raw[exc.start]:02x} at line {line}); "
                          "save it as UTF-8") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None
    if path.name == "pyproject.toml":
        tool = data.get("tool", {})
        data = tool.get("chunkscope", {}) if isinstance(tool, dict) else {}
    qdrant = data.get("qdrant")
    if isinstance(qdrant, dict) and isinstance(qdrant.get("path"), str) and qdrant["path"]:
        # A store folder is the file's, wherever the command runs: one tree, one store.
        local = Path(qdrant["path"]).expanduser()
        qdrant["path"] = str(local if local.is_absolute() else Path(os.path.abspath(path)).parent / local)
    return data


def _layered(user: dict[str, Any], tree: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Origin]]:
    """The tree's settings over the user's, table by table (a key the tree gives replaces the user's value
    whole), and which file gave each (``"embedding.url"`` -> ``"tree"``)."""
    data: dict[str, Any] = {}
    origins: dict[str, Origin] = {}
    layers: tuple[tuple[dict[str, Any], Origin], ...] = ((user, "user"), (tree, "tree"))
    for layer, origin in layers:
        for key, value in layer.items():
            attr = "embedding" if key == "embedder" else key  # the attribute both names fill
            if isinstance(value, dict) and isinstance(data.get(key), dict):
                if key == "qdrant" and ("url" in value or "path" in value):
                    # The tree names its own store: the user's location goes whole, never half of each.
                    data[key] = {k: v for k, v in data[key].items() if k not in ("url", "path")}
                data[key] = {**data[key], **value}
            else:
                data[key] = dict(value) if isinstance(value, dict) else value
            origins[attr] = origin
            if isinstance(value, dict):
                origins.update({f"{attr}.{sub}": origin for sub in value})
    return data, origins


def _mark_tree_code(data: dict[str, Any], origins: dict[str, Origin], path: Path | None) -> None:
    """Mark every ``callable`` the tree's file names as a `RefusedCallable`, which nothing imports."""
    strategies, presets = data.get("strategies"), data.get("presets")
    tables: list[tuple[str, str, Any]] = []
    if isinstance(strategies, dict):
        tables.append(("strategies.custom", "[strategies.custom]", strategies.get("custom")))
    if isinstance(presets, dict):
        tables += [(f"presets.{name}", f"[presets.{name}]", table) for name, table in presets.items()]
    for key, where, table in tables:
        if origins.get(key) == "tree" and isinstance(table, dict) and isinstance(table.get("callable"), str):
            spec = table["callable"]
            # Imported only here: the custom strategy's module loads the tokenizers, which start-up does without.
            from chunkscope.chunking.strategies.custom import RefusedCallable

            table["callable"] = RefusedCallable(spec, code_refusal(spec, where, path))


def _want(cond: bool, path: Path | None, msg: str) -> None:
    if not cond:
        raise ConfigError(f"{path or 'config'}: {msg}")


def parse_config(data: dict[str, Any], path: Path | None = None) -> Config:
    """Validate a config mapping: unknown keys, wrong types and bad strategy parameters are errors."""
    cfg = Config(source=path)
    for key, value in data.items():
        _want(key in FIELDS, path, f"unknown key {key!r} (known: {', '.join(FIELDS)})")
        if key in _SECTION_KEYS:
            _want(isinstance(value, dict), path, f"[{key}] must be a table")
            for sub in value:
                _want(sub in _SECTION_KEYS[key], path, f"unknown key {key}.{sub} (known: {', '.join(sorted(_SECTION_KEYS[key]))})")
            if key == "tui" and "wrap" in value:
                _want(isinstance(value["wrap"], bool), path, "tui.wrap must be true or false")
            if key in ("embedder", "embedding"):
                # One table under either name; [embedder] wins where both give a key.
                _want(not (key == "embedding" and "embedder" in data and set(value) & set(data["embedder"])), path,
                      "give the embedder in [embedder] only ([embedding] is its old name)")
                cfg.embedding = {**cfg.embedding, **value}
                continue
            setattr(cfg, key, dict(value))
        elif key in ("strategy", "site_url"):
            _want(isinstance(value, str), path, f"{key} must be a string")
            setattr(cfg, key, value)
        elif key == "ignore":
            _want(isinstance(value, list) and all(isinstance(x, str) for x in value), path, "ignore must be a list of glob strings")
            cfg.ignore = list(value)
        elif key == "max_file_bytes":
            _want(isinstance(value, int) and value > 0, path, "max_file_bytes must be a positive integer")
            cfg.max_file_bytes = value
        elif key == "citations":
            _want(isinstance(value, dict) and all(isinstance(v, str) for v in value.values()), path, "[citations] maps names to template strings")
            cfg.citations = dict(value)
        elif key == "strategies":
            _want(isinstance(value, dict), path, "[strategies] must be a table of tables")
            for name, params in value.items():
                if not is_strategy_name(name):
                    _want(False, path, f"[strategies.{name}]: unknown strategy (choose one of {', '.join(strategy_names())})")
                _want(isinstance(params, dict), path, f"[strategies.{name}] must be a table")
                _check_params(name, params, path, f"[strategies.{name}]")
                cfg.strategies[name] = dict(params)
        elif key == "presets":
            _want(isinstance(value, dict), path, "[presets] must be a table of tables")
            for name, preset in value.items():
                _want(isinstance(preset, dict), path, f"[presets.{name}] must be a table")
                strat = preset.get("strategy")
                if not (isinstance(strat, str) and is_strategy_name(strat)):
                    _want(False, path, f"[presets.{name}] needs strategy = one of {', '.join(strategy_names())}")
                _want(not is_strategy_name(name), path, f"[presets.{name}]: a preset cannot take a strategy's name")
                if "parent" in preset:  # what its hits return (small-to-big), not a parameter
                    _check_parent(preset["parent"], path, f"[presets.{name}] parent")
                if "search" in preset:  # how the preset's questions are matched (what `tune` chose), not a parameter
                    _want(preset["search"] in SEARCH_MODES, path,
                          f"[presets.{name}] search must be one of {', '.join(SEARCH_MODES)}")
                cfg.presets[name] = dict(preset)
    # A preset is used on top of its strategy's [strategies.NAME] defaults: check what the two make together
    # (each can be fine alone and contradict the other), whichever table the file gives first.
    for name, preset in cfg.presets.items():
        strat = preset["strategy"]
        own = {k: v for k, v in preset.items() if k not in PRESET_PIPELINE_KEYS}
        params = {**cfg.strategies.get(strat, {}), **own}
        _check_params(strat, params, path, f"[presets.{name}]")
    try:
        cfg.embedder_spec()
    except EmbedderSpecError as exc:
        raise ConfigError(f"{path or 'config'}: [embedder]: {exc}") from None
    # The presets first: a strategy name that is not built in is looked for among every installed package's entry
    # points (importlib.metadata), which the app's start-up on the default preset does without.
    if preset_named(cfg, cfg.strategy) is None and not is_strategy_name(cfg.strategy):
        raise ConfigError(f"{path or 'config'}: strategy {cfg.strategy!r} is neither a strategy nor a preset")
    _check_qdrant(cfg.qdrant, path)
    if "parent" in cfg.retrieval:
        _check_parent(cfg.retrieval["parent"], path, "retrieval.parent")
    problem = check_rerank_table(cfg.rerank)
    _want(problem is None, path, problem or "")
    problem = check_llm_table(cfg.llm)
    _want(problem is None, path, problem or "")
    try:
        check_site_settings(cfg.site)
    except SiteConfigError as exc:
        raise ConfigError(f"{path or 'config'}: {exc}") from None
    problem = seconds_problem(cfg.embedding, "embedder")
    _want(problem is None, path, problem or "")
    q = cfg.query
    if "k" in q:
        _want(isinstance(q["k"], int) and q["k"] > 0, path, "query.k must be a positive integer")
    if "threshold" in q:
        _want(isinstance(q["threshold"], (int, float)) and -1 <= q["threshold"] <= 1, path, "query.threshold must be a number in -1..1")
    if "search" in q:
        _want(q["search"] in SEARCH_MODES, path, f"query.search must be one of {', '.join(SEARCH_MODES)}")
    return cfg


#: The preset used when neither the command line nor a config file names a strategy.
DEFAULT_PRESET = "default"


def preset_named(cfg: Config, name: str) -> dict[str, Any] | None:
    """The preset ``name``: the configuration's own (``[presets.NAME]``), else the built-in ``default`` (which a
    file may redefine), else None. The built-in is not one of ``cfg.presets``: those are the ones a file wrote."""
    if name in cfg.presets:
        return cfg.presets[name]
    if name == DEFAULT_PRESET:
        return fitted_preset(cfg.embedder_spec().max_tokens)
    return None


def choosable_presets(cfg: Config) -> dict[str, dict[str, Any]]:
    """Every preset a user can pick by name: the file's own, then the built-in ``default`` unless a file redefined
    it (a picker or a palette lists these)."""
    out = dict(cfg.presets)
    out.setdefault(DEFAULT_PRESET, fitted_preset(cfg.embedder_spec().max_tokens))
    return out


def fitted_preset(embedder_tokens: int) -> dict[str, Any]:
    """The built-in ``default`` preset: seed 004's `recursive` splitter with chunks the embedder reads whole.

    The seed's own 512 cl100k tokens (still what ``-s recursive`` gives) are twice what all-MiniLM-L6-v2 reads
    (256 word pieces), so nearly half of every chunk was never embedded. The size is counted in cl100k tokens, and
    code costs more word pieces per cl100k token than prose, so it is chosen where code-heavy docs fit too. Measured
    with no configuration (`lint`, chunks past MiniLM's window; dense `eval` on bench/rust_book_queries.jsonl):

    ======================  ===========  =================  ======  =====  ==============
    size / overlap          Rust book    prettier's docs     hit@5   MRR    passage IoU@5
    ======================  ===========  =================  ======  =====  ==============
    512 / 50 (seed 004)     91%          —                  0.86    0.713  —
    200 / 50                1%           16%                0.92    0.782  0.230
    170 / 50 (this)         0.3%         4%                 0.94    0.781  0.202
    ======================  ===========  =================  ======  =====  ==============

    Other windows scale by the same ratio of cl100k tokens to word pieces, never above the seed's size.
    """
    size = max(32, min(512, embedder_tokens * 170 // 256))
    return {"strategy": "recursive", "chunk_size": size, "chunk_overlap": min(50, size // 3)}


#: Citations of the built-in ``default`` preset: the page's title and the heading. Seed 004's own template
#: (``{chapter_id} › {heading}``, kept for ``-s recursive``) names a file stem where a site has no chapters
#: ("ignore › Ignoring Files" for prettier's "Ignoring Code" page).
DEFAULT_CITATION = "{title} › {heading}"


#: A preset's keys that are no strategy parameter: how its questions are matched, what its hits return.
PRESET_PIPELINE_KEYS = ("strategy", "search", "parent")


def _check_parent(value: Any, path: Path | None, where: str) -> None:
    _want(isinstance(value, str), path, f"{where} must be a string: none, section, window:N or page")
    from chunkscope.retrieval.parents import ParentError, parse_parent  # here: most configs name no parent

    try:
        parse_parent(value)
    except ParentError as exc:
        raise ConfigError(f"{path or 'config'}: {where}: {exc}") from None


def _check_qdrant(q: dict[str, Any], path: Path | None) -> None:
    for key in ("url", "path"):
        if key in q:
            _want(isinstance(q[key], str), path, f"qdrant.{key} must be a string")
    problem = seconds_problem(q, "qdrant")
    _want(problem is None, path, problem or "")
    _want(not (q.get("url") and q.get("path")), path, "give qdrant.url or qdrant.path, not both")
    if "engine" in q:
        _want(q["engine"] in ("edge", "local"), path, 'qdrant.engine must be "edge" or "local"')


def _check_params(strategy: str, params: dict[str, Any], path: Path | None, where: str) -> None:
    if strategy == "custom":
        from chunkscope.chunking.strategies.custom import RefusedCallable  # the strategy's module, on its own use

        if not params.get("callable") or isinstance(params["callable"], RefusedCallable):
            return  # a custom strategy's callable is checked when it is used (a tree's, refused then)
    try:
        strategy_class(strategy)(**params)
    except (ParamError, UnknownStrategy) as exc:
        raise ConfigError(f"{path or 'config'}: {where}: {exc}") from None


@dataclass(frozen=True)
class ResolvedStrategy:
    """A strategy ready to use, with the name people will see for it."""

    label: str
    strategy: Strategy
    citation_template: str
    #: The preset's search mode (``search`` in its table), None when it names none.
    search: str | None = None
    #: The preset's parent (``parent`` in its table: `chunkscope.retrieval.parents`), None when it names none.
    parent: str | None = None

    @property
    def name(self) -> str:
        return self.strategy.name

    @property
    def params(self) -> dict[str, Any]:
        return self.strategy.params

    def fingerprint(self) -> str:
        """Stable id of the strategy and its parameters (collection names, caches)."""
        blob = json.dumps({"strategy": self.strategy.name, "params": self.strategy.params}, sort_keys=True, default=str)
        import hashlib  # here: the app's start-up never needs it

        return hashlib.sha1(blob.encode()).hexdigest()[:10]


def resolve_strategy(cfg: Config, name: str | None = None, params: dict[str, Any] | None = None) -> ResolvedStrategy:
    """Strategy or preset by name (default from config), with config defaults and then ``params`` applied."""
    name = name or cfg.strategy
    params = dict(params or {})
    search = parent = None
    found = preset_named(cfg, name)
    if found is not None:
        preset = dict(found)
        strat = preset.pop("strategy")
        search = preset.pop("search", None)
        parent = preset.pop("parent", None)
        merged = {**cfg.strategies.get(strat, {}), **preset, **params}
        label = name
    else:
        strat = name
        strategy_class(strat)  # raises UnknownStrategy with the list of names
        merged = {**cfg.strategies.get(strat, {}), **params}
        label = strat
    if params:
        label += "(" + ",".join(f"{k}={v}" for k, v in params.items()) + ")"
    try:
        strategy = get_strategy(strat, **merged)
    except ConstraintError as exc:
        # A value given here against one from the config file: say which one the file set, or it looks invented.
        from_file = [n for n in exc.names if n in merged and n not in params]
        if params and from_file and cfg.source is not None:
            n = from_file[0]
            raise exc.with_note(f"{n} = {exc.values[n]} is set in {cfg.source}") from None
        raise
    if strategy.uses_contexts:
        supply_contexts(cfg, strategy)
    builtin_default = name == DEFAULT_PRESET and DEFAULT_PRESET not in cfg.presets
    template = (cfg.citations.get(name) or (DEFAULT_CITATION if builtin_default else None) or cfg.citations.get(strat)
                or type(strategy).citation_template)
    return ResolvedStrategy(label, strategy, template, search, parent)


def supply_contexts(cfg: Config, strategy: Strategy) -> None:
    """Give a strategy whose prefix is ``llm`` the cached contexts of the configured chat model.

    Raises:
        ParamError: no ``[llm] model`` is configured (said before any document is chunked).
    """
    spec = cfg.chat_model()
    if spec is None:
        raise ParamError(f"{strategy.name}: embed_prefix = llm needs a chat model: set [llm] model = "
                         "\"openai:MODEL\" (and url for a local server) in chunkscope.toml")
    from chunkscope.llm.contextual import CachedContexts

    strategy.use_contexts(CachedContexts(spec))
