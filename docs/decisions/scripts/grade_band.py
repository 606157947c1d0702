"""Could the LLM grader decide the questions the retrieval margin is least sure of?

Corrective retrieval (CRAG) has an "ambiguous" action: where retrieval confidence is neither high nor
low, a grader reads the passages and decides. This measures whether the local model could play that
part here. Every case of the given sets runs through the extractive pipeline with the retrieval margin
off (as ``citedocs calibrate`` does); cases a later stage refuses anyway (question gate, amount rule)
are set aside. Each remaining case whose best MaxSim above its corpus's floor lies in ``--band``, and
every should-refuse case above it (the refusals the margin misses), gets all its retrieved chunks
graded by the shipped grader (``LlmGrader``, P(yes) from the first token, the local model). Printed:
per band, how well the best grade separates answerable from should-refuse cases (AUC) and how many of
each a grade threshold would let through.

    CITEDOCS_HOME=DIR python docs/decisions/scripts/grade_band.py evals/astro-dev.jsonl:astro ... \\
        [--band 0.10 0.173] [--rows-out FILE]
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path

from citedocs.contract import AskRequest, HistoryTurn
from citedocs.eval.cases import load_cases
from citedocs.generate.grader import LlmGrader
from citedocs.generate.select import llm_client
from citedocs.generate.yesno import PassageJudge
from citedocs.service import Services

THRESHOLDS = (0.60, 0.65, 0.70, 0.72)


def observe(services: Services, cases_path: Path, corpus: str) -> list[dict]:
    rows = []
    for case in load_cases(cases_path):
        history = [HistoryTurn(role=t.role, content=t.content) for t in case.history]
        response = services.ask(AskRequest(question=case.question, corpus=corpus, history=history))
        trace = services.trace(response.trace_id)
        rows.append(
            {
                "set": cases_path.stem,
                "corpus": corpus,
                "id": case.id,
                "should_refuse": case.should_refuse,
                "refused_later": response.refused,
                "over_floor": trace["retrieval_confidence"] - trace["retrieval_floor"],
                "query": trace.get("rewritten_query") or case.question,
                "retrieved": [h["id"] for h in trace.get("retrieved") or []],
            }
        )
    return rows


def auc(positive: list[float], negative: list[float]) -> float:
    pairs = [(p > n) + 0.5 * (p == n) for p in positive for n in negative]
    return sum(pairs) / len(pairs) if pairs else float("nan")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sets", nargs="+", help="CASES.jsonl:CORPUS")
    parser.add_argument("--band", nargs=2, type=float, default=(0.10, 0.173), metavar=("LOW", "HIGH"))
    parser.add_argument("--rows-out", type=Path, help="also write every graded case here (JSON lines)")
    args = parser.parse_args()
    low, high = args.band
    services = Services.open(backend="extractive")
    services.__dict__["thresholds"] = replace(services.thresholds, min_retrieval_margin=float("-inf"))
    rows = [row for spec in args.sets for row in observe(services, Path(spec.rsplit(":", 1)[0]), spec.rsplit(":", 1)[1])]
    graded = [
        r for r in rows if not r["refused_later"] and (low <= r["over_floor"] < high or (r["should_refuse"] and r["over_floor"] >= high))
    ]
    client = llm_client("local")
    grader = LlmGrader(PassageJudge(client), services.thresholds.min_grade)
    try:
        for n, row in enumerate(graded, 1):
            chunks = {c.id: c for c in services.store.get_chunks(row["corpus"], row["retrieved"])}
            grades = grader.grade(row["query"], [chunks[i] for i in row["retrieved"] if i in chunks])
            row["best_grade"] = max((g.p_relevant for g in grades if g.p_relevant is not None), default=0.0)
            print(f"{n}/{len(graded)} {row['id']} over floor {row['over_floor']:.3f} best grade {row['best_grade']:.3f}", file=sys.stderr)
    finally:
        client.close()
    if args.rows_out:
        args.rows_out.write_text("".join(json.dumps(r) + "\n" for r in graded))
    later = sum(r["refused_later"] for r in rows)
    print(f"{len(rows)} cases; {later} refused by a later stage whatever the margin; {len(graded)} graded")
    print("| cases | answerable | should refuse | AUC of the best grade | let through at " + " / ".join(f"{t:.2f}" for t in THRESHOLDS) + " (answerable, should refuse) |")
    print("|---|---|---|---|---|")
    for label, keep in (
        (f"margin {low:.3f}-{high:.3f} above the floor (refused now)", lambda r: low <= r["over_floor"] < high),
        (f"margin >= {high:.3f}, should refuse (answered now)", lambda r: r["over_floor"] >= high),
    ):
        band = [r for r in graded if keep(r)]
        yes = [r["best_grade"] for r in band if not r["should_refuse"]]
        no = [r["best_grade"] for r in band if r["should_refuse"]]
        through = " / ".join(f"{sum(g >= t for g in yes)}, {sum(g >= t for g in no)}" for t in THRESHOLDS)
        print(f"| {label} | {len(yes)} | {len(no)} | {auc(yes, no):.3f} | {through} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
