"""``chunkscope questions``: labelled questions from a chat model, checked, written as a file ``eval`` reads unchanged.

Every test talks to a real HTTP chat endpoint on 127.0.0.1 (`tests/chat_server.py`); no real LLM is needed to
prove the plumbing: the fake writes its questions from each section's first sentence.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .chat_server import ChatServer, first_sentence, honest, sections
from chunkscope.cli import main
from chunkscope.document.loader import load_docs
from chunkscope.evaluation.queries import load_queries
from chunkscope.evaluation.question_gen import SYSTEM_PROMPT, copies_heading, plan_questions
from chunkscope.evaluation.regions import resolve_region

FILLER = ("The rest of this paragraph gives the reader enough words to ask about, so the section is long enough "
          "to be sampled by the question writer and checked against its evidence later on.")

PAGES = {
    "cooking.md": (
        "# Cooking\n\n"
        "## Bread\n\nKnead the dough for ten minutes before it rises. " + FILLER + "\n\n"
        "### Examples\n\nA sourdough loaf needs a starter fed the night before. " + FILLER + "\n\n"
        "## Soup\n\nSimmer the vegetables slowly so the broth stays clear. " + FILLER + "\n\n"
        "### Examples\n\nA minestrone takes beans, pasta and a rind of cheese. " + FILLER + "\n"
    ),
    "garden.md": (
        "# Garden\n\n"
        "## Roses\n\nPrune the roses in late winter just above an outward bud. " + FILLER + "\n\n"
        "## Compost\n\nTurn the compost heap every week to let air reach the middle. " + FILLER + "\n\n"
        "## Tiny\n\nToo short.\n"
    ),
}


@pytest.fixture()
def docs(tmp_path: Path) -> Path:
    root = tmp_path / "docs"
    root.mkdir()
    for name, text in PAGES.items():
        (root / name).write_text(text, encoding="utf-8")
    return root


def run(docs: Path, srv: ChatServer, *extra: str) -> int:
    return main(["questions", str(docs), "--llm", "openai:fake-chat", "--llm-url", srv.base_url, *extra])


def test_writes_checked_questions_that_resolve_to_their_sections(docs, tmp_path, capsys):
    out = tmp_path / "q.jsonl"
    with ChatServer() as srv:
        rc = run(docs, srv, "-n", "6", "--per-section", "1", "--yes", "--out", str(out))
    err = capsys.readouterr().err
    assert rc == 0, err
    assert "tokens in" in err.splitlines()[0]  # the cost comes before anything is sent
    assert len(srv.requests) == 2  # one request per page
    assert srv.requests[0]["body"]["model"] == "fake-chat"
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    # Six sections have text to ask about; "Tiny" has not.
    assert len(rows) == 6
    assert all("Tiny" not in json.dumps(r) for r in rows)
    tree = load_docs(docs)
    cases = load_queries(out)  # eval's own reader takes the file as written
    for row, case in zip(rows, cases):
        region = resolve_region(tree, case)
        doc = tree.get(case.expect.path)
        assert doc is not None
        assert row["evidence"] in doc.text[region.start:region.end]  # the section named holds the evidence
    # "Examples" twice on one page: named by anchor, each the right one.
    examples = [r for r in rows if "anchor" in r["expect"]]
    assert sorted(r["expect"]["anchor"] for r in examples) == ["examples", "examples-1"]
    assert all(r["generated_by"] == "openai:fake-chat" for r in rows)


def test_off_a_terminal_nothing_is_sent_without_yes(docs, capsys):
    with ChatServer() as srv:
        rc = run(docs, srv, "-n", "4")
    err = capsys.readouterr().err
    assert rc == 2
    assert srv.requests == []
    assert "tokens in" in err and "--yes" in err


def test_rows_are_repaired_or_refused(docs, tmp_path, capsys):
    def sloppy(prompt: str) -> str:
        shown = sections(prompt)
        rows = []
        for heading, body in shown:
            evidence = first_sentence(body)
            rows += [
                # the heading in other case and spacing: repaired to the page's own
                {"heading": "  " + heading.upper(), "question": f"Why {evidence.lower()}", "evidence": evidence},
                # a heading the page does not have: refused
                {"heading": "Nowhere", "question": "Is this anywhere at all?", "evidence": evidence},
                # evidence the page does not hold: refused
                {"heading": heading, "question": "What is the moon made of?", "evidence": "The moon is cheese, "
                 "as every astronomer has agreed since antiquity."},
                # the heading as a question: refused
                {"heading": heading, "question": f"What is {heading}?", "evidence": evidence},
            ]
        if len(shown) >= 2:
            # evidence from the page's other section under the first one's heading: moved where the evidence is
            other = shown[-1]
            rows.append({"heading": shown[0][0], "question": "Which step keeps things clear or aired?",
                         "evidence": first_sentence(other[1])})
        return json.dumps({"questions": rows})

    out = tmp_path / "q.jsonl"
    with ChatServer(sloppy) as srv:
        rc = run(docs, srv, "-n", "6", "--per-section", "1", "--yes", "--out", str(out))
    err = capsys.readouterr().err
    assert rc == 0, err
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    refused = [line for line in err.splitlines() if line.startswith("refused:")]
    repaired = [line for line in err.splitlines() if line.startswith("repaired:")]
    assert any("'Nowhere' is not on the page" in line for line in refused)
    assert any("evidence is not in the page" in line for line in refused)
    assert any("only restates its heading" in line for line in refused)
    assert any("where the evidence is" in line for line in repaired)
    tree = load_docs(docs)
    for case, row in zip(load_queries(out), rows):
        region = resolve_region(tree, case)
        doc = tree.get(case.expect.path)
        assert doc is not None and row["evidence"] in doc.text[region.start:region.end]
    headings = {r["expect"].get("heading") for r in rows}
    assert "Nowhere" not in headings and not any(h and h != h.strip() for h in headings)


def test_a_page_that_answers_nonsense_is_reported_and_the_rest_go_on(docs, tmp_path, capsys):
    def half_broken(prompt: str) -> str:
        return "I cannot do that." if "Page: cooking.md" in prompt else honest(prompt)

    out = tmp_path / "q.jsonl"
    with ChatServer(half_broken) as srv:
        srv.fail_next = [503]  # retried, then answered
        rc = run(docs, srv, "-n", "6", "--per-section", "1", "--yes", "--out", str(out))
    err = capsys.readouterr().err
    assert rc == 0, err
    assert any(line.startswith("failed: cooking.md") for line in err.splitlines())
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert rows and {r["expect"]["path"] for r in rows} == {"garden.md"}
    assert "Traceback" not in err


def test_a_refused_key_ends_the_run_and_any_other_refusal_fails_only_its_page(docs, tmp_path, capsys):
    out = tmp_path / "q.jsonl"
    with ChatServer() as srv:
        for status in (401, 403):  # every next page would be refused the same way: one line, nothing more sent
            srv.requests.clear()
            srv.fail_next = [status]
            rc = run(docs, srv, "-n", "6", "--per-section", "1", "--yes", "--out", str(out))
            err = capsys.readouterr().err.strip().splitlines()
            assert rc == 2 and len(srv.requests) == 1, err
            assert err[-1].startswith("chunkscope: error: ") and f"refused the API key (HTTP {status})" in err[-1]
        # Decided by the status, not by the words: a page refused for its own reason, which mentions a 401.
        srv.requests.clear()
        srv.fail_next, srv.fail_reason = [400], "this prompt is too long (it is not an HTTP 401)"
        rc = run(docs, srv, "-n", "6", "--per-section", "1", "--yes", "--out", str(out))
        err = capsys.readouterr().err.strip().splitlines()
        assert rc == 0 and len(srv.requests) == 2, err
        assert [line for line in err if line.startswith("failed: ")] == \
            [f"failed: cooking.md: fake-chat at {srv.base_url}/chat/completions: HTTP 400: {srv.fail_reason}"]
    assert {json.loads(line)["expect"]["path"] for line in out.read_text(encoding="utf-8").splitlines()} == \
        {"garden.md"}


def test_a_chat_error_carries_the_endpoints_status(docs):
    from chunkscope.llm.chat import ChatClient, LlmError, parse_chat_model

    with ChatServer() as srv:
        client = ChatClient(parse_chat_model("openai:fake-chat", srv.base_url), max_retries=1, backoff=0.0)
        try:
            for status in (401, 404, 503):
                srv.fail_next = [status] * 2  # a 503 is retried once, then given up
                with pytest.raises(LlmError) as refused:
                    client.complete("system", "user", max_tokens=5)
                assert refused.value.status == status and refused.value.reached
            assert client.complete("system", "user", max_tokens=5)  # answered: no error
        finally:
            client.close()
    gone = ChatClient(parse_chat_model("openai:fake-chat", "http://127.0.0.1:9/v1"))
    with pytest.raises(LlmError, match="cannot connect") as unreachable:
        gone.complete("system", "user", max_tokens=5)
    assert unreachable.value.status is None and not unreachable.value.reached
    gone.close()


def test_an_unreachable_endpoint_is_one_line(docs, capsys):
    rc = main(["questions", str(docs), "--llm", "openai:x", "--llm-url", "http://127.0.0.1:9/v1", "--yes"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2
    assert "cannot connect" in err[-1] and "Traceback" not in "\n".join(err)


def test_a_model_without_the_openai_prefix_is_refused(docs, capsys):
    rc = main(["questions", str(docs), "--llm", "gpt-4o-mini", "--yes"])
    assert rc == 2
    assert "openai:MODEL" in capsys.readouterr().err


def test_the_key_goes_to_a_url_the_tree_names_only_when_trusted(docs, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret-123")
    with ChatServer() as srv:
        (docs / "chunkscope.toml").write_text(f'[llm]\nmodel = "openai:fake-chat"\nurl = "{srv.base_url}"\n',
                                             encoding="utf-8")
        assert main(["questions", str(docs), "-n", "1", "--per-section", "1", "--yes"]) == 0
        assert main(["questions", str(docs), "-n", "1", "--per-section", "1", "--yes", "--trust-tree-config"]) == 0
    capsys.readouterr()
    assert [r["auth"] for r in srv.requests] == ["", "Bearer sk-secret-123"]


def test_the_estimate_counts_what_is_sent(docs):
    from chunkscope.tokens import get_tokenizer

    tree = load_docs(docs)
    plan = plan_questions(tree, 4, per_section=2)
    count = get_tokenizer("cl100k_base").count
    sent, out = plan.estimate(count)
    assert sent == sum(count(SYSTEM_PROMPT) + count(r.prompt) for r in plan.requests)
    assert out == sum(r.max_tokens for r in plan.requests) and out > 0
    assert plan.sections == 2  # 4 questions, 2 a section


@pytest.mark.parametrize(("question", "heading", "copy"), [
    ("What is ownership?", "Ownership", True),
    ("What Is Ownership", "4.1 What Is Ownership?", True),
    ("How do I use ownership with closures?", "Ownership", False),
    ("Why does the borrow checker reject two mutable references?", "References and Borrowing", False),
])
def test_copies_heading(question, heading, copy):
    assert copies_heading(question, heading) is copy


@pytest.mark.model
def test_eval_reads_the_written_file_unchanged(docs, tmp_path, capsys):
    out = tmp_path / "q.jsonl"
    with ChatServer() as srv:
        assert run(docs, srv, "-n", "6", "--per-section", "1", "--yes", "--out", str(out)) == 0
    capsys.readouterr()
    rc = main(["eval", str(docs), str(out), "--json"])
    captured = capsys.readouterr()
    assert rc == 0, captured.err
    report = json.loads(captured.out)
    text = json.dumps(report)
    assert "hit@" in text or "hit_at" in text
    assert "gen-001" in text


@pytest.mark.parametrize(("table", "words"), [
    ('model = "gpt-4o-mini"', "openai:MODEL"),
    ('model = "openai:m"\ntimeout = 0', "llm.timeout"),
    ('model = "openai:m"\nurl = "ftp://host"', "not an http(s) URL"),
    ('modle = "openai:m"', "modle"),
])
def test_a_bad_llm_table_is_one_line_naming_the_file(docs, capsys, table, words):
    (docs / "chunkscope.toml").write_text(f"[llm]\n{table}\n", encoding="utf-8")
    rc = main(["questions", str(docs), "--yes"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2
    assert len(err) == 1 and words in err[0] and "chunkscope.toml" in err[0]
