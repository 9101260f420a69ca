"""Every architecture rule in one file: no runtime import cycle, no CLI flag named in the core, the import-linter
contracts (layers, the core never imports a view, the app's headless part never imports Textual), and no heavy
or UI package imported when the core is.

The cycle check reads the source. It counts every import that runs: top-level, lazy (inside a function), through
``importlib.import_module`` with a literal name, and to a parent package (``from . import NAME`` inside a package
whose ``__init__`` imports that module: the shape that fails with "partially initialized module"). Only imports
under an exact ``if TYPE_CHECKING:`` (or the ``else`` of ``if not TYPE_CHECKING:``) are left out, since they never
run; the cycles those alone would close are listed by name below, so a new one is a decision, not an accident.
A lazy import breaks a cycle at run time but not in the design: two modules that need each other are one module
in two files, and the next top-level import turns the cycle into an ImportError.
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "src" / "chunkscope"
#: The views and the entry point: everything else in the package is the core.
VIEWS = ("cli", "tui", "__main__")
#: Modules allowed to import a module whose name is computed at run time: the registries, which turn a name the
#: user or a table gives into a module (each such call is a lookup, not a dependency of design).
DYNAMIC_IMPORTERS = {
    "chunkscope",  # the lazy public API (_EXPORTS)
    "chunkscope.chunking.registry",  # built-in strategies by "module:Class", and entry-point plugins
    "chunkscope.chunking.strategies.custom",  # the user's own `custom` callable
    "chunkscope.cli.commands",  # the command table: a command's module is imported when that command runs
}
#: Cycles that only type annotations close (``if TYPE_CHECKING:`` imports): accepted, by name, each with the
#: packages its modules may come from. None runs at import time; a cycle of modules outside these is refused.
ACCEPTED_TYPE_ONLY_CYCLES: dict[str, tuple[str, ...]] = {
    # Each rule's check() takes the LintContext, whose settings list the registry's rules.
    "lint rules <-> the LintContext they are given": ("chunkscope.lint",),
    # The tokenizers count a Document's text and keep its token offsets; the document asks them for counters.
    "tokens <-> the Document whose text they count": ("chunkscope.tokens", "chunkscope.document"),
}


def _module_name(file: Path, root: Path) -> str:
    parts = list(file.relative_to(root.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_type_checking(test: ast.expr) -> bool:
    """``TYPE_CHECKING`` or ``typing.TYPE_CHECKING`` exactly: a condition that is true only for a type checker."""
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    """The nodes that run only under a type checker: the body of ``if TYPE_CHECKING:``, the ``else`` of
    ``if not TYPE_CHECKING:``. Anything else that mentions TYPE_CHECKING runs."""
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.If):
            continue
        if _is_type_checking(node.test):
            branch = node.body
        elif isinstance(node.test, ast.UnaryOp) and isinstance(node.test.op, ast.Not) and _is_type_checking(
                node.test.operand):
            branch = node.orelse
        else:
            continue
        skipped |= {id(x) for stmt in branch for x in ast.walk(stmt)}
    return skipped


def _imported(node: ast.ImportFrom, module: str, is_package: bool, known: set[str]) -> set[str]:
    base = module.split(".") if is_package else module.split(".")[:-1]
    if node.level:
        target = ".".join(base[: len(base) - (node.level - 1)] + ([node.module] if node.module else []))
    else:
        target = node.module or ""
    # "from .strategies import recursive" imports a module; "from .chunk import Chunk" imports from one.
    return {f"{target}.{a.name}" if f"{target}.{a.name}" in known else target for a in node.names}


def _dynamic_import(node: ast.Call) -> ast.expr | None:
    """The name argument of ``importlib.import_module(...)`` / ``import_module(...)`` / ``__import__(...)``."""
    f = node.func
    name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
    if name in ("import_module", "__import__") and node.args:
        return node.args[0]
    return None


class DynamicImportOutsideRegistry(AssertionError):
    """A module imports a computed module name and is not one of the registries."""


def import_graph(root: Path, *, type_only: bool = False,
                 dynamic_importers: set[str] | None = None) -> dict[str, set[str]]:
    """Module → the package's modules it imports at run time (with ``type_only``: under TYPE_CHECKING too).

    Raises:
        DynamicImportOutsideRegistry: a module outside ``dynamic_importers`` imports a name computed at run time.
    """
    files = {_module_name(f, root): f for f in root.rglob("*.py")}
    known = set(files)
    allowed = DYNAMIC_IMPORTERS if dynamic_importers is None else dynamic_importers
    graph: dict[str, set[str]] = {}
    for module, file in files.items():
        tree = ast.parse(file.read_text(encoding="utf-8"))
        skipped = set() if type_only else _type_checking_nodes(tree)
        deps: set[str] = set()
        for node in ast.walk(tree):
            if id(node) in skipped:
                continue
            if isinstance(node, ast.ImportFrom):
                deps |= _imported(node, module, file.name == "__init__.py", known)
            elif isinstance(node, ast.Import):
                deps |= {a.name for a in node.names}
            elif isinstance(node, ast.Call) and (arg := _dynamic_import(node)) is not None:
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                    deps.add(arg.value)
                elif module not in allowed:
                    raise DynamicImportOutsideRegistry(f"{module}:{node.lineno} imports a computed module name")
        # Edges to a parent package are kept: when the parent's __init__ imports the submodule back, that is the
        # cycle Python fails on ("partially initialized module").
        graph[module] = {d for d in deps if d in known and d != module}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every cycle a depth-first walk meets (each as the modules on it, the first repeated at the end)."""
    found: list[list[str]] = []
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(module: str) -> None:
        state[module] = 1
        path.append(module)
        for dep in sorted(graph[module]):
            if state.get(dep) == 1:
                found.append(path[path.index(dep):] + [dep])
            elif dep not in state:
                visit(dep)
        path.pop()
        state[module] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module)
    return found


