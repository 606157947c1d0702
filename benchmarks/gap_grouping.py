#!/usr/bin/env python
"""How well the docs gaps group questions by topic, on questions labelled by hand (a script, not a test).

Two hand-labelled sets (JSON lines: question, topic):

- data/gap_questions.jsonl: 60 questions about ten topics the Astro docs do not cover (Kubernetes,
  payments, e-mail, mobile apps, realtime, PDF, ML, scheduling, experiments, desktop apps), six each;
- data/gap_questions_flask.jsonl: 50 Flask questions, five each about eight topics the Flask docs
  do not cover (GraphQL, OAuth/JWT, payments, containers, translations, rate limiting, search,
  serving ML models) and two they do (blueprints, testing); written before any clustering ran on it.

Each question is asked through the real pipeline (extractive backend) on ``--corpus``; the refused
ones are what the insights group, exactly as the insights do (the vectors the traces keep,
``cluster_questions`` with the default linkage and distance). The script prints the adjusted Rand
index (ARI; 1 = the hand labels exactly, 0 = chance), homogeneity (each group holds one topic) and
completeness (each topic is in one group) against the hand labels, for the refused questions and
for all of them, and the same scores for the other clusterings compared (``alternatives``).
The default was chosen on the Astro set and checked on the Flask set (docs/benchmarks/insights.md).

    CITEDOCS_HOME=DIR python benchmarks/gap_grouping.py [--set benchmarks/data/gap_questions.jsonl]
        [--corpus astro] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np
from sklearn.metrics import adjusted_rand_score, completeness_score, homogeneity_score

from citedocs.contract import AskRequest
from citedocs.insights import GAP_DISTANCE, GAP_LINKAGE, cluster_questions
from citedocs.service import Services

DATA = Path(__file__).resolve().parent / "data"
# The clusterings compared; fixed before the second set (Flask) was asked or clustered.
DISTANCES = {"average": (0.5, 0.6, 0.7, 0.8), "complete": (0.8, 0.9)}


def scores(truth: list[str], labels: list[int]) -> dict:
    return {
        "questions": len(truth),
        "topics": len(set(truth)),
        "groups": len(set(labels)),
        "ari": round(adjusted_rand_score(truth, labels), 3),
        "homogeneity": round(homogeneity_score(truth, labels), 3),
        "completeness": round(completeness_score(truth, labels), 3),
    }


def alternatives(truth: list[str], matrix: np.ndarray) -> dict[str, dict]:
    """The scores of other kept clusterings on these questions: average and complete linkage at
    several cuts and HDBSCAN, on the vectors as kept and on the vectors centred on their mean (what
    all the questions share, "how do I ... in Astro", taken out)."""
    from sklearn.cluster import HDBSCAN

    def hdbscan(x):
        labels = HDBSCAN(min_cluster_size=2, copy=True).fit_predict(x / np.linalg.norm(x, axis=1, keepdims=True))
        return [label if label >= 0 else 1000 + i for i, label in enumerate(labels)]  # noise: a group each

    table: dict[str, dict] = {}
    for vectors_name, x in (("raw", matrix), ("centred", matrix - matrix.mean(axis=0))):
        for linkage, distances in DISTANCES.items():
            for d in distances:
                table[f"{vectors_name} {linkage} {d}"] = scores(truth, cluster_questions(x, d, linkage))
        table[f"{vectors_name} hdbscan"] = scores(truth, hdbscan(x))
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--set", type=Path, default=DATA / "gap_questions.jsonl", help="questions labelled with a topic (JSON lines)")
    parser.add_argument("--corpus", default="astro")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    cases = [json.loads(line) for line in args.set.read_text().splitlines() if line.strip()]
    services = Services.open(backend="extractive")
    traces = [services.ask(AskRequest(question=c["question"], corpus=args.corpus)) for c in cases]
    vectors = services.store.question_vectors([t.trace_id for t in traces])
    refused = [(c, t) for c, t in zip(cases, traces) if t.refused]
    result = {
        "set": args.set.name,
        "corpus": args.corpus,
        "distance": GAP_DISTANCE,
        "linkage": GAP_LINKAGE,
        "refused_by_reason": dict(Counter(t.refusal_reason.split(":")[0] for _, t in refused)),
    }
    for name, subset in (("refused", refused), ("all", list(zip(cases, traces)))):
        matrix = np.stack([vectors[t.trace_id] for _, t in subset])
        truth = [c["topic"] for c, _ in subset]
        labels = cluster_questions(matrix)
        result[name] = scores(truth, labels)
        groups = defaultdict(list)
        for (case, _), label in zip(subset, labels):
            groups[label].append(case["topic"])
        result[name]["groups_by_topic"] = sorted((dict(Counter(g)) for g in groups.values()), key=lambda g: -sum(g.values()))
        result[name]["alternatives"] = alternatives(truth, matrix)
    services.store.close()
    print(json.dumps(result, indent=2))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
