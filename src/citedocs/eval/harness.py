"""`citedocs eval`: run a case file through the full /ask pipeline, grade it, report, gate."""

from __future__ import annotations

import hashlib
import json
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..contract import AskRequest, HistoryTurn
from ..service import Services
from ..types import Chunk
from ..markers import without_citations
from .cases import EvalCase
from .llm_judge import LlmJudge
from .metrics import answer_sentences, lexical_entailment, summarize_by_bucket, summarize_rows
from .retrieval import covered_at

JUDGE = "lexical-entailment-v1 (no NLI model ships on PyPI; see README)"


def states_keywords(answer: str, keywords: list[str]) -> bool:
    """Every expected keyword occurs (case-insensitively) in what the reader reads: the answer without
    its citation ids, which name sections (``cli-reference#--host-optional-host-address/1``)."""
    text = without_citations(answer).lower()
    return bool(keywords) and all(k.lower() in text for k in keywords)


def file_hash(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16]


def run_config(services: Services, judge: LlmJudge | None = None) -> dict:
    generator = services.generator
    config = {
        "backend": generator.name,
        "model": generator.model,
        "prompt_version": _prompt_version(generator),
        "thresholds": services.thresholds.as_dict(),
        "reranker": services.retriever.reranker.name if services.retriever.reranker else None,
        "judge": JUDGE if judge is None else f"{judge.name} (and {JUDGE.split()[0]} for agreement)",
    }
    config["hash"] = hashlib.sha256(json.dumps(config, sort_keys=True).encode()).hexdigest()[:16]
    return config


def _prompt_version(generator) -> str:
    from ..generate.extractive import PROMPT_VERSION as EXTRACTIVE
    from ..generate.prompt import PROMPT_VERSION, STRUCTURED_PROMPT_VERSION

    if generator.name == "extractive":
        return EXTRACTIVE
    if hasattr(generator, "prompt_version"):  # an LLM backend in the quote style
        return generator.prompt_version
    flavour = generator.flavour() if hasattr(generator, "flavour") else "off"
    return PROMPT_VERSION if flavour == "off" else f"{STRUCTURED_PROMPT_VERSION}+{flavour}"


def grade_case(case: EvalCase, services: Services, corpus: str, judge: LlmJudge | None = None) -> dict:
    request = AskRequest(
        question=case.question,
        corpus=corpus,
        history=[HistoryTurn(role=t.role, content=t.content) for t in case.history],
    )
    response = services.ask(request)
    trace = services.trace(response.trace_id) or {}
    retrieved_ids = [r["id"] for r in trace.get("retrieved", [])]
    retrieved = services.store.get_chunks(corpus, retrieved_ids)
    by_id: dict[str, Chunk] = {c.id: c for c in retrieved}
    cited_ids = [c.id for c in response.citations]
    sentences = answer_sentences(response.answer) if not response.refused else []
    cited_sentences = [(text, ids) for text, ids in sentences if any(i in by_id for i in ids)]
    verdicts = [
        {"claim": text, "ids": ids, "entailed": lexical_entailment(text, [by_id[i] for i in ids if i in by_id])}
        for text, ids in cited_sentences
    ]
    if judge is not None:
        for verdict in verdicts:
            llm = judge.judge_claim(verdict["claim"], [by_id[i] for i in verdict["ids"] if i in by_id])
            verdict.update(llm_entailed=llm.entailed, llm_p_backed=llm.p_backed)
    keywords_ok = not response.refused and states_keywords(response.answer, case.expected_keywords)
    expected_paths = {p for p, _ in case.expected()}
    return {
        "case_id": case.id,
        "bucket": case.bucket,
        "question": case.question,
        "rewritten_query": trace.get("rewritten_query"),
        "should_refuse": case.should_refuse,
        "refused": response.refused,
        "refusal_reason": response.refusal_reason,
        "answer": response.answer,
        "retrieved_ids": retrieved_ids,
        "cited_ids": cited_ids,
        "invented_ids": [i for i in cited_ids if i not in by_id],
        "page_rank": covered_at(case, retrieved, anchor_level=False) if case.answerable else None,
        "anchor_rank": covered_at(case, retrieved, anchor_level=True) if case.answerable else None,
        "sentences": len(sentences),
        "cited_sentences": len(cited_sentences),
        "entailed_claims": sum(1 for v in verdicts if v["entailed"]),
        "llm_entailed_claims": sum(1 for v in verdicts if v.get("llm_entailed")) if judge is not None else None,
        "claim_verdicts": verdicts,
        "keywords_ok": keywords_ok,
        "cites_expected_source": any(by_id[i].doc_path in expected_paths for i in cited_ids if i in by_id),
        "pass": {
            "refusal": response.refused == case.should_refuse,
            "keywords": keywords_ok or case.should_refuse,
            "no_invented_citation": all(i in by_id for i in cited_ids),
        },
        "grades": trace.get("grades") if isinstance(trace.get("grades"), list) else None,
        "trace_id": response.trace_id,
        "corpus_version": response.corpus_version,
        "latency_ms": trace.get("latency_ms", {}),
    }


