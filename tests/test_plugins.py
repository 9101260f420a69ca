"""Strategy plugins: a package installed with pip registers a strategy under the ``chunkscope.strategies``
entry-point group, and the command line, config presets, the library and the app's picker all find it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import chunkscope
from chunkscope.chunking import registry as chunk_mod
from chunkscope.chunking.registry import ENTRY_POINT_GROUP, StrategyPluginError, UnknownStrategy

REPO = Path(__file__).resolve().parents[1]
SAMPLE_DOCS = REPO / "sample_docs"
CHUNKSCOPE = Path(sys.executable).with_name("chunkscope")

PLUGIN_MODULE = '''
"""A third-party strategy: one chunk per paragraph (a run of non-blank lines)."""
import re

from chunkscope.chunking.model import Span
from chunkscope.chunking.params import Param
from chunkscope.chunking.strategy import Strategy


class ParagraphStrategy(Strategy):
    name = "myplugin"
    seed = "plugin"
    description = "one chunk per paragraph"
    parameters = (Param("min_chars", int, 1, "paragraphs shorter than this are left out", min=1),)
    search_space = {"min_chars": (1, 20)}

    def spans(self, doc):
        return [Span(m.start(), m.end(), {"kind": "paragraph"})
                for m in re.finditer(r"[^\\n]+(?:\\n[^\\n]+)*", doc.text)
                if m.end() - m.start() >= self.params["min_chars"]]


class ShadowStrategy(Strategy):
    """Tries to take the built-in recursive strategy's name: it must never be used."""
    name = "recursive"

    def spans(self, doc):
        return [Span(0, len(doc.text), {"shadow": True})]
