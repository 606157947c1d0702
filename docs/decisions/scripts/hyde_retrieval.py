"""Retrieval with and without a hypothetical passage (setting ``query_expansion = "hyde"``).

For every answerable case of the given sets: the query ``citedocs eval-retrieval`` uses (a follow-up
folded with its history), the passage the local model writes for it (``retrieve/expand.py``, the
shipped prompt), and hybrid+rerank at k = 8 with and without that passage. Prints page / anchor
recall@8 and MRR per set and the time the model took per passage. Passages are kept in
``--passages`` (JSON lines) and reused on a rerun, so the retrieval half can be repeated alone.

    CITEDOCS_HOME=DIR python docs/decisions/scripts/hyde_retrieval.py evals/flask-dev.jsonl:flask ... \\
        [--passages FILE]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

from citedocs.eval.cases import load_cases
from citedocs.eval.retrieval import score_case, summarize
from citedocs.generate.select import llm_client
from citedocs.retrieve.expand import HypotheticalPassage
from citedocs.retrieve.hybrid import RetrievalConfig
from citedocs.retrieve.rewrite import standalone_query_fallback
from citedocs.service import Services


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sets", nargs="+", help="CASES.jsonl:CORPUS")
    parser.add_argument("--passages", type=Path, default=Path("hyde-passages.jsonl"))
    args = parser.parse_args()
    services = Services.open(backend="extractive")
    known = {}
    if args.passages.exists():
        known = {row["key"]: row for row in map(json.loads, args.passages.read_text().splitlines())}
    client = None
    print("| set | cases | page R@8: question / + passage | anchor R@8 | MRR | passage p50, s |")
    print("|---|---|---|---|---|---|")
    try:
        with args.passages.open("a") as kept:
            for spec in args.sets:
                path, corpus = spec.rsplit(":", 1)
                cases = [c for c in load_cases(Path(path)) if c.answerable]
                plain, expanded, seconds = [], [], []
                for case in cases:
                    query = standalone_query_fallback(case.question, case.history)
                    key = f"{corpus}\t{query}"
                    if key not in known:
                        client = client or llm_client("local")
                        started = time.perf_counter()
                        passage = HypotheticalPassage(client).expand(query, corpus)
                        known[key] = {"key": key, "passage": passage, "seconds": round(time.perf_counter() - started, 2)}
                        kept.write(json.dumps(known[key]) + "\n")
                        kept.flush()
                    seconds.append(known[key]["seconds"])
                    for rows, expansion in ((plain, None), (expanded, known[key]["passage"])):
                        result = services.retriever.retrieve(corpus, query, 8, RetrievalConfig(), expansion)
                        rows.append(score_case(case, [h.chunk for h in result.hits]))
                a, b = summarize(plain), summarize(expanded)
                print(
                    f"| {Path(path).stem} | {len(cases)} | {a.recall_page['@8']:.3f} / {b.recall_page['@8']:.3f} | "
                    f"{a.recall_anchor['@8']:.3f} / {b.recall_anchor['@8']:.3f} | {a.mrr:.3f} / {b.mrr:.3f} | "
                    f"{statistics.median(seconds):.1f} |",
                    flush=True,
                )
    finally:
        if client is not None:
            client.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
