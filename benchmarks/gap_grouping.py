#!/usr/bin/env python
"""How well the docs gaps group questions by topic, on questions labelled by hand (a script, not a test).

benchmarks/data/gap_questions.jsonl holds 60 questions about ten topics the Astro docs do not
cover (Kubernetes, payments, e-mail, mobile apps, realtime, PDF, ML, scheduling, experiments,
desktop apps), six each, each labelled with its topic by hand. Each question is asked through the
real pipeline (extractive backend) on the Astro index; the refused ones are what the insights
group, exactly as the insights do (the vectors the traces keep, ``cluster_questions`` with the
default distance). The script prints the adjusted Rand index (ARI; 1 = the hand labels exactly,
0 = chance), homogeneity and completeness of the groups against the hand labels, and the same
for all 60 questions (refused or not), plus the ARI at other cut distances, to show how sensitive
the grouping is (the default, GAP_DISTANCE, was fixed before the set was written). ``alternatives``
compares other kept algorithms on two halves of the topics (the first five topics, the last
five), as one would choose on one half and check on the other: average and complete linkage at
several cuts, on the raw vectors and on vectors centred on their mean, and HDBSCAN.

    CITEDOCS_HOME=DIR python benchmarks/gap_grouping.py [--corpus astro] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np
from sklearn.metrics import adjusted_rand_score, completeness_score, homogeneity_score

from citedocs.contract import AskRequest
from citedocs.insights import GAP_DISTANCE, cluster_questions
from citedocs.service import Services

DATA = Path(__file__).resolve().parent / "data" / "gap_questions.jsonl"


def scores(truth: list[str], labels: list[int]) -> dict:
    return {
        "questions": len(truth),
        "groups": len(set(labels)),
        "ari": round(adjusted_rand_score(truth, labels), 3),
        "homogeneity": round(homogeneity_score(truth, labels), 3),
        "completeness": round(completeness_score(truth, labels), 3),
    }


def alternatives(cases: list[dict], matrix: np.ndarray) -> dict:
    """ARI of other clusterings on each half of the topics (all questions of the half)."""
    from sklearn.cluster import HDBSCAN, AgglomerativeClustering

    def agglomerative(linkage: str, distance: float):
        return lambda x: AgglomerativeClustering(
            n_clusters=None, distance_threshold=distance, metric="cosine", linkage=linkage
        ).fit_predict(x)

    def hdbscan(x):
        labels = HDBSCAN(min_cluster_size=2, copy=True).fit_predict(x / np.linalg.norm(x, axis=1, keepdims=True))
        return [label if label >= 0 else 1000 + i for i, label in enumerate(labels)]  # noise: a group each

    methods = {f"average {d}": agglomerative("average", d) for d in (0.5, 0.6, 0.7, 0.8)}
    methods |= {f"complete {d}": agglomerative("complete", d) for d in (0.7, 0.8, 0.9)}
    methods["hdbscan"] = hdbscan
    topics = list(dict.fromkeys(c["topic"] for c in cases))
    halves = {"first five topics": set(topics[:5]), "last five topics": set(topics[5:])}
    table: dict[str, dict[str, float]] = {}
    for half, chosen in halves.items():
        rows = [i for i, c in enumerate(cases) if c["topic"] in chosen]
        truth = [cases[i]["topic"] for i in rows]
        raw = matrix[rows]
        centred = raw - raw.mean(axis=0)
        for vectors_name, x in (("raw", raw), ("centred", centred)):
            for name, method in methods.items():
                table.setdefault(f"{vectors_name} {name}", {})[half] = round(adjusted_rand_score(truth, method(x)), 2)
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", default="astro")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    cases = [json.loads(line) for line in DATA.read_text().splitlines() if line.strip()]
    services = Services.open(backend="extractive")
    traces = [services.ask(AskRequest(question=c["question"], corpus=args.corpus)) for c in cases]
    vectors = services.store.question_vectors([t.trace_id for t in traces])
    refused = [(c, t) for c, t in zip(cases, traces) if t.refused]
    result = {"distance": GAP_DISTANCE, "refused_by_reason": dict(Counter(t.refusal_reason.split(":")[0] for _, t in refused))}
    for name, subset in (("refused", refused), ("all", list(zip(cases, traces)))):
        matrix = np.stack([vectors[t.trace_id] for _, t in subset])
        truth = [c["topic"] for c, _ in subset]
        result[name] = scores(truth, cluster_questions(matrix))
        result[name]["ari_by_distance"] = {
            str(d): round(adjusted_rand_score(truth, cluster_questions(matrix, d)), 3) for d in (0.3, 0.4, 0.5, 0.6, 0.7)
        }
        if name == "refused":
            groups = defaultdict(list)
            for (case, _), label in zip(subset, cluster_questions(matrix)):
                groups[label].append(case["topic"])
            result[name]["groups_by_topic"] = sorted((dict(Counter(g)) for g in groups.values()), key=lambda g: -sum(g.values()))
    matrix = np.stack([vectors[t.trace_id] for t in traces])
    result["alternatives"] = alternatives(cases, matrix)
    services.store.close()
    print(json.dumps(result, indent=2))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
