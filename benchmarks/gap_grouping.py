#!/usr/bin/env python
"""How well the docs gaps group questions by topic, against hand-made topic labels (a script, not a test).

Each set is JSON lines of ``{"question", "topic"}``, questions the docs do not answer (what the
docs gaps group); every question of a set is grouped exactly as the insights group them
(``salient_text`` with the set's corpus name, the bi-encoder, ``cluster_questions`` at the default
cut), and the script prints the adjusted Rand index (ARI; 1 = the hand labels exactly, 0 = chance),
homogeneity (each group holds one topic) and completeness (each topic is in one group), next to the
previous way (whole-question vectors, average linkage at 0.6) and a few other cuts.

- evals/gaps-topics.jsonl: the tuning set (ten topics an Astro-like site does not cover, eight
  questions each); the cut was chosen on it;
- evals/gaps-topics-heldout.jsonl: eight other topics, seven questions each, never tuned on;
- benchmarks/data/gap_questions.jsonl (Astro) and gap_questions_flask.jsonl (Flask): earlier sets.

    python benchmarks/gap_grouping.py [--json out.json]
"""

from __future__ import annotations

import argparse
import json
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np
from sklearn.metrics import adjusted_rand_score, completeness_score, homogeneity_score

from citedocs.insights import GAP_DISTANCE, GAP_LINKAGE, cluster_questions, salient_text, shared_words
from citedocs.models.encoders import bi_encoder

ROOT = Path(__file__).resolve().parent.parent
# (file, the corpus name its questions were asked of, role)
SETS = (
    (ROOT / "evals/gaps-topics.jsonl", "astro", "tuning"),
    (ROOT / "evals/gaps-topics-heldout.jsonl", "flask", "held out"),
    (ROOT / "benchmarks/data/gap_questions.jsonl", "astro", "earlier set"),
    (ROOT / "benchmarks/data/gap_questions_flask.jsonl", "flask", "earlier set"),
)
PREVIOUS = (0.6, "average")  # whole-question vectors, the grouping before salient words
OTHER_CUTS = (0.75, 0.8, 0.9)


def scores(truth: list[str], labels: list[int]) -> dict:
    return {
        "groups": len(set(labels)),
        "ari": round(adjusted_rand_score(truth, labels), 3),
        "homogeneity": round(homogeneity_score(truth, labels), 3),
        "completeness": round(completeness_score(truth, labels), 3),
    }


def unit(matrix: np.ndarray) -> np.ndarray:
    """As the traces keep them: float16, so the figures are those of a real report."""
    return matrix.astype(np.float16).astype(np.float32)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    encoder = bi_encoder()
    results = []
    for path, corpus, role in SETS:
        cases = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        truth = [c["topic"] for c in cases]
        shared = shared_words([c["question"] for c in cases])
        salient = unit(encoder.encode([salient_text(c["question"], corpus, shared) for c in cases]))
        whole = unit(encoder.encode([c["question"] for c in cases]))
        labels = cluster_questions(salient)
        groups = defaultdict(list)
        for topic, label in zip(truth, labels):
            groups[label].append(topic)
        results.append(
            {
                "set": str(path.relative_to(ROOT)),
                "role": role,
                "questions": len(cases),
                "topics": len(set(truth)),
                f"now (salient words, {GAP_LINKAGE} {GAP_DISTANCE})": scores(truth, labels),
                f"before (whole questions, {PREVIOUS[1]} {PREVIOUS[0]})": scores(truth, cluster_questions(whole, *PREVIOUS)),
                "other cuts (salient words)": {str(d): scores(truth, cluster_questions(salient, d))["ari"] for d in OTHER_CUTS},
                "groups_by_topic": sorted((dict(Counter(g)) for g in groups.values()), key=lambda g: -sum(g.values())),
            }
        )
    print(json.dumps(results, indent=2))
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
