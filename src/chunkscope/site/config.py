"""The Docusaurus site around a docs folder: its config (``docusaurus.config.*``) and what it means for pages.

What chunkscope needs of a site is the docs plugin's ``path``, ``routeBasePath``, ``include``, ``exclude``,
``lastVersion``, ``versions`` and ``sidebarPath``, and the site's ``url``, ``baseUrl`` and ``trailingSlash``. A
JS/TS config is code: it is run with Node only when the caller allows running the tree's code (``allow_code``);
otherwise, or when Node is absent or fails (a checkout without ``node_modules``), its literal forms are read
(`chunkscope.site.js_literals`) and what could not be read is said in one line. ``[site]`` in chunkscope.toml
overrides any of them.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from chunkscope.site.js_literals import JsSyntaxError, Unread, read_exported_literal
from chunkscope.site.node import run_node_json
from chunkscope.site.order import DEFAULT_EXCLUDE, DEFAULT_INCLUDE, GlobSet

#: Docusaurus' config file names, in the order it looks for them.
CONFIG_NAMES = tuple(f"docusaurus.config.{ext}" for ext in ("ts", "mts", "cts", "js", "mjs", "cjs"))
_DOCS_PLUGIN = "@docusaurus/plugin-content-docs"
_CLASSIC = ("classic", "@docusaurus/preset-classic", "docusaurus-preset-classic")

#: ``[site]`` keys of chunkscope.toml and what they mean (the config reader validates against these).
SITE_KEYS: dict[str, str] = {
    "url": "the site's url (docusaurus.config: url)",
    "base_url": "the site's baseUrl (default /)",
    "trailing_slash": "true/false: the site's trailingSlash (default: routes as Docusaurus writes them)",
    "path": "the docs plugin's path: the docs folder, relative to the site root (default docs)",
    "route_base_path": "the docs plugin's routeBasePath (default docs)",
    "include": "the docs plugin's include globs (default **/*.{md,mdx})",
    "exclude": "the docs plugin's exclude globs (default: _-prefixed files and folders, tests)",
    "last_version": "the docs plugin's lastVersion (current, or a release in versions.json)",
    "versions": "the docs plugin's versions: VERSION = { path = ... }",
    "sidebar_path": "the docs plugin's sidebarPath: the sidebars file that orders the pages, from the site root "
                    "(false: none; default: the order of the folders)",
    "unpublished": "true: also chunk the files Docusaurus does not publish (_-prefixed, excluded)",
}


class SiteConfigError(Exception):
    """A ``[site]`` value of the wrong type; one line naming the key."""


@dataclass(frozen=True)
class SiteConfig:
    """A Docusaurus site as chunkscope reads it; defaults are Docusaurus' own."""

    url: str = ""
    base_url: str = "/"
    trailing_slash: bool | None = None
    path: str = "docs"
    route_base_path: str = "docs"
    include: tuple[str, ...] = DEFAULT_INCLUDE
    exclude: tuple[str, ...] = DEFAULT_EXCLUDE
    last_version: str | None = None
    versions: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    #: The release names of versions.json, newest first.
    released: tuple[str, ...] = ()
    #: The version the loaded docs are: "current" (the docs folder) or a release (versioned_docs/version-X).
    version: str = "current"
    #: Where the settings came from, for messages (``docusaurus.config.ts``, ``chunkscope.toml``).
    source: str = ""
    #: The sidebar file the loaded version's pages are ordered by, absolute: the docs plugin's ``sidebarPath``
    #: for the current docs, ``versioned_sidebars/version-X-sidebars.json`` for a release. None: Docusaurus
    #: generates the sidebar from the folders (``sidebarPath`` not set); False: the site has no sidebar.
    sidebar_path: str | bool | None = None

    @property
    def version_path(self) -> str:
        """The loaded version's path under routeBasePath: ``""`` for the version served by default, the
        configured ``versions.X.path`` if any, else ``next`` for the current docs and the release name for a
        release."""
        own = self.versions.get(self.version, {}).get("path")
        if isinstance(own, str):
            return own.strip("/")
        last = self.last_version or (self.released[0] if self.released else "current")
        if self.version == last:
            return ""
        return "next" if self.version == "current" else self.version

    @property
    def docs_path(self) -> str:
        """The URL path every page of the loaded docs sits under: baseUrl + routeBasePath + version path, with a
        leading and no trailing slash ("" at the site's root)."""
        parts = [p for seg in (self.base_url, self.route_base_path, self.version_path)
                 for p in seg.split("/") if p]
        return "".join(f"/{p}" for p in parts)

    def page_path(self, route: str) -> str:
        """The URL path of a page whose route under the docs plugin is ``route`` (`doc_route`), as the site
        serves it: under `docs_path`, with ``trailingSlash`` applied (never to the site's home, ``baseUrl``)."""
        path = self.docs_path + route if route != "/" or not self.docs_path else self.docs_path + "/"
        home = "/" + self.base_url.strip("/") + "/" if self.base_url.strip("/") else "/"
        if self.trailing_slash is None or path in (home, home.rstrip("/")):
            return path
        if self.trailing_slash:
            return path if path.endswith("/") else path + "/"
        return path.rstrip("/") or "/"

    @property
    def site_url(self) -> str:
        """``url`` without its trailing slash ("" when the site names none)."""
        return self.url.rstrip("/")

    def publishes(self) -> tuple[GlobSet, GlobSet]:
        """(include, exclude) as glob sets for `chunkscope.site.order.is_published`."""
        return GlobSet(self.include), GlobSet(self.exclude)


