"""Train the answerability head variants and compare them with today's refusal rule on held-out sets.

Reads ``build_labels.py``'s examples. Every variant is fitted on ``split == "train"`` rows only,
with fixed seeds, and refuses when its probability of "answerable" is below 0.5 (balanced class
weights; no threshold is fitted on any held-out row). Held-out rows are only scored.

Today's decision per held-out case comes from a finished ``citedocs eval --backend extractive`` run
(``--run OUT_DIR``): refused or not, and why. A reader *replaces the retrieval margin* only: a case
today refused for another reason (the question gate, nothing verifiable, an amount question with no
amount) stays refused; a case the margin refused and the reader would let through counts as answered
(what the extractive backend would then say is not measured here: see the docs page).

    python scripts/reader/train_reader.py data/reader/examples-*.jsonl --run OUT/click-heldout ... \
        --json-out data/reader/results.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

sys.path.insert(0, str(Path(__file__).resolve().parent))

from features import NAMES  # noqa: E402

SEED = 20261128
MARGIN = 0.173  # validate/thresholds.toml min_retrieval_margin, the shipped rule
VARIANTS = {
    # name: (model factory, training sources)
    "lr_generated": (lambda: make_pipeline(StandardScaler(), LogisticRegression(class_weight="balanced", max_iter=1000, random_state=SEED)), {"generated"}),
    "lr_generated+structure": (lambda: make_pipeline(StandardScaler(), LogisticRegression(class_weight="balanced", max_iter=1000, random_state=SEED)), {"generated", "structure"}),
    "lr_all": (lambda: make_pipeline(StandardScaler(), LogisticRegression(class_weight="balanced", max_iter=1000, random_state=SEED)), None),
    "gbm_all": (lambda: HistGradientBoostingClassifier(max_depth=3, max_iter=150, learning_rate=0.05, class_weight="balanced", random_state=SEED), None),
}


def f1(pairs: list[tuple[bool, bool]]) -> dict:
    """Refusal precision, recall, F1 over (should_refuse, refused) pairs."""
    tp = sum(s and r for s, r in pairs)
    fp = sum(r and not s for s, r in pairs)
    fn = sum(s and not r for s, r in pairs)
    p = tp / (tp + fp) if tp + fp else 0.0
    r = tp / (tp + fn) if tp + fn else 0.0
    return {"precision": round(p, 3), "recall": round(r, 3), "f1": round(2 * p * r / (p + r), 3) if p + r else 0.0}


def matrix(rows: list[dict]) -> np.ndarray:
    return np.array([[row["features"][n] for n in NAMES] for row in rows], dtype=float)


def refused_elsewhere(case: dict) -> bool:
    """Refused by a stage other than the retrieval margin (the question gate, the validator, ...)."""
    return case["refused"] and not (case["refusal_reason"] or "").startswith("low_retrieval")


def dev_thresholds(models: dict, dev: list[dict], today: dict, kept=refused_elsewhere) -> dict[str, float]:
    """Per model, the refusal threshold with the best refusal F1 over every dev-set case together (as
    ``citedocs calibrate`` fits the margin; ties go to the lower threshold: fewer needless refusals),
    a case ``kept`` refused by today's pipeline staying refused."""
    if not dev:
        return {}
    should = [not r["answerable"] for r in dev]
    other = [kept(today[r["case_id"]]) for r in dev]
    out = {}
    for name, model in models.items():
        p = model.predict_proba(matrix(dev))[:, 1]
        candidates = sorted({0.0, *(float(x) + 1e-9 for x in p)})
        out[name] = round(max(candidates, key=lambda t: (f1([(s, o or q < t) for s, o, q in zip(should, other, p)])["f1"], -t)), 4)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("examples", type=Path, nargs="+", help="build_labels.py outputs")
    parser.add_argument("--run", action="append", default=[], type=Path, help="a citedocs eval --out folder of a held-out set")
    parser.add_argument("--today", type=Path, default=Path("data/reader/today-heldout.jsonl"),
                        help="today's decisions per held-out case: written from --run, read when no --run is given")
    parser.add_argument("--json-out", type=Path)
    args = parser.parse_args()
    rows = [json.loads(line) for path in args.examples for line in path.read_text(encoding="utf-8").splitlines()]
    train = [r for r in rows if r["split"] == "train"]
    heldout = [r for r in rows if r["split"] == "heldout"]
    today = {}
    for run in args.run:
        for line in (run / "rows.jsonl").read_text(encoding="utf-8").splitlines():
            case = json.loads(line)
            today[case["case_id"]] = {k: case[k] for k in ("case_id", "refused", "refusal_reason")}
    if args.run:
        args.today.write_text("".join(json.dumps(c) + "\n" for c in today.values()), encoding="utf-8")
    else:
        today = {c["case_id"]: c for c in map(json.loads, args.today.read_text(encoding="utf-8").splitlines())}
    counts = {}
    for r in train:
        key = f"{r['source']}:{'answerable' if r['answerable'] else 'unanswerable'}"
        counts[key] = counts.get(key, 0) + 1
    print(f"training examples: {len(train)} {counts}")
    models = {}
    for name, (factory, sources) in VARIANTS.items():
        chosen = [r for r in train if sources is None or r["source"] in sources]
        labels = np.array([r["answerable"] for r in chosen])
        if len(set(labels)) < 2:
            print(f"{name}: skipped, its training rows hold one class only")
            continue
        models[name] = factory().fit(matrix(chosen), labels)
        print(f"{name}: {len(chosen)} training rows, training AUC {roc_auc_score(labels, models[name].predict_proba(matrix(chosen))[:, 1]):.3f}")
    dev = [r for r in train if r["source"].endswith("-dev") and r.get("case_id") in today]
    thresholds = dev_thresholds(models, dev, today)
    # the reader as a second refusal on top of today's rule: it can only add refusals
    added = dev_thresholds(models, dev, today, kept=lambda case: case["refused"])
    results = {"training": counts, "dev_thresholds": thresholds, "dev_thresholds_added": added, "sets": {}}
    pooled_rows: dict[str, dict[str, list[tuple[bool, bool]]]] = {}
    header = f"{'set':22} {'n':>3}  {'rule':30} {'AUC':>6} {'P':>6} {'R':>6} {'F1':>6}"
    print(f"refusal thresholds fitted on the dev sets: {thresholds}; as an added refusal: {added}")
    print(header)
    for dataset in sorted({r["source"] for r in heldout}):
        cases = [r for r in heldout if r["source"] == dataset and r["case_id"] in today]
        if not cases:
            continue
        should = [not r["answerable"] for r in cases]
        other = [refused_elsewhere(today[r["case_id"]]) for r in cases]
        margin = matrix(cases)[:, NAMES.index("margin")]

        def auc(scores) -> float | None:
            """Answerability AUC over the cases no other stage refuses: the ones this rule decides."""
            decided = [(s, -x) for s, x, o in zip(should, scores, other) if not o]
            return roc_auc_score(*zip(*decided)) if len({s for s, _ in decided}) > 1 else None

        table = {
            "today (eval run)": (None, [today[r["case_id"]]["refused"] for r in cases]),
            "margin (recomputed)+other": (auc(margin), [o or m < MARGIN for o, m in zip(other, margin)]),
        }
        for name, model in models.items():
            p = model.predict_proba(matrix(cases))[:, 1]
            table[f"{name}+other"] = (auc(p), [o or q < 0.5 for o, q in zip(other, p)])
            if name in thresholds:
                table[f"{name}@dev+other"] = (auc(p), [o or q < thresholds[name] for o, q in zip(other, p)])
                refused_today = [today[r["case_id"]]["refused"] for r in cases]
                table[f"today|{name}@dev"] = (None, [t or q < added[name] for t, q in zip(refused_today, p)])
        results["sets"][dataset] = {}
        pooled_rows[dataset] = {rule: list(zip(should, refused)) for rule, (_, refused) in table.items()}
        for rule, (area, refused) in table.items():
            scores = f1(list(zip(should, refused)))
            results["sets"][dataset][rule] = {"auc": None if area is None else round(area, 3), **scores}
            shown = "" if area is None else f"{area:.3f}"
            print(f"{dataset:22} {len(cases):3}  {rule:30} {shown:>6} {scores['precision']:6.3f} {scores['recall']:6.3f} {scores['f1']:6.3f}")
    pooled = {}
    for dataset, table in pooled_rows.items():
        for rule, pairs in table.items():
            pooled.setdefault(rule, []).extend(pairs)
    results["pooled"] = {rule: f1(pairs) for rule, pairs in pooled.items()}
    for rule, scores in results["pooled"].items():
        print(f"{'all held-out pooled':22} {len(pooled[rule]):3}  {rule:30} {'':>6} {scores['precision']:6.3f} {scores['recall']:6.3f} {scores['f1']:6.3f}")
    if args.json_out:
        args.json_out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
