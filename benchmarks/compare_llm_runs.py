"""Two `citedocs eval` runs of an LLM backend on the same case file, compared case by case.

    python benchmarks/compare_llm_runs.py BEFORE_DIR AFTER_DIR

For each run: the summary's refusal counts and keyword correctness; from the stored traces
(``$CITEDOCS_HOME``), the medians of prompt tokens the model evaluated per answer (grading, answer,
claim verification; llama.cpp's ``prompt_n``, so tokens served from its prompt cache do not count)
and of tokens written. Then, paired over the cases both runs answered (or both sent to the model),
the medians of first validated sentence and whole answer and the median per-case ratio, and every
case whose refusal or keyword outcome changed. Runs made on one machine one after the other are
comparable; runs from different days are not.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

from citedocs.service import Services


def _rows(run: Path) -> dict[str, dict]:
    return {row["case_id"]: row for row in map(json.loads, (run / "rows.jsonl").read_text().splitlines())}


def _tokens(services: Services, rows: dict[str, dict]) -> dict[str, float]:
    per_answer = []
    for row in rows.values():
        trace = services.store.get_trace(row["trace_id"]) or {}
        grades = trace.get("grades")
        if not isinstance(grades, list) or not grades:
            continue  # refused before the model was asked anything
        usage = trace.get("usage") or {}
        verification = sum(
            (probabilities.get("evaluated_tokens") or 0)
            for decision in trace.get("validator_decisions") or []
            for probabilities in (decision.get("entailment") or {}).values()
            if isinstance(probabilities, dict)
        )
        grading = sum(g.get("evaluated_tokens") or 0 for g in grades)
        answer = usage.get("prompt_n") or 0
        per_answer.append((grading, answer, verification, grading + answer + verification, usage.get("predicted_n") or 0))
    columns = list(zip(*per_answer)) or [[0]] * 5
    names = ("grading", "answer", "verification", "evaluated", "written")
    return {"answers": len(per_answer)} | {n: statistics.median(c) for n, c in zip(names, columns)}


def _summary(run: Path) -> dict:
    overall = json.loads((run / "summary.json").read_text())["overall"]
    return {
        "refusal": {k: overall["refusal"][k] for k in ("tp", "fp", "fn", "tn")},
        "keyword_correctness_all_answerable": round(overall["keyword_correctness_all_answerable"], 3),
        "cite_correctness_llm": overall.get("cite_correctness_llm"),
    }


def _paired(before: dict[str, dict], after: dict[str, dict]) -> dict[str, dict]:
    answered = [k for k in before if k in after and not before[k]["refused"] and not after[k]["refused"]]
    asked = [k for k in before if k in after and "grade" in before[k]["latency_ms"] and "grade" in after[k]["latency_ms"]]
    out = {}
    for stage, cases in (("first_sentence", answered), ("total", asked)):
        timed = [k for k in cases if stage in before[k]["latency_ms"] and stage in after[k]["latency_ms"]]
        x = [before[k]["latency_ms"][stage] / 1000 for k in timed]
        y = [after[k]["latency_ms"][stage] / 1000 for k in timed]
        if timed:
            out[stage] = {
                "cases": len(x),
                "before_p50_s": round(statistics.median(x), 1),
                "after_p50_s": round(statistics.median(y), 1),
                "median_ratio": round(statistics.median(b / a for a, b in zip(x, y)), 2),
            }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    args = parser.parse_args()
    before, after = _rows(args.before), _rows(args.after)
    services = Services.open()
    report = {
        "before": _summary(args.before) | {"tokens_p50": _tokens(services, before)},
        "after": _summary(args.after) | {"tokens_p50": _tokens(services, after)},
        "paired_latency": _paired(before, after),
        "changed": [
            {
                "case": k,
                "bucket": before[k]["bucket"],
                "before": {"refused": before[k]["refusal_reason"], "keywords": before[k]["keywords_ok"]},
                "after": {"refused": after[k]["refusal_reason"], "keywords": after[k]["keywords_ok"]},
            }
            for k in before
            if k in after and (before[k]["refused"], before[k]["keywords_ok"]) != (after[k]["refused"], after[k]["keywords_ok"])
        ],
    }
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
