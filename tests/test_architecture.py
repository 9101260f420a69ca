"""Architecture rules, checked on the source: no import cycle (lazy imports included), no CLI flag named in the core,
and no core module importing a view, whatever its name.

A lazy import breaks a cycle at run time but not in the design: two modules that need each other are one module
in two files, and the next top-level import turns the cycle into an ImportError. Only imports under
``if TYPE_CHECKING:`` are left out, since they never run.
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "src" / "chunkscope"
#: The views and the entry point: everything else in the package is the core.
VIEWS = ("cli", "tui", "__main__")


def _module_name(file: Path, root: Path) -> str:
    parts = list(file.relative_to(root.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skipped |= {id(x) for stmt in node.body for x in ast.walk(stmt)}
    return skipped


def _imported(node: ast.ImportFrom, module: str, is_package: bool, known: set[str]) -> set[str]:
    base = module.split(".") if is_package else module.split(".")[:-1]
    if node.level:
        target = ".".join(base[: len(base) - (node.level - 1)] + ([node.module] if node.module else []))
    else:
        target = node.module or ""
    # "from .strategies import recursive" imports a module; "from .chunk import Chunk" imports from one.
    return {f"{target}.{a.name}" if f"{target}.{a.name}" in known else target for a in node.names}


def import_graph(root: Path) -> dict[str, set[str]]:
    """Module → the package's modules it imports (anywhere in its code, but under TYPE_CHECKING)."""
    files = {_module_name(f, root): f for f in root.rglob("*.py")}
    known = set(files)
    graph: dict[str, set[str]] = {}
    for module, file in files.items():
        tree = ast.parse(file.read_text(encoding="utf-8"))
        skipped = _type_checking_nodes(tree)
        deps: set[str] = set()
        for node in ast.walk(tree):
            if id(node) in skipped:
                continue
            if isinstance(node, ast.ImportFrom):
                deps |= _imported(node, module, file.name == "__init__.py", known)
            elif isinstance(node, ast.Import):
                deps |= {a.name for a in node.names}
        # A package importing its own submodules, or a module its parent package, is not a cycle of design.
        graph[module] = {d for d in deps if d in known and d != module and not module.startswith(d + ".")}
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


def test_chunkscope_has_no_import_cycle() -> None:
    graph = import_graph(PACKAGE)
    assert len(graph) > 40, "the package was not found where the test looks for it"
    assert cycles(graph) == []


def test_the_check_finds_a_cycle_through_a_lazy_import(tmp_path: Path) -> None:
    # The shape chunkscope had: docs imported structure lazily, structure imported docs lazily.
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "docs.py").write_text("def structure():\n    from .structure import parse\n    return parse\n")
    (pkg / "structure.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .docs import structure\n"
        "def parse():\n    from .docs import structure\n    return structure\n")
    (pkg / "site.py").write_text("from .structure import parse\n")
    assert cycles(import_graph(pkg)) == [["pkg.docs", "pkg.structure", "pkg.docs"]]
    # Under TYPE_CHECKING only, there is no cycle.
    (pkg / "structure.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .docs import x\n")
    assert cycles(import_graph(pkg)) == []


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
                    if "chunkscope.tui" in c["forbidden_modules"])
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
