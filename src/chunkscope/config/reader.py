"""Configuration: ``chunkscope.toml`` or ``[tool.chunkscope]`` in pyproject.toml, strictly validated.

Found nearest-first: ``--config FILE``, else the docs root, else the working directory. Unknown keys are errors
that name the file and the key, so a typo never silently does nothing. Every field is documented in
``FIELDS`` (the README's configuration section is generated from the same words).

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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from chunkscope.chunking.chunk import (
    ConstraintError,
    ParamError,
    Strategy,
    UnknownStrategy,
    get_strategy,
    is_strategy_name,
    strategy_class,
    strategy_names,
)
from chunkscope.embedding.spec import EmbedderSpec, EmbedderSpecError, parse_embedder
from chunkscope.retrieval.search_modes import SEARCH_MODES

CONFIG_NAME = "chunkscope.toml"

#: Top-level keys and what they mean.
FIELDS: dict[str, str] = {
    "strategy": "default strategy or preset name for every command (default: recursive)",
    "site_url": "base URL of the published site; citations link to site_url + page route + #anchor",
    "ignore": "glob patterns (relative to the docs root) of files and folders to skip",
    "max_file_bytes": "files larger than this are reported and skipped (default 4 MiB)",
    "strategies": "per-strategy parameter defaults: [strategies.NAME] key = value",
    "presets": "named strategy + parameter sets: [presets.NAME] strategy = ..., key = value, and optionally "
               "search = dense|keyword|hybrid (how its questions are matched, as tune chose it)",
    "citations": "citation templates by strategy or preset name, over the chunk's metadata",
    "embedder": "model (all-MiniLM-L6-v2, st:PATH, openai:MODEL), url (an OpenAI-compatible endpoint), "
                "api_key_env (the variable holding its key; default OPENAI_API_KEY), max_tokens, device (cpu/cuda), "
                "batch_size, runtime (onnx/torch, for the default model)",
    "embedding": "the old name of [embedder] (still read)",
    "qdrant": "url of a Qdrant server (else QDRANT_URL; API key from QDRANT_API_KEY only) or path of a local "
              "store folder, not both; timeout in seconds",
    "query": "k, threshold (default: the embedder's own) and search (dense, keyword, hybrid) for query/eval",
    "lint": "select, ignore, severity, thresholds, per_path_ignores",
    "tui": "keymap: binding id -> keys; wrap: wrap long source lines (default true)",
}
_EMBEDDER_KEYS = {"model", "url", "api_key_env", "max_tokens", "device", "batch_size", "runtime"}
_SECTION_KEYS = {
    "embedder": _EMBEDDER_KEYS,
    "embedding": _EMBEDDER_KEYS,
    "qdrant": {"url", "path", "timeout"},
    "query": {"k", "threshold", "search"},
    "lint": {"select", "ignore", "severity", "thresholds", "per_path_ignores"},
    "tui": {"keymap", "wrap"},
}


class ConfigError(Exception):
    """Configuration cannot be used; the message names the file and the problem."""


@dataclass
class Config:
    """Validated configuration with defaults filled in."""

    source: Path | None = None
    strategy: str = "recursive"
    site_url: str = ""
    ignore: list[str] = field(default_factory=list)
    max_file_bytes: int = 4 * 1024 * 1024
    strategies: dict[str, dict[str, Any]] = field(default_factory=dict)
    presets: dict[str, dict[str, Any]] = field(default_factory=dict)
    citations: dict[str, str] = field(default_factory=dict)
    embedding: dict[str, Any] = field(default_factory=dict)
    qdrant: dict[str, Any] = field(default_factory=dict)
    query: dict[str, Any] = field(default_factory=dict)
    lint: dict[str, Any] = field(default_factory=dict)
    tui: dict[str, Any] = field(default_factory=dict)
    #: Settings given on the command line over the file's (``"query.threshold"``…), so a view can say where a
    #: value came from.
    from_command_line: frozenset[str] = frozenset()

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
        cfg.from_command_line = frozenset(given)
        return cfg

    @property
    def embed_model(self) -> str:
        """The embedder as the user wrote it (``[embedder] model``)."""
        return str(self.embedding.get("model") or "all-MiniLM-L6-v2")

    def embedder_spec(self, model: str | None = None, url: str | None = None) -> EmbedderSpec:
        """The embedder: ``model``/``url`` (the caller's explicit choice, e.g. command-line flags) over
        ``[embedder]``. An explicit model without a url does not inherit the config's url (it may be local)."""
        e = self.embedding
        if model:
            return parse_embedder(model, url, api_key_env=e.get("api_key_env"), max_tokens=e.get("max_tokens"))
        return parse_embedder(e.get("model"), url or e.get("url"), api_key_env=e.get("api_key_env"),
                              max_tokens=e.get("max_tokens"))

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
        if url:
            return QdrantTarget(url=url, path=None, timeout=timeout)
        if q.get("url") or q.get("path"):
            return QdrantTarget(url=q.get("url") or None, path=q.get("path") or None, timeout=timeout)
        env = (os.environ if environ is None else environ).get("QDRANT_URL", "").strip()
        return QdrantTarget(url=env or None, path=None, timeout=timeout)


@dataclass(frozen=True)
class QdrantTarget:
    """The vector store to open: a server ``url``, a local ``path``, or neither (the per-tree local store)."""

    url: str | None
    path: str | None
    timeout: float = 3.0


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
    from chunkscope.document.loader import docs_root_of, is_site_root

    places = []
    if docs is not None:
        root = docs if docs.is_dir() else docs_root_of(docs)
        places.append(root)
        site = Path(os.path.abspath(root)).parent
        if root.name == "docs" and is_site_root(site):
            places.append(site)
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
            except (OSError, tomllib.TOMLDecodeError):
                continue
            if isinstance(data.get("tool"), dict) and "chunkscope" in data["tool"]:
                return py
    return None


def load_config(docs: str | Path | None = None, explicit: str | Path | None = None) -> Config:
    """Find, read and validate the configuration (defaults when there is none)."""
    path = find_config(Path(docs) if docs is not None else None, explicit)
    if path is None:
        return Config()
    import tomllib

    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None
    if path.name == "pyproject.toml":
        data = data.get("tool", {}).get("chunkscope", {})
    return parse_config(data, path)


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
                if "search" in preset:  # how the preset's questions are matched (what `tune` chose), not a parameter
                    _want(preset["search"] in SEARCH_MODES, path,
                          f"[presets.{name}] search must be one of {', '.join(SEARCH_MODES)}")
                cfg.presets[name] = dict(preset)
    # A preset is used on top of its strategy's [strategies.NAME] defaults: check what the two make together
    # (each can be fine alone and contradict the other), whichever table the file gives first.
    for name, preset in cfg.presets.items():
        strat = preset["strategy"]
        own = {k: v for k, v in preset.items() if k not in ("strategy", "search")}
        params = {**cfg.strategies.get(strat, {}), **own}
        _check_params(strat, params, path, f"[presets.{name}]")
    if not is_strategy_name(cfg.strategy) and cfg.strategy not in cfg.presets:
        raise ConfigError(f"{path or 'config'}: strategy {cfg.strategy!r} is neither a strategy nor a preset")
    _check_qdrant(cfg.qdrant, path)
    q = cfg.query
    if "k" in q:
        _want(isinstance(q["k"], int) and q["k"] > 0, path, "query.k must be a positive integer")
    if "threshold" in q:
        _want(isinstance(q["threshold"], (int, float)) and -1 <= q["threshold"] <= 1, path, "query.threshold must be a number in -1..1")
    if "search" in q:
        _want(q["search"] in SEARCH_MODES, path, f"query.search must be one of {', '.join(SEARCH_MODES)}")
    try:
        cfg.embedder_spec()
    except EmbedderSpecError as exc:
        raise ConfigError(f"{path or 'config'}: [embedder]: {exc}") from None
    return cfg


def _check_qdrant(q: dict[str, Any], path: Path | None) -> None:
    for key in ("url", "path"):
        if key in q:
            _want(isinstance(q[key], str), path, f"qdrant.{key} must be a string")
    if "timeout" in q:
        t = q["timeout"]
        _want(isinstance(t, (int, float)) and not isinstance(t, bool) and t > 0, path,
              "qdrant.timeout must be a positive number of seconds")
    _want(not (q.get("url") and q.get("path")), path, "give qdrant.url or qdrant.path, not both")


def _check_params(strategy: str, params: dict[str, Any], path: Path | None, where: str) -> None:
    if strategy == "custom" and not params.get("callable"):
        return  # a custom strategy's callable is checked when it is used
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
    search = None
    if name in cfg.presets:
        preset = dict(cfg.presets[name])
        strat = preset.pop("strategy")
        search = preset.pop("search", None)
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
    template = cfg.citations.get(name) or cfg.citations.get(strat) or type(strategy).citation_template
    return ResolvedStrategy(label, strategy, template, search)