'''

PYPROJECT = f'''
[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "chunkscope-myplugin"
version = "0.1.0"

[tool.setuptools]
py-modules = ["cs_myplugin"]

[project.entry-points."{ENTRY_POINT_GROUP}"]
myplugin = "cs_myplugin:ParagraphStrategy"
broken = "cs_myplugin_missing:Nope"
misnamed = "cs_myplugin:ParagraphStrategy"
recursive = "cs_myplugin:ShadowStrategy"
'''


def install(root: Path, dist: str, module: str, source: str, pyproject: str) -> Path:
    """Write a plugin package under ``root`` and install it with pip into ``root/site``, as a user would."""
    src = root / dist
    src.mkdir()
    (src / "pyproject.toml").write_text(textwrap.dedent(pyproject), encoding="utf-8")
    (src / f"{module}.py").write_text(textwrap.dedent(source), encoding="utf-8")
    site = root / "site"
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "--no-build-isolation", "--no-index", "--quiet",
         "--disable-pip-version-check", "--target", str(site), str(src)],
        capture_output=True, text=True, timeout=300,
    )
    if proc.returncode != 0:
        pytest.fail(f"pip could not install the test plugin:\n{proc.stdout}\n{proc.stderr}")
    assert list(site.glob(f"{dist.replace('-', '_')}-*.dist-info/entry_points.txt"))
    return site


@pytest.fixture(scope="module")
def plugin_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The plugin package installed with pip into a site folder of its own."""
    return install(tmp_path_factory.mktemp("plugin"), "chunkscope-myplugin", "cs_myplugin", PLUGIN_MODULE, PYPROJECT)


@pytest.fixture(scope="module")
def rival_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A second package registering the name ``myplugin`` too, in another site folder."""
    pyproject = PYPROJECT.replace("chunkscope-myplugin", "chunkscope-rival").replace('"cs_myplugin"', '"cs_rival"')
    pyproject = pyproject.split("[project.entry-points")[0] + (
        f'[project.entry-points."{ENTRY_POINT_GROUP}"]\nmyplugin = "cs_rival:ParagraphStrategy"\n')
    return install(tmp_path_factory.mktemp("rival"), "chunkscope-rival", "cs_rival", PLUGIN_MODULE, pyproject)


def run_cli(*args: str, site: Path | list[Path] | None, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    if site is not None:
        env["PYTHONPATH"] = os.pathsep.join(map(str, site if isinstance(site, list) else [site]))
    return subprocess.run([str(CHUNKSCOPE), *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=300)


@pytest.fixture
def plugin_on_path(plugin_site: Path, monkeypatch: pytest.MonkeyPatch):
    """The installed plugin visible to this process; the registry read afresh before and after."""
    monkeypatch.syspath_prepend(str(plugin_site))
    chunk_mod._plugins.cache_clear()  # noqa: SLF001 - entry points are read once per process
    yield plugin_site
    monkeypatch.undo()
    sys.modules.pop("cs_myplugin", None)
    chunk_mod._plugins.cache_clear()  # noqa: SLF001


# --- the command line, as a user runs it -------------------------------------------------------------------------


def test_strategies_lists_the_plugin_and_reports_the_bad_entry_points_in_one_line_each(plugin_site: Path) -> None:
    proc = run_cli("strategies", "--json", site=plugin_site)
    assert proc.returncode == 0, proc.stderr
    listed = {s["name"]: s for s in json.loads(proc.stdout)}
    # Every built-in still listed, the plugin with its declared parameter, the bad ones left out.
    assert set(chunk_mod._BUILTIN) < set(listed)  # noqa: SLF001
    assert listed["myplugin"]["parameters"][0]["name"] == "min_chars"
    assert "broken" not in listed and "misnamed" not in listed
    assert listed["recursive"]["seed"] == "004"  # the built-in, not the shadow

    lines = proc.stderr.strip().splitlines()
    assert "Traceback" not in proc.stderr
    assert len(lines) == 3, proc.stderr
    by_name = {name: [ln for ln in lines if f"entry point {name!r}" in ln] for name in ("broken", "misnamed", "recursive")}
    assert all(len(v) == 1 for v in by_name.values()), lines
    assert "cs_myplugin_missing:Nope" in by_name["broken"][0] and "ModuleNotFoundError" in by_name["broken"][0]
    assert "name is 'myplugin', not 'misnamed'" in by_name["misnamed"][0]
    assert "a built-in strategy has that name" in by_name["recursive"][0]
    assert all("chunkscope-myplugin" in ln and ENTRY_POINT_GROUP in ln for ln in lines)


def test_strategies_table_shows_the_plugin(plugin_site: Path) -> None:
    proc = run_cli("strategies", site=plugin_site)
    assert proc.returncode == 0, proc.stderr
    assert "myplugin" in proc.stdout and "one chunk per paragraph" in proc.stdout
    assert "section-sentence" in proc.stdout


def test_chunk_with_the_plugin_cuts_exact_slices(plugin_site: Path) -> None:
    proc = run_cli("chunk", str(SAMPLE_DOCS), "-s", "myplugin", "-p", "min_chars=40", "--format", "jsonl",
                   "--no-lint", site=plugin_site)
    assert proc.returncode == 0, proc.stderr
    chunks = [json.loads(line) for line in proc.stdout.splitlines()]
    assert len(chunks) > 20
    for c in chunks:
        text = (SAMPLE_DOCS / c["path"]).read_text(encoding="utf-8")
        assert c["text"] == text[c["start"]:c["end"]]
        assert "\n\n" not in c["text"] and len(c["text"]) >= 40
        assert c["metadata"] == {"kind": "paragraph"}


def test_a_broken_plugin_is_one_line_naming_its_entry_point_and_never_stops_the_builtins(plugin_site: Path) -> None:
    proc = run_cli("chunk", str(SAMPLE_DOCS), "-s", "broken", site=plugin_site)
    assert proc.returncode == 2
    assert proc.stdout == "" and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    assert "entry point 'broken' (cs_myplugin_missing:Nope from chunkscope-myplugin)" in proc.stderr

    ok = run_cli("chunk", str(SAMPLE_DOCS), "-s", "fixed", "--format", "jsonl", "--no-lint", site=plugin_site)
    assert ok.returncode == 0 and ok.stderr == "" and ok.stdout


def test_a_plugin_cannot_shadow_a_builtin(plugin_site: Path) -> None:
    args = ("chunk", str(SAMPLE_DOCS / "intro.md"), "-s", "recursive", "--format", "jsonl", "--no-lint")
    with_plugin = run_cli(*args, site=plugin_site)
    without = run_cli(*args, site=None)
    assert with_plugin.returncode == 0 == without.returncode
    assert with_plugin.stdout == without.stdout
    assert not any(json.loads(line)["metadata"].get("shadow") for line in with_plugin.stdout.splitlines())


def test_a_name_two_packages_register_keeps_the_first_on_the_path(plugin_site: Path, rival_site: Path) -> None:
    for first, second in ((plugin_site, rival_site), (rival_site, plugin_site)):
        proc = run_cli("strategies", "--json", site=[first, second])
        assert proc.returncode == 0, proc.stderr
        assert [s["name"] for s in json.loads(proc.stdout)].count("myplugin") == 1
        winner, loser = ("chunkscope-myplugin", "chunkscope-rival") if first == plugin_site else (
            "chunkscope-rival", "chunkscope-myplugin")
        [line] = [ln for ln in proc.stderr.splitlines() if "has that name already" in ln]
        assert line.startswith("chunkscope: warning: entry point 'myplugin' (cs_")
        assert f"from {loser}) in {ENTRY_POINT_GROUP}: ignored, entry point 'myplugin'" in line
        assert line.endswith(f"from {winner}) in {ENTRY_POINT_GROUP} has that name already")


def test_a_config_preset_can_use_the_plugin(plugin_site: Path, tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "page.md").write_text("# Page\n\nshort\n\nA paragraph long enough to keep.\n", encoding="utf-8")
    (docs / "chunkscope.toml").write_text(
        'strategy = "paras"\n\n[strategies.myplugin]\nmin_chars = 2\n\n[presets.paras]\nstrategy = "myplugin"\n'
        "min_chars = 10\n", encoding="utf-8")
    proc = run_cli("chunk", str(docs), "--format", "jsonl", "--no-lint", site=plugin_site)
    assert proc.returncode == 0, proc.stderr
    assert [json.loads(line)["text"] for line in proc.stdout.splitlines()] == ["A paragraph long enough to keep."]

    # Without the plugin installed, the same config names an unknown strategy: one line, exit 2.
    missing = run_cli("chunk", str(docs), site=None)
    assert missing.returncode == 2 and "Traceback" not in missing.stderr
    assert "myplugin" in missing.stderr and len(missing.stderr.strip().splitlines()) == 1


# --- the library and the app's picker, in this process -----------------------------------------------------------


def test_library_and_picker_read_the_same_registry(plugin_on_path: Path) -> None:
    names = chunk_mod.strategy_names()
    assert names[: len(chunk_mod._BUILTIN)] == list(chunk_mod._BUILTIN)  # noqa: SLF001
    assert {"myplugin", "broken", "misnamed"} <= set(names) and names.count("recursive") == 1

    chunks = chunkscope.chunk_text("one\ntwo\n\nthree\n", "myplugin")
    assert [c.text for c in chunks] == ["one\ntwo", "three"]
    assert [c.start_line for c in chunks] == [1, 4]
    # Tunable with no edit of the tuner: the plugin declares its own search space.
    assert chunk_mod.strategy_class("myplugin").search_axes() == [[{"min_chars": 1}, {"min_chars": 20}]]


@pytest.mark.anyio
async def test_the_app_picker_cuts_with_the_plugin_and_says_in_one_line_why_a_broken_one_cannot(
        plugin_on_path: Path) -> None:
    pytest.importorskip("textual")
    from chunkscope.tui.widgets.strategy_bar import StrategyBar
    from tests.pilot import make_app, wait_for

    app = make_app()
    async with app.run_test(size=(160, 45)) as pilot:
        bar = app.explorer.query_one(StrategyBar)
        offered = [value for _, value in bar.options()]
        assert {"myplugin", "broken"} <= set(offered)
        app.choose_strategy("myplugin")
        await wait_for(pilot, lambda: app.explorer.result is not None and app.explorer.result.resolved.name == "myplugin"
                       and app.explorer.result.complete, what="the file cut by the plugin")
        app.choose_strategy("broken")
        errors = lambda: [n for n in app._notifications if n.severity == "error"]  # noqa: E731, SLF001
        await wait_for(pilot, lambda: bool(errors()), what="the broken plugin's notice")
        assert "'broken'" in errors()[0].message and "\n" not in errors()[0].message
        assert app.explorer.resolved.name == "myplugin"  # the current strategy stays


def test_a_broken_plugin_raises_a_kind_of_unknown_strategy(plugin_on_path: Path) -> None:
    with pytest.raises(StrategyPluginError) as info:
        chunkscope.get_strategy("broken")
    assert isinstance(info.value, UnknownStrategy)  # every place catching UnknownStrategy reports it
    assert "\n" not in str(info.value) and "'broken'" in str(info.value)
    assert "myplugin" in [c.name for c in chunk_mod.list_strategies()]
    assert all(n not in [c.name for c in chunk_mod.list_strategies()] for n in ("broken", "misnamed"))


def test_without_plugins_only_the_builtins_are_listed() -> None:
    chunk_mod._plugins.cache_clear()  # noqa: SLF001
    try:
        assert chunk_mod.strategy_names() == list(chunk_mod._BUILTIN)  # noqa: SLF001
        assert chunk_mod.plugin_problems() == []
        with pytest.raises(UnknownStrategy, match="unknown strategy 'myplugin'"):
            chunkscope.get_strategy("myplugin")
    finally:
        chunk_mod._plugins.cache_clear()  # noqa: SLF001
