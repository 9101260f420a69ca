"""Issue 21's cases that no other test covered, through real parts (real subprocesses, a real pseudo-terminal, a
real HTTP endpoint, real read-only and full file systems): the network and HOME guard on a fresh cache (case 9), the
terminal-width tests in a 132x42 terminal and piped with odd settings (case 10), `lint` on a read-only cache and a
query on a full disk (case 6), progress while an endpoint does not answer, a server that does not speak HTTP and a
damaged store's one-line notice (case 8).

The cases that still fail on the tree as it stands are strict xfails naming what goes wrong: they turn into
failures (and must lose their mark) the day the product is fixed.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import SAMPLE_DOCS

REPO = Path(__file__).resolve().parents[1]

#: A connect or sendto that leaves this machine: an IPv4/IPv6 peer that is not loopback, or anything to port 53.
_INET_PEER = re.compile(r'sin6?_port=htons\((\d+)\).*?(?:inet_addr\("([^"]+)"\)|inet_pton\(AF_INET6, "([^"]+)")')


def _leaving_calls(trace: str) -> list[str]:
    """The traced network calls that leave this machine (a DNS query included, whatever its server)."""
    out = []
    for line in trace.splitlines():
        if not re.search(r"\b(connect|sendto|sendmsg|sendmmsg)\(", line) or "AF_INET" not in line:
            continue
        m = _INET_PEER.search(line)
        if m is None:
            continue
        port, v4, v6 = m.group(1), m.group(2), m.group(3)
        host = v4 or v6 or ""
        loopback = host.startswith("127.") or host in ("::1", "0.0.0.0")
        if port == "53" or not loopback:
            out.append(line.strip())
    return out


def _env(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("CHUNKSCOPE_CACHE", "XDG_CACHE_HOME", "XDG_CONFIG_HOME", "CHUNKSCOPE_USER_CONFIG")}
    env.update(HOME=str(home), PYTHONPATH=str(REPO / "src"), **extra)
    return env


#: What switches ONNX Runtime's telemetry off without chunkscope: its own opt-out, its test harness's signal and the
#: CI variables it honours. Removed from the traced query's environment, so that on a CI runner too the guard
#: below checks chunkscope's switch rather than the runner's.
_ORT_TELEMETRY_SWITCHES = ("ORT_DISABLE_TELEMETRY", "ORT_RUNNING_UNIT_TESTS", "CI", "TF_BUILD", "GITHUB_ACTIONS",
                           "GITLAB_CI", "CIRCLECI", "TRAVIS", "JENKINS_URL", "CODEBUILD_BUILD_ID", "BUILDKITE",
                           "TEAMCITY_VERSION", "APPVEYOR", "BITBUCKET_BUILD_NUMBER",
                           "SYSTEM_TEAMFOUNDATIONCOLLECTIONURI")


@pytest.mark.model
@pytest.mark.skipif(shutil.which("strace") is None, reason="strace is not installed: the network guard needs it")
def test_a_fresh_cache_query_reaches_no_network_and_writes_only_chunkscopes_folders(tmp_path: Path) -> None:
    """Case 9: ONNX Runtime's 1DS uploader looked up mobile.events.data.microsoft.com while the query embedded."""
    home = tmp_path / "home"
    home.mkdir()
    trace = tmp_path / "net.strace"
    env = {k: v for k, v in _env(home).items() if k not in _ORT_TELEMETRY_SWITCHES}
    done = subprocess.run(
        ["strace", "-f", "-qq", "-e", "trace=network", "-o", str(trace),
         sys.executable, "-m", "chunkscope", "query", str(SAMPLE_DOCS), "what is a vector"],
        cwd=home, env=env, capture_output=True, text=True, timeout=600)
    if done.returncode != 0 and "ptrace" in done.stderr:
        pytest.skip("strace cannot trace here (no ptrace)")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "results for" in done.stdout  # it really embedded, built the store and searched
    written = sorted(str(p.relative_to(home)) for p in home.rglob("*")
                     if not p.is_relative_to(home / ".cache" / "chunkscope")
                     and not p.is_relative_to(home / ".config" / "chunkscope")
                     and p not in (home / ".cache", home / ".config"))
    assert written == []
    assert _leaving_calls(trace.read_text(errors="replace")) == []