@dataclass
class EvalRun:
    rows: list[dict]
    summary: dict


def run_eval(
    cases: list[EvalCase],
    case_file: Path,
    services: Services,
    corpus: str,
    progress: Callable[[int, int], None] | None = None,
    judge: LlmJudge | None = None,
    on_row: Callable[[dict], None] | None = None,
) -> EvalRun:
    """Every case through the pipeline; ``on_row`` gets each graded row as soon as it exists (the CLI
    appends it to ``rows.jsonl``, so a run stopped part-way keeps what it finished: a local-model
    run of a dev set takes hours on a loaded 2-core machine)."""
    config = run_config(services, judge)
    dataset = file_hash(case_file)
    rows = []
    for n, case in enumerate(cases, start=1):
        row = grade_case(case, services, corpus, judge)
        row.update(dataset_hash=dataset, config_hash=config["hash"])
        rows.append(row)
        if on_row:
            on_row(row)
        if progress:
            progress(n, len(cases))
    summary = {
        "dataset": str(case_file),
        "dataset_hash": dataset,
        "config": config,
        "corpus_version": rows[0]["corpus_version"] if rows else None,
        "top_k": AskRequest.model_fields["top_k"].default,  # chunks each case retrieved: recall beyond it is recall at it
        "overall": summarize_rows(rows),
        "buckets": summarize_by_bucket(rows),
        "case_ids": [c.id for c in cases],
    }
    return EvalRun(rows, summary)


GATED_METRICS = (
    "invented_citation_rate",
    "cite_coverage",
    "cite_correctness",
    "refusal_precision",
    "refusal_recall",
    "keyword_correctness",
    "retrieval_recall@8",
)


def check_gate(summary: dict, gate_path: Path, expected_case_ids: list[str] | None = None) -> list[str]:
    """Every failure as a readable line; an empty list means the gate passes."""
    gate = tomllib.loads(gate_path.read_text(encoding="utf-8"))
    failures = []
    overall = summary["overall"]
    for metric, bound in gate.get("min", {}).items():
        value = overall.get(metric)
        if value is None or value < bound:
            failures.append(f"{metric} = {_fmt(value)} is below the gate's minimum {bound}")
    for metric, bound in gate.get("max", {}).items():
        value = overall.get(metric)
        if value is None or value > bound:
            failures.append(f"{metric} = {_fmt(value)} is above the gate's maximum {bound}")
    ids = summary.get("case_ids", [])
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        failures.append(f"duplicate case ids: {', '.join(duplicates)}")
    missing = sorted(set(expected_case_ids or []) - set(ids)) + sorted(set(gate.get("required_cases", [])) - set(ids))
    if missing:
        failures.append(f"missing case ids: {', '.join(sorted(set(missing)))}")
    return failures


def _fmt(value) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def compare(summary: dict, baseline: dict) -> list[tuple[str, float | None, float | None, float | None]]:
    rows = []
    for metric in GATED_METRICS + ("refusal_f1", "mrr", "retrieval_recall@1"):
        now, before = summary["overall"].get(metric), baseline.get("overall", {}).get(metric)
        delta = now - before if now is not None and before is not None else None
        rows.append((metric, before, now, delta))
    return rows


def write_outputs(run: EvalRun, out_dir: Path, baseline: dict | None) -> None:
    from .report import render_html, render_markdown

    out_dir.mkdir(parents=True, exist_ok=True)
    with (out_dir / "rows.jsonl").open("w", encoding="utf-8") as handle:
        for row in run.rows:
            handle.write(json.dumps(row) + "\n")
    summary = dict(run.summary)
    if baseline:
        summary["baseline_comparison"] = [
            {"metric": m, "baseline": b, "current": c, "delta": d} for m, b, c, d in compare(run.summary, baseline)
        ]
    (out_dir / "summary.json").write_text(json.dumps(summary, indent=2), encoding="utf-8")
    (out_dir / "report.md").write_text(render_markdown(summary, run.rows), encoding="utf-8")
    (out_dir / "report.html").write_text(render_html(summary, run.rows), encoding="utf-8")
