"""The LLM grade threshold is one global value fitted to refusal F1 over recorded runs; the LLM
judge's agreement with the lexical judge is reported. Pure functions over eval rows, no model."""

from __future__ import annotations

from citedocs.eval.calibrate import calibrate_grade_threshold
from citedocs.eval.metrics import summarize_rows


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