def test_the_trace_reader_sees_a_dns_query_and_ignores_loopback() -> None:
    """The guard above can fail: a DNS query and a remote connect are caught, loopback is not."""
    dns = '12 sendto(14, "x", 50, 0, {sa_family=AF_INET, sin_port=htons(53), sin_addr=inet_addr("10.0.0.53")}, 16) = 50'
    remote = '12 connect(5, {sa_family=AF_INET, sin_port=htons(443), sin_addr=inet_addr("20.42.65.92")}, 16) = 0'
    local = '12 connect(5, {sa_family=AF_INET, sin_port=htons(6333), sin_addr=inet_addr("127.0.0.1")}, 16) = 0'
    unix = '12 connect(3, {sa_family=AF_UNIX, sun_path="/var/run/nscd/socket"}, 110) = -1 ENOENT'
    assert _leaving_calls("\n".join([dns, remote, local, unix])) == [dns, remote]


def test_lint_on_a_read_only_cache_is_one_line_with_the_documented_exit_code(tmp_path: Path,
                                                                             read_only_dir: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# A\n\nSome honest text about rivers.\n", encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "chunkscope", "lint", str(docs)], cwd=tmp_path,
                          env=_env(tmp_path, CHUNKSCOPE_CACHE=str(read_only_dir)), capture_output=True, text=True,
                          timeout=120)
    assert "unexpected" not in done.stderr and "Traceback" not in done.stderr, done.stderr
    # lint either works without the cache or says in one line which folder cannot be written (exit 2)
    if done.returncode != 0:
        assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr
        assert str(read_only_dir) in done.stderr


# --- case 10: the tests that printed to the terminal's width pass in a real 132x42 terminal and with odd settings ---

#: Two of the three tests the issue names (the third, the compare screen's parameter bars, is run by its own file).
TERMINAL_TESTS = ["tests/test_tui_query_lint.py", "tests/test_tuning.py", "-k", "fit_the_terminal or cli_probe"]


def _pytest_in_a_terminal(env: dict[str, str], cols: int, rows: int) -> tuple[int, str]:
    """Run the terminal tests with stdin, stdout and stderr on a real pseudo-terminal of ``cols`` x ``rows``."""
    import fcntl
    import pty
    import struct
    import termios

    pid, fd = pty.fork()
    if pid == 0:  # the child: pytest on the terminal
        os.chdir(REPO)
        os.execvpe(sys.executable, [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *TERMINAL_TESTS],
                   env)
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
    out = b""
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        out += chunk
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), out.decode(errors="replace")


def _outer_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "NO_COLOR", "TERM")}
    env.update(extra)
    return env


def test_the_terminal_tests_pass_in_a_132x42_terminal() -> None:
    code, out = _pytest_in_a_terminal(_outer_env(TERM="xterm-256color"), 132, 42)
    assert code == 0 and "2 passed" in out, out[-3000:]


def test_the_terminal_tests_pass_piped_with_60_columns_a_dumb_terminal_and_no_colour() -> None:
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *TERMINAL_TESTS],
                          cwd=REPO, env=_outer_env(COLUMNS="60", TERM="dumb", NO_COLOR="1"), capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0 and "2 passed" in done.stdout, done.stdout[-3000:] + done.stderr[-2000:]


# --- case 6: a full disk; case 8: an endpoint that never answers ----------------------------------------------------


@pytest.fixture()
def full_cache(tmp_path: Path):
    """A 5 MB cache folder: room for the tokenizer's ranks, not for a store and its vectors."""
    folder = tmp_path / "full-cache"
    folder.mkdir()
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=5m", "tmpfs", str(folder)],
                                           capture_output=True).returncode != 0:
        pytest.skip("cannot make a small file system here (needs root)")
    yield folder
    subprocess.run(["umount", str(folder)], check=False)


def test_a_query_on_a_full_cache_disk_is_one_line_naming_the_cache(tmp_path: Path, full_cache: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "chunkscope", "query", str(SAMPLE_DOCS), "what is a vector"],
                          cwd=tmp_path, env=_env(tmp_path, CHUNKSCOPE_CACHE=str(full_cache)), capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 2, (done.returncode, done.stderr[-2000:])
    assert len(done.stderr.strip().splitlines()) == 1 and str(full_cache) in done.stderr, done.stderr


