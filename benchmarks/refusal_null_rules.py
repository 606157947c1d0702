"""Would a refusal margin relative to each corpus's own null distribution hold better across corpora?

``retrieve/null_level.py`` measures a corpus's floor as the median best MaxSim of ``NULL_PROBES``
(questions no docs answer); the refusal threshold is one global margin above it. This compares,
on finished ``citedocs eval`` runs, that margin with rules scaled by the null distribution itself:

* ``margin``: best MaxSim minus the null median (what ships);
* ``headroom``: that margin divided by the room above the median (1 - median);
* ``z_sd``: that margin in null standard deviations;
* ``above_q3`` / ``above_max``: the best MaxSim above the null scores' upper quartile / maximum;
* ``span_heading`` / ``span_sentence``: the margin as a fraction of the span from the null median
  up to the corpus's own *answered* level, the median best MaxSim of 20 questions the corpus does
  answer, made from 20 of its chunks spread over it (their section heading, or their first
  sentence, as the question). Both ends are measured on the corpus, neither is fitted.

Each rule gets one global threshold, the one with the best refusal F1 over every given run
together; each set's F1 at it is printed beside the shipped rule's. A case refused for another
reason (question gate, validator) stays refused under every rule.

    CITEDOCS_HOME=DIR python benchmarks/refusal_null_rules.py OUT/astro:astro OUT/flask:flask ...
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections.abc import Callable
from pathlib import Path

from citedocs.eval.metrics import refusal_scores
from citedocs.retrieve.hybrid import RetrievalConfig
from citedocs.retrieve.null_level import NULL_PROBES
from citedocs.service import Services

Rule = Callable[[float, dict], float]
RULES: dict[str, Rule] = {
    "margin": lambda best, null: best - null["median"],
    "headroom": lambda best, null: (best - null["median"]) / (1 - null["median"]),
    "z_sd": lambda best, null: (best - null["median"]) / null["sd"],
    "above_q3": lambda best, null: best - null["q3"],
    "above_max": lambda best, null: best - null["max"],
    "span_heading": lambda best, null: (best - null["median"]) / max(1e-6, null["heading"] - null["median"]),
    "span_sentence": lambda best, null: (best - null["median"]) / max(1e-6, null["sentence"] - null["median"]),
}
SELF_PROBES = 20


def answered_levels(services: Services, corpus: str) -> dict:
    """The median best MaxSim of questions the corpus answers: the heading, and the first sentence, of
    ``SELF_PROBES`` chunks at even steps through its sorted ids."""
    ids = sorted(services.store.chunk_hashes(corpus))
    picked = [ids[i * len(ids) // SELF_PROBES] for i in range(SELF_PROBES)]
    chunks = services.store.get_chunks(corpus, picked)
    levels = {}
    for kind, query in (("heading", lambda c: c.section), ("sentence", lambda c: c.text.split("\n", 1)[0][:300])):
        scores = []
        for chunk in chunks:
            result = services.retriever.retrieve(corpus, query(chunk), 1, RetrievalConfig())
            scores.append(result.confidence if result.hits else 0.0)
        levels[kind] = statistics.median(scores)
    return levels


def null_distribution(services: Services, corpus: str) -> dict:
    scores = []
    for probe in NULL_PROBES["en"]:
        result = services.retriever.retrieve(corpus, probe, 1, RetrievalConfig())
        scores.append(result.confidence if result.hits else 0.0)
    return {
        "median": statistics.median(scores),
        "q3": statistics.quantiles(scores, n=4)[2],
        "sd": statistics.stdev(scores),
        "max": max(scores),
        **answered_levels(services, corpus),
    }


def f1(observations: list[tuple[bool, bool]]) -> float:
    return refusal_scores([{"should_refuse": s, "refused": r} for s, r in observations])["f1"] or 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", help="OUT_DIR:CORPUS, an eval --out folder and the corpus it asked")
    args = parser.parse_args()
    services = Services.open(backend="extractive")
    shipped = services.thresholds.min_retrieval_margin
    nulls: dict[str, dict] = {}
    observations = []  # (set, should_refuse, best MaxSim, null, refused for another reason)
    for run in args.runs:
        folder, corpus = run.rsplit(":", 1)
        nulls.setdefault(corpus, null_distribution(services, corpus))
        for line in (Path(folder) / "rows.jsonl").read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            trace = services.trace(row["trace_id"]) or {}
            other = row["refused"] and not (row.get("refusal_reason") or "").startswith("low_retrieval")
            best = trace.get("retrieval_confidence") or 0.0
            observations.append((Path(folder).name, row["should_refuse"], best, nulls[corpus], other))
    sets = sorted({o[0] for o in observations})
    for corpus, null in nulls.items():
        print(
            f"{corpus}: null median {null['median']:.3f} q3 {null['q3']:.3f} sd {null['sd']:.3f} max {null['max']:.3f}"
            f" answered (heading) {null['heading']:.3f} (sentence) {null['sentence']:.3f}"
        )
    print("rule        threshold  all    " + " ".join(f"{s:>16}" for s in sets))
    shipped_row = {s: f1([(sr, o or b - n["median"] < shipped) for st, sr, b, n, o in observations if st == s]) for s in sets}
    overall = f1([(sr, o or b - n["median"] < shipped) for _, sr, b, n, o in observations])
    print(f"{'shipped':10} {shipped:10.4f} {overall:.3f}  " + " ".join(f"{shipped_row[s]:16.3f}" for s in sets))
    for name, rule in RULES.items():
        candidates = sorted({round(rule(b, n), 4) for _, _, b, n, _ in observations})
        threshold = max(candidates, key=lambda t: (f1([(sr, o or rule(b, n) < t) for _, sr, b, n, o in observations]), -t))
        per_set = {s: f1([(sr, o or rule(b, n) < threshold) for st, sr, b, n, o in observations if st == s]) for s in sets}
        overall = f1([(sr, o or rule(b, n) < threshold) for _, sr, b, n, o in observations])
        print(f"{name:10} {threshold:10.4f} {overall:.3f}  " + " ".join(f"{per_set[s]:16.3f}" for s in sets))


if __name__ == "__main__":
    main()