def _reaches(graph: dict[str, set[str]], start: str) -> set[str]:
    seen: set[str] = set()
    todo = [start]
    while todo:
        m = todo.pop()
        for d in graph.get(m, ()):
            if d not in seen:
                seen.add(d)
                todo.append(d)
    return seen


def runtime_cycles(root: Path, dynamic_importers: set[str] | None = None) -> list[list[str]]:
    """The cycles of imports that run (a package → its own submodule edge included: it closes a cycle exactly
    when the submodule reaches the package back, which is the "partially initialized module" failure)."""
    return cycles(import_graph(root, dynamic_importers=dynamic_importers))


def test_chunkscope_has_no_runtime_import_cycle() -> None:
    graph = import_graph(PACKAGE)
    assert len(graph) > 40, "the package was not found where the test looks for it"
    assert runtime_cycles(PACKAGE) == []


def _strongly_connected(graph: dict[str, set[str]]) -> set[frozenset[str]]:
    """The groups of two or more modules that all reach each other."""
    groups: set[frozenset[str]] = set()
    for m in graph:
        group = frozenset({m} | {d for d in _reaches(graph, m) if m in _reaches(graph, d)})
        if len(group) > 1:
            groups.add(group)
    return groups


def _accepted_as(group: frozenset[str]) -> str | None:
    for name, packages in ACCEPTED_TYPE_ONLY_CYCLES.items():
        if all(any(m == p or m.startswith(p + ".") for p in packages) for m in group):
            return name
    return None


def test_the_only_type_only_cycles_are_the_accepted_ones() -> None:
    groups = _strongly_connected(import_graph(PACKAGE, type_only=True))
    refused = sorted(sorted(g) for g in groups if _accepted_as(g) is None)
    assert refused == []
    assert {_accepted_as(g) for g in groups} == set(ACCEPTED_TYPE_ONLY_CYCLES), "an accepted cycle is gone: drop it"


