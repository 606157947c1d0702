"""Metric definitions on hand-built rows, the gate, and the release gate on the dev set."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from citedocs.eval.cases import CaseFileError, load_cases
from citedocs.eval.harness import check_gate, run_eval, states_keywords
from citedocs.eval.metrics import answer_sentences, refusal_scores, summarize_rows

ROOT = Path(__file__).resolve().parent.parent
DEV_CASES = ROOT / "evals" / "astro-dev.jsonl"


def row(**overrides) -> dict:
    base = {
        "bucket": "answerable",
        "should_refuse": False,
        "refused": False,
        "sentences": 2,
        "cited_sentences": 2,
        "entailed_claims": 2,
        "cited_ids": ["a#b/1"],
        "invented_ids": [],
        "keywords_ok": True,
        "cites_expected_source": True,
        "page_rank": 1,
        "anchor_rank": 1,
        "retrieved_ids": ["a#b/1"],
        "latency_ms": {"total": 100.0},
    }
    return base | overrides


def test_refusal_scores_treat_refusal_as_the_positive_class():
    rows = [
        row(should_refuse=True, refused=True),  # TP
        row(should_refuse=True, refused=False),  # FN: a hallucination risk
        row(should_refuse=False, refused=True),  # FP: an unnecessary refusal
        row(should_refuse=False, refused=False),  # TN
    ]
    scores = refusal_scores(rows)
    assert (scores["tp"], scores["fp"], scores["fn"], scores["tn"]) == (1, 1, 1, 1)
    assert scores["precision"] == 0.5 and scores["recall"] == 0.5 and scores["f1"] == 0.5


def test_cite_coverage_and_correctness_count_sentences_and_claims():
    summary = summarize_rows(
        [row(sentences=4, cited_sentences=3, entailed_claims=2), row(sentences=1, cited_sentences=1, entailed_claims=1)]
    )
    assert summary["cite_coverage"] == pytest.approx(4 / 5)
    assert summary["cite_correctness"] == pytest.approx(3 / 4)


def test_invented_citation_rate_is_invented_over_all_citations():
    summary = summarize_rows([row(cited_ids=["a#/1", "x#/9"], invented_ids=["x#/9"]), row(cited_ids=["a#/1"])])
    assert summary["invented_citation_rate"] == pytest.approx(1 / 3)


def test_keyword_correctness_counts_answered_answerable_cases_only():
    summary = summarize_rows(
        [row(keywords_ok=True), row(keywords_ok=False), row(refused=True, keywords_ok=False), row(should_refuse=True, refused=True, keywords_ok=False)]
    )
    assert summary["keyword_correctness"] == pytest.approx(1 / 2)
    assert summary["keyword_correctness_all_answerable"] == pytest.approx(1 / 3)


def test_a_keyword_only_a_citation_id_holds_is_not_stated_by_the_answer():
    answer = "Test on a phone during development [reference/cli-reference#--host-optional-host-address/1]."
    assert not states_keywords(answer, ["--host"])
    assert states_keywords("Run `astro dev --host` [reference/cli-reference#--host-optional-host-address/1].", ["--host"])


def test_keywords_in_code_and_in_ordinary_brackets_still_count():
    answer = "Add a mapping [a#b/1]:\n\n```ini\n[jinja2: **.html]\nextensions = jinja2.ext.i18n\n```\n[a#b/1]"
    assert states_keywords(answer, ["[jinja2:", "jinja2.ext.i18n"])
    assert not states_keywords(answer, [])  # a case without keywords is never keyword-correct


def test_retrieval_recall_and_mrr():
    summary = summarize_rows([row(page_rank=1), row(page_rank=4), row(page_rank=None)])
    assert summary["retrieval_recall@1"] == pytest.approx(1 / 3)
    assert summary["retrieval_recall@5"] == pytest.approx(2 / 3)
    assert summary["mrr"] == pytest.approx((1 + 0.25) / 3)


def test_answer_sentences_split_claims_and_ignore_code():
    answer = "Use `--mode` to pick a file [a#b/1]. It loads `.env.staging` [a#b/1] [c#/2].\n\n```sh\nastro dev\n```\n[a#b/1]"
    assert answer_sentences(answer) == [("Use `--mode` to pick a file.", ["a#b/1"]), ("It loads `.env.staging`.", ["a#b/1", "c#/2"])]


def test_gate_names_every_failing_metric_and_bad_case_ids(tmp_path):
    gate = tmp_path / "gate.toml"
    gate.write_text('[min]\ncite_coverage = 0.98\nrefusal_recall = 0.9\n[max]\ninvented_citation_rate = 0.0\n')
    summary = {
        "overall": summarize_rows([row(sentences=2, cited_sentences=1), row(should_refuse=True, refused=False, cited_ids=["z#/1"], invented_ids=["z#/1"])]),
        "case_ids": ["c1", "c2", "c2"],
    }
    failures = check_gate(summary, gate, expected_case_ids=["c1", "c2", "c3"])
    text = "\n".join(failures)
    assert "cite_coverage" in text and "refusal_recall" in text and "invented_citation_rate" in text
    assert "duplicate case ids: c2" in text and "missing case ids: c3" in text


def test_gate_passes_a_clean_run(tmp_path):
    gate = tmp_path / "gate.toml"
    gate.write_text("[min]\ncite_coverage = 0.98\n[max]\ninvented_citation_rate = 0.0\n")
    assert check_gate({"overall": summarize_rows([row()]), "case_ids": ["c1"]}, gate) == []


def test_case_file_errors_name_the_line(tmp_path):
    bad = tmp_path / "cases.jsonl"
    good = {"id": "x-1", "question": "q?", "bucket": "answerable", "should_refuse": False}
    bad.write_text(json.dumps(good) + "\n{oops\n" + json.dumps(good) + "\n" + json.dumps({"id": "x-2"}) + "\n")
    with pytest.raises(CaseFileError) as error:
        load_cases(bad)
    message = str(error.value)
    assert "line 2: not valid JSON" in message
    assert "line 3: duplicate case id 'x-1'" in message
    assert "line 4: field question" in message


@pytest.mark.slow
def test_release_gate_holds_on_the_dev_set(astro_services, tmp_path):
    """CI's regression gate: the deterministic backend on the dev set, at gates/ci-extractive.toml."""
    from citedocs.service import Services

    services = Services(store=astro_services.store, backend="extractive")
    cases = load_cases(DEV_CASES)
    run = run_eval(cases, DEV_CASES, services, "astro")
    failures = check_gate(run.summary, ROOT / "gates" / "ci-extractive.toml", [c.id for c in cases])
    assert failures == [], failures
    assert run.summary["overall"]["invented_citation_rate"] == 0.0


@pytest.mark.slow
def test_eval_command_writes_reports_and_fails_the_gate(astro_services, tmp_path):
    small = tmp_path / "small.jsonl"
    small.write_text("\n".join(DEV_CASES.read_text().splitlines()[:2] + DEV_CASES.read_text().splitlines()[-2:]) + "\n")
    env_home = str(astro_services.store.path.parent)
    strict = tmp_path / "strict.toml"
    strict.write_text("[min]\nkeyword_correctness = 1.01\n")
    result = subprocess.run(
        [sys.executable, "-m", "citedocs.cli", "eval", str(small), "--backend", "extractive", "--out", str(tmp_path / "out"), "--gate", str(strict)],
        env={**os.environ, "CITEDOCS_HOME": env_home},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 1, result.stderr
    assert "keyword_correctness" in result.stderr
    for name in ("rows.jsonl", "summary.json", "report.md", "report.html"):
        assert (tmp_path / "out" / name).is_file()
    rows = [json.loads(line) for line in (tmp_path / "out" / "rows.jsonl").read_text().splitlines()]
    assert {"dataset_hash", "config_hash", "corpus_version", "claim_verdicts", "pass", "latency_ms"} <= set(rows[0])
