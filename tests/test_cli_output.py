"""What the command line shows of the docs is the docs, byte for byte.

Commands and code are copied from a terminal into another: `pip install pkg[extra]` must not lose its
`[extra]` to Rich's markup, `:warning:` must not become an emoji, and a long command line must not be
broken in two. Every command that shows docs text (ingest's report lines, search, ask, eval's
report, insights, error messages) runs in-process over a real index of a small docs folder.
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from citedocs.cli import app

from conftest import write_docs

CORPUS = "brackets"
BASE_URL = "https://pkg.example.com/"
LONG_COMMAND = (  # the package indexes are the docs site's own host: trusted, so the block is not withheld
    'pip install "pkg[extra,socks]" --index-url https://pkg.example.com/simple/ '
    "--extra-index-url https://pkg.example.com/mirror/pypi/simple/"
)
INSTALL_PAGE = f"""---
title: Installing [extras] of pkg
---

# Installing pkg

Install the optional extra dependencies of pkg with `pip install pkg[extra]` in your virtual environment.

To stream a response body in raw chunks, call `.iter_raw([chunk_size])` on the response; the :warning: marker and [bold]text[/bold] stay as written.

```bash
{LONG_COMMAND}
```
"""
DOCS_TEXT = ("`pip install pkg[extra]`", "`.iter_raw([chunk_size])`", ":warning:", "[bold]text[/bold]")


def cli(*args: str):
    result = CliRunner().invoke(app, list(args))  # no COLUMNS: Rich's default width of 80, as in a pipe
    assert result.exit_code in (0, 1), result.output
    return result


@pytest.fixture
def bracket_docs(tmp_home: Path, tmp_path: Path) -> Path:
    docs = write_docs(
        tmp_path / "docs",
        {
            "install.md": INSTALL_PAGE,
            "proxies.md": "---\ntitle: Proxies\n---\n\nRoute requests through a proxy with `proxy=\"http://localhost:8030\"`.\n",
            "drafts/notes[old].md": b"\xff\xfe not UTF-8",  # skipped: its path is shown as it is
        },
    )
    result = cli("ingest", str(docs), "--corpus", CORPUS, "--base-url", BASE_URL)
    assert result.exit_code == 0, result.output
    assert "skipped drafts/notes[old].md: not valid UTF-8" in result.output
    return docs


def test_search_shows_titles_and_text_with_brackets_as_written(bracket_docs: Path):
    shown = cli("search", "install the optional extra dependencies", "--corpus", CORPUS, "--k", "1").output
    assert "Installing [extras] of pkg › Installing pkg" in shown
    assert "with `pip install pkg[extra]` in your virtual environment." in shown
    assert "`.iter_raw([chunk_size])` on the response; the :" in shown  # the snippet ends in 200 characters


def test_a_page_without_headings_is_labelled_by_its_title_once(bracket_docs: Path):
    shown = cli("search", "route requests through a proxy", "--corpus", CORPUS, "--k", "1").output
    assert "\n   Proxies\n" in shown and "Proxies › Proxies" not in shown


def test_search_json_gives_each_hit_s_whole_chunk(bracket_docs: Path):
    hits = json.loads(cli("search", "install the optional extra dependencies", "--corpus", CORPUS, "--json").stdout)["hits"]
    text = hits[0]["text"]
    assert len(text) > 300 and LONG_COMMAND in text and all(piece in text for piece in DOCS_TEXT)


@pytest.mark.parametrize(
    "question",
    ["How do I install the optional extra dependencies of pkg?", "How do I stream a response body in raw chunks?"],
)
def test_ask_prints_the_answer_byte_exact(bracket_docs: Path, question: str):
    contract = json.loads(cli("ask", question, "--corpus", CORPUS, "--backend", "extractive", "--json").stdout)
    assert not contract["refused"], contract
    shown = cli("ask", question, "--corpus", CORPUS, "--backend", "extractive").stdout
    answer = contract["answer"]
    for n, citation in enumerate(contract["citations"], start=1):
        answer = answer.replace(f"[{citation['id']}]", f"[{n}]")
    assert answer in shown
    assert LONG_COMMAND in shown.splitlines()  # one line, not wrapped at 80 columns
    assert "[1] Installing [extras] of pkg › Installing pkg" in shown
    assert f"    {BASE_URL}install/#installing-pkg  install#installing-pkg/1" in shown


def test_a_refusal_names_the_user_s_term_as_typed(bracket_docs: Path):
    question = "What does the `frobnicate[fast]` option of pkg install do?"
    contract = json.loads(cli("ask", question, "--corpus", CORPUS, "--backend", "extractive", "--json").stdout)
    assert contract["refused"]
    shown = cli("ask", question, "--corpus", CORPUS, "--backend", "extractive").stdout
    assert contract["answer"] in shown


def test_eval_report_and_insights_show_questions_and_titles_as_written(bracket_docs: Path, tmp_path: Path):
    cases = tmp_path / "brackets-dev.jsonl"
    # a case that fails (no answer states that keyword), so the report lists its question
    question = "Why doesn't `.iter_raw([chunk_size])` keep :warning: & \"quotes\" as written?"
    case = {
        "id": "b-1", "question": question, "bucket": "answerable", "should_refuse": False,
        "expected_sources": ["install.md#installing-pkg"], "expected_keywords": ["no-such-keyword"],
    }
    cases.write_text(json.dumps(case) + "\n")
    shown = cli("eval", str(cases), "--corpus", CORPUS, "--backend", "extractive", "--out", str(tmp_path / "out")).stdout
    assert any(line.startswith("- `b-1` (answerable): ") and line.endswith(f" — {question}") for line in shown.splitlines())
    assert "| retrieval recall@6 (page) |" in shown  # the run retrieves top_k = 6 chunks per case
    report_md = (tmp_path / "out" / "report.md").read_text()
    assert question in report_md and "&#x27;" not in report_md and "&quot;" not in report_md
    report_html = (tmp_path / "out" / "report.html").read_text()
    assert html.escape(question) in report_html and "&amp;#x27;" not in report_html and "&amp;quot;" not in report_html
    insights = cli("insights", "--corpus", CORPUS, "--no-gaps").stdout
    assert "Installing [extras] of pkg: " in insights


def test_errors_name_paths_with_brackets_as_written(tmp_home: Path, tmp_path: Path):
    missing = tmp_path / "docs[v2]"
    result = CliRunner().invoke(app, ["ingest", str(missing), "--corpus", CORPUS])
    assert result.exit_code == 2
    assert str(missing) in result.output


def test_the_floor_metrics_sources_set_help_shows_are_the_ones_it_accepts():
    from citedocs.sync.service import release_floors

    shown = CliRunner().invoke(app, ["sources", "set", "--help"], env={"COLUMNS": "300"}).output
    examples = re.findall(r"([a-z_]+(?:@\d+)?)=\d", shown)
    assert examples, shown
    assert release_floors([f"{metric}=0.5" for metric in examples], Path("cases.jsonl")) == dict.fromkeys(examples, 0.5)


def test_a_term_the_docs_have_elsewhere_is_no_docs_gap_and_an_absent_one_is(bracket_docs: Path):
    def ask(question: str) -> dict:
        args = ("ask", question, "--corpus", CORPUS, "--backend", "extractive", "--top-k", "1", "--json")
        return json.loads(cli(*args).stdout)

    elsewhere = ask("How do I route requests through a proxy with --extra-index-url?")  # on the install page only
    assert elsewhere["refused"] and elsewhere["refusal_reason"].startswith("terms_not_in_passages: ")
    assert "--extra-index-url (the docs do, elsewhere)" in elsewhere["answer"] and "don't mention" not in elsewhere["answer"]
    assert elsewhere["answer"].startswith(f"I can't answer this from the {CORPUS} docs: ")  # the name as written
    absent = ask("How do I route requests through a proxy with --no-such-flag?")
    assert absent["refusal_reason"] == "question_terms_not_in_docs: the docs don't mention --no-such-flag."
    report = json.loads(cli("insights", "--corpus", CORPUS, "--json").stdout)
    named = [term for group in report["gaps"]["groups"] for term in group["missing_terms"]]
    assert "--no-such-flag" in named and "--extra-index-url" not in named