@dataclass(frozen=True)
class SiteReading:
    """A site's config as read: the settings, and one line saying what could not be read (or "")."""

    config: SiteConfig
    unread: str = ""


def find_config_file(site_root: Path) -> Path | None:
    """The site's ``docusaurus.config.*``, if it has one."""
    return next((site_root / n for n in CONFIG_NAMES if (site_root / n).is_file()), None)


# Run by Node (only with allow_code) on the loaded config (`node.run_node_json`): the settings chunkscope reads,
# as one JSON line.
_NODE_SCRIPT = r"""
  let cfg = mod && mod.default !== undefined ? mod.default : mod;
  if (typeof cfg === 'function') cfg = await cfg();
  cfg = await cfg;
  const name = (p) => (Array.isArray(p) ? p[0] : p);
  const opts = (p) => (Array.isArray(p) ? p[1] : undefined);
  let docs;
  for (const p of cfg.presets || []) {
    if (['classic', '@docusaurus/preset-classic', 'docusaurus-preset-classic'].includes(name(p)) && opts(p)) docs = opts(p).docs;
  }
  for (const p of cfg.plugins || []) {
    const o = opts(p) || {};
    if (name(p) === '@docusaurus/plugin-content-docs' && (o.id === undefined || o.id === 'default')) docs = o;
  }
  const pick = (o, keys) => Object.fromEntries(keys.filter((k) => o && o[k] !== undefined).map((k) => [k, o[k]]));
  process.stdout.write(JSON.stringify({
    site: pick(cfg, ['url', 'baseUrl', 'trailingSlash']),
    docs: docs === false ? false : pick(docs || {}, ['path', 'routeBasePath', 'include', 'exclude', 'lastVersion', 'versions', 'sidebarPath']),
  }));
"""


def _run_node(file: Path) -> dict[str, Any] | str:
    """The config's settings as Node evaluates it, or one line saying why it could not."""
    ran = run_node_json(file, _NODE_SCRIPT, "no settings")
    if isinstance(ran, str):
        return ran
    return ran[0] if isinstance(ran[0], dict) else "node printed no settings"


def _short(source: str) -> str:
    """A value's source for a one-line message: its first line, cut at 40 characters."""
    line = source.strip().splitlines()[0] if source.strip() else source
    return line if len(line) <= 40 else line[:39] + "…"


def _plugin_name(entry: Any) -> Any:
    return entry[0] if isinstance(entry, list) and entry else entry