def _write(pkg: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        f = pkg / name
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(text, encoding="utf-8")


# Three packages that fail to import with a circular-import error, each a shape an earlier version of this check
# reported as acyclic: a submodule importing from its parent package, ``if not TYPE_CHECKING:`` read as type-only,
# and a cycle through ``importlib.import_module``.
DEMONSTRATIONS = {
    "parent_package": {
        "__init__.py": "from .a import f\nVALUE = 1\n",
        "a.py": "from . import VALUE\n\ndef f():\n    return VALUE\n",
    },
    "not_type_checking": {
        "__init__.py": "",
        "a.py": "from typing import TYPE_CHECKING\nif not TYPE_CHECKING:\n    from .b import y\nx = 1\n",
        "b.py": "from .a import x\ny = 2\n",
    },
    "import_module": {
        "__init__.py": "",
        "a.py": "import importlib\nimportlib.import_module('{pkg}.b')\nx = 1\n",
        "b.py": "from {pkg}.a import x\n",
    },
}


@pytest.mark.parametrize("shape", sorted(DEMONSTRATIONS))
def test_the_check_finds_each_cycle_python_fails_on(shape: str, tmp_path: Path) -> None:
    pkg = tmp_path / f"demo_{shape}"
    _write(pkg, {n: t.replace("{pkg}", pkg.name) for n, t in DEMONSTRATIONS[shape].items()})
    entry = f"{pkg.name}.a" if (pkg / "b.py").exists() else pkg.name
    run = subprocess.run([sys.executable, "-c", f"import {entry}"], cwd=tmp_path, capture_output=True, text=True,
                         check=False)
    assert run.returncode != 0 and "circular import" in run.stderr, run.stderr  # the demonstration is real
    assert runtime_cycles(pkg, dynamic_importers=set()) != []


def test_type_checking_imports_alone_are_no_runtime_cycle(tmp_path: Path) -> None:
    pkg = tmp_path / "demo_types"
    _write(pkg, {
        "__init__.py": "",
        "a.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .b import Y\nclass X: ...\n",
        "b.py": "from .a import X\nclass Y(X): ...\n",
    })
    subprocess.run([sys.executable, "-c", f"import {pkg.name}.a, {pkg.name}.b"], cwd=tmp_path, check=True)
    assert runtime_cycles(pkg, dynamic_importers=set()) == []
    assert _strongly_connected(import_graph(pkg, type_only=True, dynamic_importers=set())) == {
        frozenset({f"{pkg.name}.a", f"{pkg.name}.b"})}


def test_a_lazy_import_cycle_is_found(tmp_path: Path) -> None:
    # The shape chunkscope once had: docs imported structure lazily, structure imported docs lazily.
    pkg = tmp_path / "pkg"
    _write(pkg, {
        "__init__.py": "",
        "docs.py": "def structure():\n    from .structure import parse\n    return parse\n",
        "structure.py": "def parse():\n    from .docs import structure\n    return structure\n",
    })
    assert runtime_cycles(pkg, dynamic_importers=set()) == [["pkg.docs", "pkg.structure", "pkg.docs"]]


def test_a_computed_import_outside_the_registries_is_refused(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    _write(pkg, {"__init__.py": "", "a.py": "import importlib\ndef load(n):\n    return importlib.import_module(n)\n"})
    with pytest.raises(DynamicImportOutsideRegistry, match="pkg.a:3"):
        import_graph(pkg, dynamic_importers=set())
    assert import_graph(pkg, dynamic_importers={"pkg.a"})["pkg.a"] == set()


# --- the core does not speak the command line's language ------------------------------------------------------

def _cli_flags() -> set[str]:
    """Every long option of every chunkscope command, from the real argument parser."""
    import argparse

    from chunkscope.cli import build_parser

    flags: set[str] = set()
    parsers = [build_parser()]
    while parsers:
        p = parsers.pop()
        for action in p._actions:  # noqa: SLF001 - argparse offers no public walk over its options
            flags |= {o for o in action.option_strings if o.startswith("--")}
            if isinstance(action, argparse._SubParsersAction):  # noqa: SLF001
                parsers += list(action.choices.values())
    return flags - {"--help"}


def _strings_outside_docstrings(tree: ast.AST) -> list[tuple[int, str]]:
    docstrings = {id(n.body[0].value) for n in ast.walk(tree)
                  if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                  and n.body and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
    return [(n.lineno, n.value) for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docstrings]


def test_no_core_module_names_a_command_line_flag() -> None:
    flags = _cli_flags()
    assert {"--grid", "--metric", "--select", "--qdrant-url"} <= flags
    pattern = re.compile(r"(?<![\w-])(" + "|".join(sorted(map(re.escape, flags), key=len, reverse=True)) + r")(?![\w-])")
    found = []
    for file in sorted(PACKAGE.rglob("*.py")):
        if {"cli", "tui"} & set(file.relative_to(PACKAGE).parts):
            continue
        for line, text in _strings_outside_docstrings(ast.parse(file.read_text(encoding="utf-8"))):
            m = pattern.search(text)
            if m:
                found.append(f"{file.relative_to(PACKAGE)}:{line}: {m.group(1)}")
    assert found == []


# --- the core never imports a view (import-linter, over every core module) ------------------------------------


def core_modules(package: Path) -> list[str]:
    """Every top-level module and subpackage of ``package`` but the views: the core, as it is on disk now."""
    out = []
    for p in sorted(package.iterdir()):
        name = p.stem if p.suffix == ".py" else p.name if (p / "__init__.py").is_file() else None
        if name and name != "__init__" and name not in VIEWS:
            out.append(f"{package.name}.{name}")
    return out


def lint_imports() -> Path:
    """import-linter's command: a test dependency (the ``test`` extra), so a missing one fails the test."""
    exe = Path(sys.executable).parent / "lint-imports"
    assert exe.is_file(), "import-linter is not installed: pip install -e '.[test]' (it is in the test extra)"
    return exe


def run_core_contract(package: Path, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """pyproject.toml's "core never imports the TUI" contract, with every core module of ``package`` as a source.

    The contract in pyproject.toml names its source modules one by one, so a module added since is not checked
    there until someone adds it; here the list comes from the files themselves.
    """
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    contract = next(c for c in project["tool"]["importlinter"]["contracts"]
                    if "chunkscope.tui" in c.get("forbidden_modules", ()))
    forbidden = [m.replace("chunkscope", package.name, 1) if m.startswith("chunkscope.") else m
                 for m in contract["forbidden_modules"]]
    config = tmp_path / "contract.toml"
    config.write_text(
        f"[tool.importlinter]\nroot_package = {package.name!r}\ninclude_external_packages = true\n\n"
        f"[[tool.importlinter.contracts]]\nname = {contract['name']!r}\ntype = \"forbidden\"\n"
        f"source_modules = {core_modules(package)!r}\nforbidden_modules = {forbidden!r}\n", encoding="utf-8")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(package.parent), os.environ.get("PYTHONPATH", "")]))
    return subprocess.run([str(lint_imports()), "--config", str(config), "--no-cache"], cwd=tmp_path,
                          capture_output=True, text=True, env=env, timeout=300, check=False)


def test_no_core_module_imports_a_view(tmp_path: Path) -> None:
    assert {"chunkscope.lint", "chunkscope.progress", "chunkscope.document"} <= set(core_modules(PACKAGE))
    out = run_core_contract(PACKAGE, tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr


def test_the_contract_check_catches_a_new_module_importing_rich(tmp_path: Path) -> None:
    # A module nobody listed anywhere, importing rich lazily (as a quick debug print would): the check must fail.
    pkg = tmp_path / "src" / "fakescope"
    for sub in ("", "cli", "tui"):
        (pkg / sub).mkdir(parents=True, exist_ok=True)
        (pkg / sub / "__init__.py").write_text("")
    (pkg / "cli" / "show.py").write_text("import rich\n")  # a view may
    (pkg / "docs.py").write_text("def load():\n    return 1\n")
    assert run_core_contract(pkg, tmp_path).returncode == 0
    (pkg / "brand_new.py").write_text("def debug(x):\n    from rich import print\n    print(x)\n")
    out = run_core_contract(pkg, tmp_path)
    assert out.returncode != 0 and "fakescope.brand_new -> rich" in out.stdout, out.stdout + out.stderr


# --- what importing the core pulls in ------------------------------------------------------------------------


def test_importing_every_core_module_imports_no_ui_and_no_torch() -> None:
    """Every core module on disk (the views aside), imported in a fresh process: textual, rich, torch and
    sentence-transformers stay out of sys.modules (import-linter cannot check this: it also sees the lazy imports
    inside functions, which are allowed). Every strategy class is loaded too."""
    core = sorted(m for m in import_graph(PACKAGE) if m.split(".")[1:2] not in (["cli"], ["tui"], ["__main__"]))
    code = (
        "import importlib, sys\n"
        f"for m in {core!r}:\n"
        "    importlib.import_module(m)\n"
        "from chunkscope.chunking.registry import strategy_class, strategy_names\n"
        "for n in strategy_names():\n"
        "    strategy_class(n)\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('textual','rich','torch','sentence_transformers'))\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == ""


def test_the_apps_headless_part_imports_no_textual() -> None:
    """tui/headless/ is the app's calls into the core: a headless test or a script can drive it without Textual."""
    headless = sorted(m for m in import_graph(PACKAGE) if m.startswith("chunkscope.tui.headless"))
    assert len(headless) >= 4
    code = ("import importlib, sys\n"
            f"for m in {headless!r}:\n    importlib.import_module(m)\n"
            "print(','.join(sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'rich'))))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == ""


def test_import_linter_contracts_hold() -> None:
    """pyproject.toml's contracts: the layers, the core never imports a view, the headless app never imports
    Textual."""
    contracts = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"]["contracts"]
    assert {"layers", "forbidden"} <= {c["type"] for c in contracts}
    out = subprocess.run([str(lint_imports()), "--no-cache"], cwd=REPO, capture_output=True, text=True, check=False,
                         timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr

