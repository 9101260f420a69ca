"""One exit-code table for every command: 0 done, 1 findings or failures in the documents, 2 usage or load
error (nothing could be used), 130 interrupted (one line, no traceback)."""

from __future__ import annotations

import json
import os
import pty
import select
import signal
import subprocess
import time
from pathlib import Path

import pytest

from chunkscope.cli import main
from tests.test_tuning import BowEmbedder

REPO = Path(__file__).resolve().parents[1]
EXE = REPO / ".venv" / "bin" / "chunkscope"

#: A custom strategy that fails on any document saying BOOM (a strategy-level failure, as chunking records it).
SPLITTER = '''
def split(text):
    if "BOOM" in text:
        raise ValueError("this document makes the splitter fail")
    return [p for p in text.split("\\n\\n") if p.strip()]
'''

GOOD = "# Good\n\n## Wheels\n\nWheels turn on axles.\n\n## Motors\n\nMotors drive the wheels.\n"
BAD = "# Bad\n\n## Boom\n\nBOOM goes this one.\n"


def tree(tmp_path: Path, files: dict[str, str | bytes]) -> Path:
    root = tmp_path / "docs"
    root.mkdir()
    for name, text in files.items():
        p = root / name
        p.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
    (tmp_path / "splitter.py").write_text(SPLITTER, encoding="utf-8")
    (root / "chunkscope.toml").write_text(f'[presets.fragile]\nstrategy = "custom"\n'
                                          f'callable = "{tmp_path / "splitter.py"}:split"\n', encoding="utf-8")
    return root


@pytest.fixture(autouse=True)
def trusted(monkeypatch):
    """These trees are the test's own, and their config names the test's splitter: allowed, as a user allows it."""
    from chunkscope.config.trust import TRUST_ENV

    monkeypatch.setenv(TRUST_ENV, "1")


@pytest.fixture()
def bow(monkeypatch, tmp_path):
    """The retrieval commands with the bag-of-words embedder in place of the model."""
    from chunkscope.cli import retrieval_setup

    monkeypatch.setenv("CHUNKSCOPE_CACHE", str(tmp_path / "cache"))
    make = lambda ctx, args, model=None: BowEmbedder(tmp_path / "emb")  # noqa: E731
    monkeypatch.setattr(retrieval_setup, "make_embedder", make)


def run(capsys, *argv: str) -> tuple[int, str, str]:
    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


# --- files that fail: 1 with the others' output; none usable: 2 ------------------------------------------------

FILE_COMMANDS = [
    ("chunk", []),
    ("chunk", ["--format", "jsonl"]),
    ("stats", []),
    ("stats", ["--json"]),
    ("lint", []),
    ("lint", ["--format", "json"]),
    ("compare", ["-s", "recursive"]),
]


@pytest.mark.parametrize("command, extra", FILE_COMMANDS)
def test_a_file_the_strategy_cannot_chunk_exits_1_with_the_others_output(tmp_path, capsys, command, extra):
    root = tree(tmp_path, {"good.md": GOOD, "bad.md": BAD})
    rc, out, err = run(capsys, command, root, "-s", "fragile", *extra)
    assert rc == 1, err
    assert "bad.md" in err + out and "Traceback" not in err
    if command in ("chunk", "lint"):
        assert "good.md" in out or "Wheels" in out  # the good file's output is there


@pytest.mark.parametrize("command, extra", FILE_COMMANDS)
def test_no_file_the_strategy_can_chunk_exits_2(tmp_path, capsys, command, extra):
    root = tree(tmp_path, {"bad.md": BAD, "worse.md": BAD.replace("Bad", "Worse")})
    rc, out, err = run(capsys, command, root, "-s", "fragile", *extra)
    assert rc == 2, (out, err)
    assert "Traceback" not in err and err.strip().splitlines()[-1].startswith("chunkscope: error: ")


@pytest.mark.parametrize("command, extra", FILE_COMMANDS)
def test_a_file_that_cannot_be_read_exits_1(tmp_path, capsys, command, extra):
    root = tree(tmp_path, {"good.md": GOOD, "latin1.md": b"# Caf\xe9\n\nText.\n"})
    rc, out, err = run(capsys, *clean_argv(command, extra, root))
    assert rc == 1, (out, err)
    assert "latin1.md" in err + out and "invalid-utf8" in err + out


def clean_argv(command: str, extra: list[str], root: Path) -> list:
    """The command with a strategy that chunks every file (compare: two parameter sets of it)."""
    if command == "compare":
        return [command, root, "-s", "recursive", "--param-b", "chunk_size=128"]
    return [command, root, "-s", "recursive", *extra]


@pytest.mark.parametrize("command, extra", FILE_COMMANDS)
def test_clean_documents_exit_0(tmp_path, capsys, command, extra):
    root = tree(tmp_path, {"good.md": GOOD})
    rc, out, err = run(capsys, *clean_argv(command, extra, root))
    assert rc == 0, err


def test_retrieval_commands_with_an_unreadable_file_exit_1_after_their_output(tmp_path, capsys, bow):
    root = tree(tmp_path, {"good.md": GOOD, "latin1.md": b"# Caf\xe9\n\nText.\n"})
    queries = tmp_path / "q.jsonl"
    queries.write_text('{"query": "wheels", "expect": {"path": "good.md", "heading": "Wheels"}}\n', encoding="utf-8")
    for argv in (["index", root], ["query", root, "wheels"], ["eval", root, queries], ["probe", root],
                 ["sweep", root, "--probe", "-s", "recursive", "--grid", "chunk_size=32,64"]):
        rc, out, err = run(capsys, *argv)
        assert rc == 1, (argv[0], err)
        assert out.strip() and "invalid-utf8" in err, argv[0]
    # The same tree without the unreadable file: every command is done, 0.
    (root / "latin1.md").unlink()
    for argv in (["query", root, "wheels"], ["eval", root, queries], ["probe", root]):
        rc, out, err = run(capsys, *argv)
        assert rc == 0, (argv[0], err)


def test_index_and_query_with_a_file_the_strategy_cannot_chunk_exit_1_and_index_the_rest(tmp_path, capsys, bow):
    root = tree(tmp_path, {"good.md": GOOD, "bad.md": BAD})
    rc, out, err = run(capsys, "index", root, "-s", "fragile")
    assert rc == 1, err
    assert "bad.md: chunk-error: " in err and "this document makes the splitter fail" in err
    assert "Traceback" not in err and "written" in out
    rc, out, err = run(capsys, "query", root, "wheels", "-s", "fragile")
    assert rc == 1 and "good.md" in out and "bad.md: chunk-error" in err


# --- Ctrl-C: 130, one line "interrupted", no traceback --------------------------------------------------------


def test_a_stop_raised_by_the_core_is_an_interruption_not_an_unexpected_error(tmp_path, capsys, bow, monkeypatch):
    from chunkscope.evaluation import evaluate as evaluate_mod
    from chunkscope.progress import Cancelled

    def stopped(*args, **kwargs):
        raise Cancelled("evaluation stopped while indexing recursive")

    monkeypatch.setattr(evaluate_mod, "evaluate", stopped)
    root = tree(tmp_path, {"good.md": GOOD})
    queries = tmp_path / "q.jsonl"
    queries.write_text('{"query": "wheels", "expect": {"path": "good.md"}}\n', encoding="utf-8")
    rc, out, err = run(capsys, "eval", root, queries)
    assert rc == 130, err
    assert err.splitlines() == ["chunkscope: error: interrupted: evaluation stopped while indexing recursive"]


def big_tree(root: Path, files: int = 30) -> Path:
    root.mkdir()
    for i in range(files):
        sections = "\n\n".join(f"## Topic {i}.{j}\n\n" + " ".join(f"word{i}x{j}x{w} and more text" for w in range(60))
                               for j in range(6))
        (root / f"page{i:03d}.md").write_text(f"# Page {i}\n\n{sections}\n", encoding="utf-8")
    return root


def interrupt(argv: list[str], cache: Path, ready: str, timeout: float = 240.0) -> tuple[int, str]:
    """Run chunkscope with stderr on a terminal (so its progress shows), send SIGINT once ``ready`` appears on
    it, and return the exit code and everything it wrote to stderr."""
    master, slave = pty.openpty()
    env = {**os.environ, "CHUNKSCOPE_CACHE": str(cache), "HF_HUB_OFFLINE": "1", "COLUMNS": "200"}
    proc = subprocess.Popen([str(EXE), *argv], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=slave,
                            env=env)
    os.close(slave)
    seen, sent = b"", False
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            r, _, _ = select.select([master], [], [], 0.2)
            if r:
                try:
                    chunk = os.read(master, 65536)
                except OSError:  # the child closed the terminal
                    chunk = b""
                if not chunk and proc.poll() is not None:
                    break
                seen += chunk
            if not sent and ready.encode() in seen:
                proc.send_signal(signal.SIGINT)
                sent = True
            if proc.poll() is not None and not r:
                break
        assert sent, f"never saw {ready!r} on stderr: {seen[-2000:]!r}"
        rc = proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(master)
    return rc, seen.decode("utf-8", "replace")


@pytest.mark.model
@pytest.mark.parametrize("command", ["eval", "probe"])
def test_ctrl_c_during_eval_or_probe_exits_130_with_one_line(tmp_path, command):
    root = big_tree(tmp_path / "docs")
    queries = tmp_path / "q.jsonl"
    queries.write_text('{"query": "topic", "expect": {"path": "page001.md", "heading": "Topic 1.2"}}\n',
                       encoding="utf-8")
    argv = ["eval", str(root), str(queries)] if command == "eval" else ["probe", str(root)]
    # Interrupt once the model works (the progress says it is indexing, or names the strategy's step), not while
    # it loads.
    rc, err = interrupt(argv, tmp_path / "cache", "indexing" if command == "eval" else "default: ")
    assert rc == 130, err[-2000:]
    assert "interrupted" in err and "Traceback" not in err and "unexpected" not in err


# --- a busy tree: said at once, after the cheap checks ----------------------------------------------------------


def test_a_tree_in_use_is_said_at_once_and_a_bad_queries_file_before_that(tmp_path, capsys, monkeypatch):
    """Another process holding the tree's store is reported before any model loads (the store opens first), and
    what costs nothing to check (the queries file) is checked before the store is even asked."""
    from chunkscope.cli import retrieval_setup
    from chunkscope.retrieval.store import Store

    root = tree(tmp_path, {"good.md": GOOD})
    monkeypatch.setenv("CHUNKSCOPE_CACHE", str(tmp_path / "cache"))

    def no_model(*args, **kwargs):
        raise AssertionError("the embedder was made before the store said it is in use")

    monkeypatch.setattr(retrieval_setup, "make_embedder", no_model)
    queries = tmp_path / "q.jsonl"
    queries.write_text('{"query": "wheels", "expect": {"path": "good.md", "heading": "Wheels"}}\n', encoding="utf-8")
    bad = tmp_path / "bad.jsonl"
    bad.write_text("this is not JSON\n", encoding="utf-8")
    held = Store(root)  # the tree's own store, held as another chunkscope process would hold it
    try:
        for argv in (["index", root], ["query", root, "wheels"], ["eval", root, queries], ["probe", root],
                     ["sweep", root, "--probe", "-s", "fixed", "--grid", "chunk_size=64,128"],
                     ["tune", root, "--budget", "30s"], ["lint", root, "--embeddings"]):
            started = time.monotonic()
            rc, out, err = run(capsys, *argv)
            assert rc == 2 and "in use by another chunkscope process" in err, (argv, err)
            assert time.monotonic() - started < 30, argv
        for argv in (["eval", root, bad], ["sweep", root, bad, "-s", "fixed", "--grid", "chunk_size=64,128"],
                     ["tune", root, bad]):
            rc, out, err = run(capsys, *argv)
            assert rc == 2 and str(bad) in err and "in use" not in err, (argv, err)
    finally:
        held.close()


# --- the LLM commands (contexts, questions), against a chat endpoint on 127.0.0.1 -------------------------------

#: Enough words under each heading for `questions` to ask about the section.
SAID = " ".join(["The section says enough here for a question to be asked about it."] * 4)
LLM_GOOD = f"# Good\n\n## Wheels\n\nWheels turn on axles. {SAID}\n\n## Motors\n\nMotors drive the wheels. {SAID}\n"
LLM_COMMANDS = ["contexts", "questions"]


def llm_tree(tmp_path: Path, files: dict[str, str | bytes], url: str) -> Path:
    """`tree` whose config names the chat endpoint and gives ``section`` the LLM's contexts."""
    root = tree(tmp_path, files)
    with (root / "chunkscope.toml").open("a", encoding="utf-8") as f:
        f.write(f'[strategies.section]\nembed_prefix = "llm"\n[llm]\nmodel = "openai:fake-chat"\nurl = "{url}"\n')
    return root


def llm_argv(command: str, root: Path, *extra: str) -> list:
    if command == "contexts":
        return [command, root, "-s", "section", "--yes", *extra]
    return [command, root, "-n", "2", "--per-section", "1", "--yes", *extra]


@pytest.fixture()
def chat(monkeypatch, tmp_path):
    """A chat endpoint that answers both commands: a chunk's context, or a page's questions."""
    from tests.chat_server import ChatServer, honest, situate

    monkeypatch.setenv("CHUNKSCOPE_CACHE", str(tmp_path / "cache"))  # the contexts written are this test's own
    with ChatServer(lambda prompt: situate(prompt) if "<chunk>" in prompt else honest(prompt)) as srv:
        yield srv


@pytest.mark.parametrize("command", LLM_COMMANDS)
def test_the_llm_commands_exit_0_when_done(tmp_path, capsys, chat, command):
    root = llm_tree(tmp_path, {"good.md": LLM_GOOD}, chat.base_url)
    rc, out, err = run(capsys, *llm_argv(command, root))
    assert rc == 0, err
    assert chat.requests and "Traceback" not in err
    assert ("wrote 2 questions" if command == "questions" else "wrote 3 contexts") in err


@pytest.mark.parametrize("command", LLM_COMMANDS)
def test_the_llm_commands_with_an_unreadable_file_exit_1_after_their_output(tmp_path, capsys, chat, command):
    root = llm_tree(tmp_path, {"good.md": LLM_GOOD, "latin1.md": b"# Caf\xe9\n\nText.\n"}, chat.base_url)
    rc, out, err = run(capsys, *llm_argv(command, root))
    assert rc == 1, err
    assert "latin1.md: invalid-utf8" in err and "Traceback" not in err
    assert ("wrote 2 questions" if command == "questions" else "wrote 3 contexts") in err  # the good file's work
    if command == "questions":
        assert {json.loads(line)["expect"]["path"] for line in out.splitlines()} == {"good.md"}


@pytest.mark.parametrize("command", LLM_COMMANDS)
def test_the_llm_commands_exit_2_when_nothing_can_be_asked(tmp_path, capsys, chat, command):
    root = llm_tree(tmp_path, {"good.md": LLM_GOOD}, chat.base_url)
    usage = [command, root, "-s", "recursive", "--yes"] if command == "contexts" else llm_argv(command, root, "-n", "0")
    rc, out, err = run(capsys, *usage)  # contexts: a strategy without them; questions: no question asked
    assert rc == 2 and len(err.strip().splitlines()) == 1, err
    assert not chat.requests
    (tmp_path / "gone").mkdir()
    gone = llm_tree(tmp_path / "gone", {"good.md": LLM_GOOD}, "http://127.0.0.1:9/v1")
    rc, out, err = run(capsys, *llm_argv(command, gone))  # the endpoint cannot be reached
    assert rc == 2 and "cannot connect" in err and "Traceback" not in err, err


def test_contexts_with_a_file_the_strategy_cannot_chunk_exits_1_and_writes_the_others(tmp_path, capsys, chat):
    root = llm_tree(tmp_path, {"good.md": GOOD, "bad.md": BAD}, chat.base_url)
    toml = root / "chunkscope.toml"
    toml.write_text(toml.read_text(encoding="utf-8").replace(":split\"\n", ':split"\nembed_prefix = "llm"\n', 1),
                    encoding="utf-8")  # the fragile preset takes the LLM's contexts too
    rc, out, err = run(capsys, "contexts", str(root), "-s", "fragile", "--yes")
    assert rc == 1, err
    assert "bad.md: chunk-error: " in err and "wrote 5 contexts" in err and "Traceback" not in err