def _literal_settings(file: Path) -> tuple[dict[str, Any], list[str]]:
    """The settings read from the config's literal forms, and the names of those that are no literal."""
    try:
        exported = read_exported_literal(file.read_bytes(), typescript=file.suffix in (".ts", ".mts", ".cts"))
    except (OSError, JsSyntaxError) as exc:
        return {}, [f"the whole file ({exc})"]
    if isinstance(exported, Unread) or not isinstance(exported, dict):
        return {}, ["the exported config (no literal object)"]
    unread: list[str] = []
    site: dict[str, Any] = {}
    for key in ("url", "baseUrl", "trailingSlash"):
        value = exported.get(key)
        if isinstance(value, Unread):
            unread.append(f"{key} ({_short(value.source)})")
        elif key in exported:
            site[key] = value
        elif "..." in exported:
            unread.append(f"{key} (a spread)")
    docs: Any = {}
    found = False
    for list_key, names in (("presets", _CLASSIC), ("plugins", (_DOCS_PLUGIN,))):
        entries = exported.get(list_key)
        if isinstance(entries, Unread):
            unread.append(f"{list_key} ({_short(entries.source)})")
            continue
        for entry in entries if isinstance(entries, list) else []:
            if isinstance(entry, Unread):
                # Once the classic preset has configured the docs, no entry of plugins can be the default docs
                # plugin (Docusaurus refuses a second one): an unread plugin there (a function: Tailwind, a
                # redirect) changes nothing chunkscope reads, and saying it was not read would only alarm.
                if not (list_key == "plugins" and found and isinstance(docs, dict)):
                    unread.append(f"an entry of {list_key} ({_short(entry.source)})")
                continue
            if _plugin_name(entry) not in names or not isinstance(entry, list) or len(entry) < 2:
                continue
            options = entry[1]
            if list_key == "presets":
                options = options.get("docs", {}) if isinstance(options, dict) else options
            elif isinstance(options, dict) and options.get("id", "default") != "default":
                continue
            if isinstance(options, Unread):
                unread.append(f"the docs plugin's options ({_short(options.source)})")
                continue
            docs, found = options, True
    if found and isinstance(docs, dict):
        resolved = _resolved_path(docs.get("sidebarPath"))
        if resolved is not None:
            docs["sidebarPath"] = resolved
        for key in [k for k, v in docs.items() if _unread_in(v) is not None]:
            if key in ("path", "routeBasePath", "include", "exclude", "lastVersion", "versions", "sidebarPath"):
                unread.append(f"docs.{key} ({_unread_in(docs[key])})")
            del docs[key]
    return {"site": site, "docs": docs}, unread


# How configs name a file beside them in code rather than as a string (Docusaurus 2's template wrote
# ``require.resolve('./sidebars.js')``, Jest writes ``path.resolve(__dirname, './sidebars.json')``): each means the
# file at that path from the config's folder, which is the site root the plain string is resolved against too.
_PATH_CALL = re.compile(r"\A(?:require\.resolve\(\s*|path\.(?:resolve|join)\(\s*__dirname\s*,\s*)"
                        r"(['\"])([^'\"\\]+)\1\s*\)\Z")


def _resolved_path(value: Any) -> str | None:
    """The file path a ``require.resolve('…')`` or ``path.resolve(__dirname, '…')`` call names, or None."""
    if not isinstance(value, Unread):
        return None
    m = _PATH_CALL.match(value.source.strip())
    return m.group(2) if m else None


def _unread_in(value: Any) -> str | None:
    """The source of the first non-literal part of ``value`` (a list or object holding one), or None."""
    if isinstance(value, Unread):
        return _short(value.source)
    items = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
    return next((u for u in map(_unread_in, items) if u is not None), None)


