#!/usr/bin/env python
"""Which route (generate/routing.py) the held-out questions take, and how each route's questions
fare with the models this machine has (a script, not a test).

For each held-out corpus (gates/corpus-<name>.toml: click, jinja, starlette) the docs are ingested
into a fresh home, then every case is asked with the extractive backend (the one answerer every
install has). Per route it prints the share of the questions that pass the retrieval gate, and of
the answerable ones among them: answered, and answered citing an expected page, and the answer
latency p50/p95 per route (wall time on this machine). Questions the gate
refuses never reach a model, so they take no route.

    python benchmarks/route_shares.py [--corpora click jinja starlette] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
import tomllib
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpora", nargs="+", default=["click", "jinja", "starlette"])
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    os.environ["CITEDOCS_HOME"] = tempfile.mkdtemp(prefix="route-shares-")
    os.environ["CITEDOCS_DATABASE_URL"] = ""
    os.environ["CITEDOCS_SUGGESTED_QUESTIONS"] = "off"

    from citedocs.contract import AskRequest, HistoryTurn
    from citedocs.eval.cases import load_cases
    from citedocs.generate.routing import choose_route
    from citedocs.service import Services

    services = Services.open(backend="extractive")
    pipeline = services.pipeline
    results: dict[str, dict] = {}
    overall: dict[str, Counter] = defaultdict(Counter)
    latencies: dict[str, list[float]] = defaultdict(list)  # answer ms per route (extractive backend)
    for name in args.corpora:
        spec = tomllib.loads((ROOT / "gates" / f"corpus-{name}.toml").read_text())["corpus"]
        services.ingest(ROOT / spec["docs"], name, spec.get("base_url"))
        info = services.corpus(name)
        floor = pipeline.null_levels.level(name, info.version)
        margin = services.thresholds.min_retrieval_margin
        routes: dict[str, Counter] = defaultdict(Counter)
        reasons: Counter = Counter()
        for case in load_cases(ROOT / spec["cases"]):
            history = [HistoryTurn(role=t.role, content=t.content) for t in case.history]
            result = services.search(case.question, name, 6)
            if result.confidence - floor < margin:
                routes["gate_refused"]["questions"] += 1
                continue
            decision = choose_route(case.question, bool(history), [h.chunk for h in result.hits], result.confidence, floor, margin)
            reasons.update(decision.reasons)
            started = time.perf_counter()
            response = services.ask(AskRequest(question=case.question, corpus=name, history=history))
            latencies[decision.route].append((time.perf_counter() - started) * 1000)
            row = routes[decision.route]
            row["questions"] += 1
            row["answerable"] += case.answerable
            row["unanswerable"] += not case.answerable
            if case.answerable and not response.refused:
                row["answered"] += 1
                pages = {c.id.split("#", 1)[0] for c in response.citations}
                expected = {path.rsplit(".", 1)[0] for path, _ in case.expected()}
                row["answered_expected_page"] += bool(pages & expected)
            if not case.answerable and response.refused:
                row["unanswerable_refused"] += 1
        results[name] = {"routes": {k: dict(v) for k, v in routes.items()}, "hard_because": dict(reasons)}
        for route, row in routes.items():
            overall[route].update(row)
        print(name, json.dumps(results[name]), flush=True)
    results["all"] = {"routes": {k: dict(v) for k, v in overall.items()}}
    routed = sum(overall[r]["questions"] for r in ("fast", "strong"))
    for route in ("fast", "strong"):
        row = overall[route]
        share = row["questions"] / routed if routed else 0.0
        answered = f"{row['answered']}/{row['answerable']}" if row["answerable"] else "-"
        ms = latencies[route]
        p50, p95 = (statistics.quantiles(ms, n=100, method="inclusive")[q - 1] for q in (50, 95)) if len(ms) > 1 else (None, None)
        results["all"]["routes"].setdefault(route, {})["answer_ms"] = {"p50": p50, "p95": p95}
        print(
            f"{route}: {row['questions']} of {routed} routed questions ({share:.0%}); answerable answered {answered}, "
            f"citing an expected page {row['answered_expected_page']}; unanswerable refused {row['unanswerable_refused']}/{row['unanswerable']}; "
            f"answer p50 {p50 or 0:.0f} ms, p95 {p95 or 0:.0f} ms"
        )
    print(f"refused at the retrieval gate (no route): {overall['gate_refused']['questions']}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