def test_an_endpoint_that_never_answers_shows_progress_while_waiting(tmp_path: Path) -> None:
    from tests.openai_server import GOOD_KEY, MODEL, EmbeddingsServer

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# A\n\nSome honest text about rivers.\n", encoding="utf-8")
    (docs / "chunkscope.toml").write_text("[embedder]\ntimeout = 3\n", encoding="utf-8")
    srv = EmbeddingsServer(lambda texts: np.ones((len(texts), 8)))
    srv._httpd.daemon_threads = True  # noqa: SLF001 - its handlers sleep: never wait for them at the end
    srv._httpd.block_on_close = False  # noqa: SLF001
    srv.delay = 300
    with srv:
        started = time.monotonic()
        done = subprocess.run([sys.executable, "-m", "chunkscope", "index", str(docs), "--embedder", f"openai:{MODEL}",
                               "--embed-url", srv.base_url], cwd=tmp_path,
                              env=_env(tmp_path, OPENAI_API_KEY=GOOD_KEY), capture_output=True, text=True, timeout=300)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and "no reply within 3s" in lines[-1], done.stderr  # the timeout holds, in one line
    assert time.monotonic() - started > 15  # six tries of 3 s and the waits between: long enough that a line is due
    assert any("elapsed" in line for line in lines[:-1]), done.stderr  # ... and something said so meanwhile


# --- case 8: a server that is not HTTP at all; a damaged store's notice -------------------------------------------


def test_a_server_that_does_not_speak_http_is_named_as_such_not_unreachable(tmp_path: Path) -> None:
    import socket
    import threading

    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def ssh_banner() -> None:  # what an SSH daemon does: its banner, whatever it is sent, then it hangs up
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            with conn:
                conn.sendall(b"SSH-2.0-OpenSSH_9.6\r\n")
                conn.recv(100)

    threading.Thread(target=ssh_banner, daemon=True).start()
    try:
        done = subprocess.run([sys.executable, "-m", "chunkscope", "query", str(SAMPLE_DOCS), "what is a vector",
                               "--qdrant-url", f"http://admin:hunter2@127.0.0.1:{port}"], cwd=tmp_path,
                              env=_env(tmp_path, CHUNKSCOPE_CACHE=str(tmp_path / "cache")), capture_output=True,
                              text=True, timeout=120)
    finally:
        listener.close()
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert f"http://***@127.0.0.1:{port}: a server answered, but it does not speak HTTP" in done.stderr
    assert "unreachable" not in done.stderr and "hunter2" not in done.stderr


def test_a_damaged_store_is_moved_aside_with_a_one_line_notice(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# Boats\n\nBoats float on water and carry people across rivers.\n", encoding="utf-8")
    env = _env(tmp_path, CHUNKSCOPE_CACHE=str(tmp_path / "cache"))
    first = subprocess.run([sys.executable, "-m", "chunkscope", "index", str(docs)], cwd=tmp_path, env=env,
                           capture_output=True, text=True, timeout=300)
    assert first.returncode == 0, first.stderr
    store_files = [p for p in (tmp_path / "cache" / "workspaces").rglob("*") if p.is_file() and "lock" not in p.name]
    for p in store_files:
        p.write_bytes(b"\x00garbage" * 64)
    done = subprocess.run([sys.executable, "-m", "chunkscope", "query", str(docs), "boats"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and "1 result for boats" in done.stdout, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Warning" not in done.stderr, done.stderr  # not Python's two-line RuntimeWarning
    assert lines[0].startswith("chunkscope: warning: vector store collection ") and "moved it to" in lines[0]


def test_a_plain_progress_beat_repeats_the_last_report_and_names_what_it_waits_on() -> None:
    import io

    from chunkscope.cli.progress_bar import PlainProgress
    from chunkscope.progress import Phase, Progress, waiting_on

    now = [100.0]
    out = io.StringIO()
    plain = PlainProgress("index default", every=5.0, stream=out, clock=lambda: now[0])
    watcher_out = io.StringIO()
    waits_only = PlainProgress("query", every=5.0, stream=watcher_out, clock=lambda: now[0])
    plain(Progress(Phase.EMBED, 20, 400, unit="texts", label="default"))
    now[0] += 4.0
    plain.beat()
    assert out.getvalue() == ""  # nothing is due yet
    now[0] += 2.0
    plain.beat()
    waits_only.beat(only_waits=True)
    assert out.getvalue().splitlines() == [
        "chunkscope: index default: embedding default: 20/400 texts · time left: measuring · no news for 6 s · 6 s "
        "elapsed"]
    assert watcher_out.getvalue() == ""  # nothing waits: the watcher is quiet
    with waiting_on("a reply from openai:m at http://127.0.0.1:9/v1/embeddings"):
        time.sleep(0.05)
        now[0] += 6.0
        waits_only.every = 0.01  # the wait has lasted longer than that
        waits_only.beat(only_waits=True)
    assert "waiting for a reply from openai:m at http://127.0.0.1:9/v1/embeddings (" in watcher_out.getvalue()
