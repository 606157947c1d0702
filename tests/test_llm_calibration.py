"""The LLM grade threshold is one global value fitted to refusal F1 over recorded runs; the LLM
judge's agreement with the lexical judge is reported. Pure functions over eval rows, no model."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from typer.testing import CliRunner

from citedocs.cli import app
from citedocs.eval.calibrate import calibrate_grade_threshold
from citedocs.eval.metrics import summarize_rows
from citedocs.validate.thresholds import DEFAULT_PATH, load_thresholds


def _row(should_refuse: bool, grades: list[float], refused: bool = False, reason: str | None = None) -> dict:
    return {
        "should_refuse": should_refuse,
        "refused": refused,
        "refusal_reason": reason,
        "grades": [{"chunk_id": f"c{n}", "p_relevant": p, "kept": True} for n, p in enumerate(grades)],
    }


def test_the_grade_threshold_separates_answerable_from_unanswerable_by_their_best_grade():
    rows = [
        _row(False, [0.9, 0.3]),
        _row(False, [0.75]),
        _row(True, [0.6, 0.2]),
        _row(True, [0.55]),
        _row(True, [0.4], refused=True, reason="low_retrieval_confidence: weak"),
    ]
    result = calibrate_grade_threshold(rows, run_min_grade=0.5)
    assert 0.6 < result.threshold <= 0.75 and result.f1 == 1.0


def test_thresholds_below_the_runs_own_are_never_proposed():
    rows = [_row(False, [0.45], refused=True, reason="no_relevant_passage: none kept"), _row(True, [0.2])]
    result = calibrate_grade_threshold(rows, run_min_grade=0.5)
    assert result.threshold >= 0.5


def _answered(verdicts: list[dict]) -> dict:
    return {
        "should_refuse": False, "refused": False, "sentences": len(verdicts), "cited_sentences": len(verdicts),
        "entailed_claims": sum(v["entailed"] for v in verdicts), "cited_ids": ["a"], "invented_ids": [],
        "keywords_ok": True, "cites_expected_source": True, "claim_verdicts": verdicts,
    }


def test_llm_judged_correctness_and_agreement_with_the_lexical_judge():
    rows = [
        _answered([{"entailed": True, "llm_entailed": True}, {"entailed": False, "llm_entailed": True}]),
        _answered([{"entailed": True, "llm_entailed": False}, {"entailed": True, "llm_entailed": True}]),
    ]
    summary = summarize_rows(rows)
    assert summary["cite_correctness_llm"] == 0.75
    assert summary["judge_agreement"] == 0.5
    assert summary["cite_correctness"] == 0.75  # the lexical judge, as before


def _run_dir(path: Path, dataset: str, rows: list[dict], min_grade: float = 0.5) -> Path:
    path.mkdir()
    (path / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (path / "summary.json").write_text(json.dumps({"dataset": dataset, "config": {"thresholds": {"min_grade": min_grade}}}))
    return path


def test_calibrate_grade_writes_one_global_threshold_and_what_it_was_fitted_on(tmp_path, monkeypatch):
    """Into the thresholds file in use (never the bundled one while another is configured)."""
    thresholds = tmp_path / "thresholds.toml"
    shutil.copy(DEFAULT_PATH, thresholds)
    bundled = DEFAULT_PATH.read_text()
    monkeypatch.setenv("CITEDOCS_THRESHOLDS", str(thresholds))
    astro = _run_dir(tmp_path / "astro", "evals/astro-dev.jsonl", [_row(False, [0.9, 0.3]), _row(True, [0.6])])
    docs = _run_dir(tmp_path / "docs", "evals/vitepress-dev.jsonl", [_row(False, [0.75]), _row(True, [0.55])])
    result = CliRunner().invoke(app, ["calibrate-grade", str(astro), str(docs), "--write"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    written = load_thresholds(thresholds)
    assert 0.6 < written.min_grade <= 0.75
    assert written.min_grade_calibrated_on == "astro-dev.jsonl (2 cases), vitepress-dev.jsonl (2 cases)"
    assert DEFAULT_PATH.read_text() == bundled


def test_calibrate_grade_names_a_folder_that_is_not_an_eval_run(tmp_path):
    result = CliRunner().invoke(app, ["calibrate-grade", str(tmp_path)], env={"COLUMNS": "200"})
    assert result.exit_code != 0 and "pass the --out folder of an eval run" in result.output
