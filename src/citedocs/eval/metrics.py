"""Answer-level metrics, computed from graded rows (docs/benchmarks/evaluation.md has the formulas)."""

from __future__ import annotations

import statistics
from collections import defaultdict

from ..sentences import split_units
from ..text import search_terms
from ..types import Chunk
from ..markers import parse_markers
from ..text import content_terms
from ..validate.support import in_evidence, specific_terms


def answer_sentences(answer: str) -> list[tuple[str, list[str]]]:
    """(claim text, cited ids) for each prose sentence of a final answer (code blocks are not claims)."""
    out = []
    for unit in split_units(answer):
        if unit.is_code:
            continue
        parsed = parse_markers(unit.text)
        if parsed.text and content_terms(parsed.text):
            out.append((parsed.text, parsed.ids))
    return out


def lexical_entailment(claim: str, evidence: list[Chunk], min_coverage: float = 0.8) -> bool:
    """The judge used when no LLM judge is configured.

    Stricter than, and different from, the validator's check: no embedding similarity at all;
    at least 80% of the claim's content words and every code identifier must appear in the cited text.
    """
    text = "\n".join(f"{c.title} {' '.join(c.heading_path)}\n{c.text}" for c in evidence)
    evidence_terms = content_terms(text)
    claim_terms = content_terms(claim)
    if not claim_terms:
        return False
    coverage = len(claim_terms & evidence_terms) / len(claim_terms)
    evidence_all = set(search_terms(text)) | evidence_terms
    return coverage >= min_coverage and all(in_evidence(t, text, evidence_all) for t in specific_terms(claim))


def _rate(numerator: float, denominator: float) -> float | None:
    return numerator / denominator if denominator else None


def refusal_scores(rows: list[dict]) -> dict:
    tp = sum(1 for r in rows if r["should_refuse"] and r["refused"])
    fp = sum(1 for r in rows if not r["should_refuse"] and r["refused"])
    fn = sum(1 for r in rows if r["should_refuse"] and not r["refused"])
    tn = sum(1 for r in rows if not r["should_refuse"] and not r["refused"])
    precision = _rate(tp, tp + fp)
    recall = _rate(tp, tp + fn)
    f1 = 2 * precision * recall / (precision + recall) if precision and recall else (0.0 if precision is not None and recall is not None else None)
    return {"tp": tp, "fp": fp, "fn": fn, "tn": tn, "precision": precision, "recall": recall, "f1": f1}


def percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[index]


def summarize_rows(rows: list[dict]) -> dict:
    answered = [r for r in rows if not r["refused"]]
    answerable = [r for r in rows if not r["should_refuse"]]
    answered_answerable = [r for r in answerable if not r["refused"]]
    sentences = sum(r["sentences"] for r in answered)
    cited_sentences = sum(r["cited_sentences"] for r in answered)
    claims = sum(r["cited_sentences"] for r in answered)
    entailed = sum(r["entailed_claims"] for r in answered)
    citations = sum(len(r["cited_ids"]) for r in rows)
    invented = sum(len(r["invented_ids"]) for r in rows)
    with_retrieval = [r for r in answerable if r.get("page_rank") is not None or r.get("retrieved_ids")]

    def recall_at(k: int, key: str) -> float | None:
        return _rate(sum(1 for r in with_retrieval if (r.get(key) or 10**9) <= k), len(with_retrieval))

    stages: dict[str, list[float]] = defaultdict(list)
    for row in rows:
        for stage, ms in (row.get("latency_ms") or {}).items():
            stages[stage].append(ms)
    summary = {
        "cases": len(rows),
        "retrieval_recall@1": recall_at(1, "page_rank"),
        "retrieval_recall@5": recall_at(5, "page_rank"),
        "retrieval_recall@8": recall_at(8, "page_rank"),
        "retrieval_anchor_recall@5": recall_at(5, "anchor_rank"),
        "mrr": _rate(sum(1 / r["page_rank"] for r in with_retrieval if r.get("page_rank")), len(with_retrieval)),
        "cite_coverage": _rate(cited_sentences, sentences),
        "cite_correctness": _rate(entailed, claims),
        "invented_citation_rate": _rate(invented, citations) if citations else 0.0,
        "keyword_correctness": _rate(sum(1 for r in answered_answerable if r["keywords_ok"]), len(answered_answerable)),
        "keyword_correctness_all_answerable": _rate(sum(1 for r in answerable if r["keywords_ok"]), len(answerable)),
        "answered_with_expected_source": _rate(
            sum(1 for r in answered_answerable if r["cites_expected_source"]), len(answered_answerable)
        ),
        "refusal": refusal_scores(rows),
        "latency_ms": {
            stage: {"p50": statistics.median(values), "p95": percentile(values, 0.95)} for stage, values in stages.items()
        },
    }
    judged = [v for r in answered for v in r.get("claim_verdicts", []) if "llm_entailed" in v]
    if judged:
        summary["cite_correctness_llm"] = _rate(sum(1 for v in judged if v["llm_entailed"]), len(judged))
        summary["judge_agreement"] = _rate(sum(1 for v in judged if v["llm_entailed"] == v["entailed"]), len(judged))
    summary["refusal_precision"] = summary["refusal"]["precision"]
    summary["refusal_recall"] = summary["refusal"]["recall"]
    summary["refusal_f1"] = summary["refusal"]["f1"]
    return summary


def summarize_by_bucket(rows: list[dict]) -> dict:
    buckets: dict[str, list[dict]] = defaultdict(list)
    for row in rows:
        buckets[row["bucket"]].append(row)
    return {bucket: summarize_rows(bucket_rows) for bucket, bucket_rows in sorted(buckets.items())}
