"""Would a refusal model over several retrieval features generalise better than the one threshold?

Runs every case of the given dev sets through the extractive pipeline with the retrieval threshold
off (as ``citedocs calibrate`` does), records per case the best MaxSim (what the threshold reads),
the best dense cosine, the best share of the question's content terms found in one retrieved chunk
(and in the top one) and the MaxSim margin between the first two chunks, then scores, leaving one
dev set out at a time: the single MaxSim threshold and L2-regularised logistic regressions over
feature subsets, each fitted and thresholded (refusal F1) on the other sets only. Cases the later
stages refuse anyway (question gate, validator) stay refused in every variant.

    CITEDOCS_HOME=DIR python docs/decisions/scripts/refusal_features.py \
        evals/astro-dev.jsonl:astro evals/astro-extra.jsonl:astro evals/flask-dev.jsonl:flask ...
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

from citedocs.contract import AskRequest, HistoryTurn
from citedocs.eval.cases import load_cases
from citedocs.service import Services
from citedocs.text import content_terms

# maxsim_over_null: the best MaxSim above the corpus's floor (retrieve/null_level.py), what ships
FEATURES = ("maxsim", "dense", "term_share", "term_share_top", "maxsim_margin", "maxsim_over_null")
SUBSETS = ((0,), (5,), (0, 1), (0, 2), (5, 2), (0, 1, 2), (0, 1, 2, 3, 4), (1, 2), (0, 4))
def observe(services: Services, cases_path: Path, corpus: str) -> list[tuple[str, bool, bool, list[float]]]:
    out = []
    for case in load_cases(cases_path):
        history = [HistoryTurn(role=t.role, content=t.content) for t in case.history]
        response = services.ask(AskRequest(question=case.question, corpus=corpus, history=history))
        trace = services.trace(response.trace_id)
        retrieved = trace.get("retrieved") or []
        chunks = {c.id: c for c in services.store.get_chunks(corpus, [h["id"] for h in retrieved])}
        question = content_terms(trace.get("rewritten_query") or case.question)
        shares = [
            len(question & content_terms(f"{c.title} {' '.join(c.heading_path)} {c.text}")) / max(1, len(question))
            for c in (chunks[h["id"]] for h in retrieved)
        ] or [0.0]
        maxsims = sorted((h["stages"].get("rerank_score") or 0.0 for h in retrieved), reverse=True) or [0.0, 0.0]
        dense = max((h["stages"].get("dense_score") or 0.0 for h in retrieved), default=0.0)
        margin = maxsims[0] - maxsims[1] if len(maxsims) > 1 else 0.0
        maxsim = trace.get("retrieval_confidence") or 0.0
        features = [maxsim, dense, max(shares), shares[0], margin, maxsim - trace["retrieval_floor"]]
        out.append((cases_path.stem, case.should_refuse, response.refused, features))
    return out


def logistic(x: np.ndarray, y: np.ndarray, l2: float = 1.0):
    mean, scale = x.mean(0), x.std(0) + 1e-9
    z = np.c_[np.ones(len(x)), (x - mean) / scale]
    w = np.zeros(z.shape[1])
    penalty = np.diag(np.r_[0.0, np.ones(len(w) - 1)]) * l2
    for _ in range(50):  # Newton steps
        p = 1 / (1 + np.exp(-z @ w))
        w -= np.linalg.solve(z.T @ (z * (p * (1 - p))[:, None]) + penalty, z.T @ (p - y) + penalty @ w)
    return lambda q: 1 / (1 + np.exp(-np.c_[np.ones(len(q)), (q - mean) / scale] @ w))


def prf(refused: np.ndarray, y: np.ndarray) -> tuple[float, float, float]:
    tp, fp, fn = int((refused & y).sum()), int((refused & ~y).sum()), int((~refused & y).sum())
    p = tp / (tp + fp) if tp + fp else 0.0
    r = tp / (tp + fn) if tp + fn else 0.0
    return p, r, (2 * p * r / (p + r) if p + r else 0.0)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sets", nargs="+", help="CASES.jsonl:CORPUS")
    parser.add_argument("--rows-out", type=Path, help="also write every case's features here (JSON lines)")
    args = parser.parse_args()
    services = Services.open(backend="extractive")
    services.__dict__["thresholds"] = replace(services.thresholds, min_retrieval_margin=float("-inf"))
    rows = []
    for spec in args.sets:
        path, corpus = spec.rsplit(":", 1)
        rows += observe(services, Path(path), corpus)
    if args.rows_out:
        with args.rows_out.open("w") as out:
            for name, should_refuse, refused_later, features in rows:
                row = {"set": name, "should_refuse": should_refuse, "refused_later": refused_later}
                out.write(json.dumps(row | dict(zip(FEATURES, features))) + "\n")
    sets = np.array([r[0] for r in rows])
    y = np.array([r[1] for r in rows])
    later = np.array([r[2] for r in rows])
    x = np.array([r[3] for r in rows])
    names = sorted(set(sets))
    print("features".ljust(48), " ".join(n.ljust(22) for n in names), "pooled F1")
    for subset in SUBSETS:
        refused = np.zeros(len(rows), bool)
        for held_out in names:
            test, train = sets == held_out, sets != held_out
            fit_rows = train & ~later
            if len(subset) == 1:  # one feature: refuse below a threshold on it (MaxSim: the shipped rule)
                score = lambda q: -q[:, 0]
            else:
                score = logistic(x[fit_rows][:, subset], y[fit_rows].astype(float))
            train_scores = score(x[train][:, subset])
            best = max(np.unique(train_scores), key=lambda t: prf((train_scores >= t) | later[train], y[train])[2])
            test_scores = score(x[test][:, subset])
            refused[test] = (test_scores >= best) | later[test]
        cells = [f"P {prf(refused[sets == n], y[sets == n])[0]:.2f} R {prf(refused[sets == n], y[sets == n])[1]:.2f}" for n in names]
        label = f"threshold on {FEATURES[subset[0]]}" if len(subset) == 1 else "logistic: " + ", ".join(FEATURES[i] for i in subset)
        print(label.ljust(48), " ".join(c.ljust(22) for c in cells), f"{prf(refused, y)[2]:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