def read_site(site_root: Path, *, allow_code: bool = False, version: str = "current",
              overrides: Mapping[str, Any] | None = None) -> SiteReading:
    """The site at ``site_root`` as chunkscope reads it (see the module's docstring), ``[site]`` overrides last.

    Raises:
        SiteConfigError: an override has the wrong type.
    """
    file = find_config_file(site_root)
    settings: dict[str, Any] = {}
    notes: list[str] = []
    source = ""
    if file is not None:
        source = file.name
        ran = _run_node(file) if allow_code else None
        if isinstance(ran, dict):
            settings = ran
        else:
            settings, unread = _literal_settings(file)
            if unread:
                why = f" ({ran}; read without running it)" if isinstance(ran, str) else ""
                notes.append(f"{file.name}: could not read {', '.join(unread)}{why}: Docusaurus' defaults are used "
                             "([site] in chunkscope.toml can set them)")
    site = settings.get("site") or {}
    docs = settings.get("docs")
    docs = docs if isinstance(docs, dict) else {}
    released = _released(site_root)
    values: dict[str, Any] = {
        "url": site.get("url"), "base_url": site.get("baseUrl"), "trailing_slash": site.get("trailingSlash"),
        "path": docs.get("path"), "route_base_path": docs.get("routeBasePath"), "include": docs.get("include"),
        "exclude": docs.get("exclude"), "last_version": docs.get("lastVersion"), "versions": docs.get("versions"),
    }
    fields: dict[str, Any] = {}
    for key, value in values.items():
        try:
            fields.update(_checked({key: value}))
        except SiteConfigError as exc:  # the site's own file: its value is left out, never an error of ours
            notes.append(f"{source}: {exc} (left out)")
    given = {k: v for k, v in (overrides or {}).items() if k in values}
    fields.update(_checked(given))
    if given:
        source = f"{source} + chunkscope.toml" if source else "chunkscope.toml"
    option = docs.get("sidebarPath")
    if overrides is not None and "sidebar_path" in overrides:
        option = _checked({"sidebar_path": overrides["sidebar_path"]}).get("sidebar_path")
    sidebar = _sidebar_file(site_root, option, version, source, notes)
    config = SiteConfig(**fields, released=released, version=version, source=source, sidebar_path=sidebar)
    return SiteReading(config, "; ".join(notes))


def _sidebar_file(site_root: Path, option: Any, version: str, source: str, notes: list[str]) -> str | bool | None:
    """`SiteConfig.sidebar_path` for the docs plugin's ``sidebarPath`` option, as Docusaurus 3 resolves it
    (plugin-content-docs ``sidebars/index.js``, ``versions/files.js``): a release reads its
    ``versioned_sidebars/version-X-sidebars.json`` and has no sidebar without one; the current docs read the
    option's file from the site root, generate one from the folders when the option is absent, and have none when
    it is ``false``."""
    if version != "current":
        file = site_root / "versioned_sidebars" / f"version-{version}-sidebars.json"
        return os.path.abspath(file) if file.is_file() else False
    if option is None:
        return None
    if option is False:
        return False
    if not isinstance(option, str) or not option:
        notes.append(f"{source}: docs.sidebarPath must be a file path or false (left out)")
        return None
    return os.path.abspath(site_root / option)


def _released(site_root: Path) -> tuple[str, ...]:
    """versions.json's release names (newest first), or () when the site has none or it is unreadable."""
    try:
        data = json.loads((site_root / "versions.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return ()
    return tuple(str(v) for v in data) if isinstance(data, list) else ()


def check_site_settings(values: Mapping[str, Any]) -> None:
    """Check a ``[site]`` table of chunkscope.toml: known keys, each of its type.

    Raises:
        SiteConfigError: one line naming the key.
    """
    for key in values:
        if key not in SITE_KEYS:
            raise SiteConfigError(f"unknown key site.{key} (known: {', '.join(SITE_KEYS)})")
    if not isinstance(values.get("unpublished", False), bool):
        raise SiteConfigError("site.unpublished must be true or false")
    _checked({k: v for k, v in values.items() if k != "unpublished"})


def _checked(values: Mapping[str, Any]) -> dict[str, Any]:
    """The settings given (None: not given) as `SiteConfig` fields, each checked for its type."""
    out: dict[str, Any] = {}
    for key, value in values.items():
        if value is None:
            continue
        if key in ("url", "base_url", "path", "route_base_path", "last_version"):
            if not isinstance(value, str):
                raise SiteConfigError(f"site.{key} must be a string, not {type(value).__name__}")
            out[key] = value
        elif key == "trailing_slash":
            if not isinstance(value, bool):
                raise SiteConfigError(f"site.{key} must be true or false, not {type(value).__name__}")
            out[key] = value
        elif key in ("include", "exclude"):
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise SiteConfigError(f"site.{key} must be a list of glob strings")
            out[key] = tuple(value)
        elif key == "sidebar_path":
            if value is not False and not (isinstance(value, str) and value):
                raise SiteConfigError(f"site.{key} must be a file path or false")
            out[key] = value
        elif key == "versions":
            if not isinstance(value, Mapping) or not all(isinstance(v, Mapping) for v in value.values()):
                raise SiteConfigError("site.versions must map each version to a table (path = ...)")
            out[key] = {str(k): dict(v) for k, v in value.items()}
    return out
