"""Fit the extractive backend's sentence scorer on generated questions, and compare it with the hand-set score.

Each generated question (``generate_questions.py``) names the unit of its passage that states the
answer. ``--collect`` asks every question through ``/ask``'s own pipeline (extractive backend) and
records, for the sentences the backend chooses among, their features (``generate/unit_features.py``)
and whether each is the answer unit; questions whose passage the backend never sees (retrieval put it
outside the top chunks, or the question was refused) give no row. ``--fit`` learns a linear score
from those rows by pairwise logistic regression (the answer unit against each other sentence of its
question: only the order within a question matters), scores it corpus by corpus with the other
corpora as training data (leave one corpus out), and writes the weights fitted on all rows.

    CITEDOCS_HOME=DIR python scripts/reader/train_unit_scorer.py --collect data/reader/questions.jsonl \
        --out data/reader/units-generated.jsonl
    python scripts/reader/train_unit_scorer.py --fit data/reader/units-generated.jsonl \
        --weights src/citedocs/generate/data/unit_scorer.json
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

import numpy as np

SEED = 20261128
C = 1.0  # the logistic regression's inverse regularisation strength (sklearn's default; not tuned)


def normalised(text: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"\[[^\]\s]+\]|[`*_]", "", text)).strip().lower()


def collect(questions: Path, out: Path) -> None:
    from citedocs.contract import AskRequest
    from citedocs.generate.extractive import ExtractiveGenerator, scoring_views
    from citedocs.service import Services

    services = Services.open(backend="extractive")
    generator: ExtractiveGenerator = services.pipeline.generator
    seen: dict[str, object] = {}
    real_generate = generator.generate

    def spy(question, chunks, history):
        seen["chunks"] = list(chunks)
        return real_generate(question, chunks, history)

    generator.generate = spy
    records = [json.loads(line) for line in questions.read_text(encoding="utf-8").splitlines()]
    kept = 0
    with out.open("w", encoding="utf-8") as sink:
        for n, record in enumerate(records, 1):
            seen.clear()
            response = services.ask(AskRequest(question=record["question"], corpus=record["corpus"]))
            if "chunks" not in seen:
                continue
            answer = normalised(record["answer_unit"])
            prose, matrix, today = scoring_views(generator, record["question"], seen["chunks"])
            labels = [int(bool(answer) and (answer in normalised(c.text) or normalised(c.text) in answer) and len(normalised(c.text)) > 15) for c in prose]
            if not any(labels):
                continue
            kept += 1
            sink.write(json.dumps({
                "corpus": record["corpus"], "question": record["question"], "chunk_id": record["chunk_id"],
                "features": np.round(matrix, 5).tolist(), "label": labels, "today": np.round(today, 5).tolist(),
                "answered": not response.refused,
            }, ensure_ascii=False) + "\n")
            if n % 25 == 0:
                print(f"{n}/{len(records)} questions, {kept} with their answer unit among the candidates", file=sys.stderr)
    print(f"{len(records)} questions, {kept} with their answer unit among the candidates -> {out}", file=sys.stderr)


def pairs(rows: list[dict]) -> tuple[np.ndarray, np.ndarray]:
    """Answer unit minus each other sentence of its question, and the reverse: a ranking as classification."""
    diffs = []
    for row in rows:
        x, y = np.asarray(row["features"]), np.asarray(row["label"])
        for p in np.flatnonzero(y == 1):
            for q in np.flatnonzero(y == 0):
                diffs.append(x[p] - x[q])
    d = np.asarray(diffs)
    return np.vstack([d, -d]), np.concatenate([np.ones(len(d)), np.zeros(len(d))])


def fit(rows: list[dict]) -> np.ndarray:
    from sklearn.linear_model import LogisticRegression

    x, y = pairs(rows)
    model = LogisticRegression(C=C, fit_intercept=False, max_iter=2000, random_state=SEED).fit(x, y)
    return model.coef_[0]


def hits(rows: list[dict], score) -> dict[str, float]:
    """How often the answer unit is the best-scored sentence (top 1), or among the best three."""
    top1 = top3 = 0
    for row in rows:
        s, y = score(row), np.asarray(row["label"])
        order = np.argsort(-s, kind="stable")
        top1 += int(y[order[0]] == 1)
        top3 += int(y[order[:3]].any())
    return {"questions": len(rows), "top1": round(top1 / max(1, len(rows)), 3), "top3": round(top3 / max(1, len(rows)), 3)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--collect", type=Path, help="generate_questions.py's JSONL: ask each, write candidate rows")
    parser.add_argument("--fit", type=Path, help="--collect's rows: fit, compare, write --weights")
    parser.add_argument("--out", type=Path, help="where --collect writes")
    parser.add_argument("--weights", type=Path, help="where --fit writes the weights fitted on every row")
    parser.add_argument("--json-out", type=Path, help="the comparison as JSON")
    args = parser.parse_args()
    if args.collect:
        collect(args.collect, args.out)
        return 0
    from citedocs.generate.unit_features import NAMES

    rows = [json.loads(line) for line in args.fit.read_text(encoding="utf-8").splitlines()]
    rows = [r for r in rows if 0 < sum(r["label"]) < len(r["label"])]  # a choice to make
    report = {}
    for corpus in sorted({r["corpus"] for r in rows}):
        train = [r for r in rows if r["corpus"] != corpus]
        test = [r for r in rows if r["corpus"] == corpus]
        w = fit(train)
        report[corpus] = {
            "today": hits(test, lambda r: np.asarray(r["today"])),
            "learned": hits(test, lambda r, w=w: np.asarray(r["features"]) @ w),
        }
    report["all (in-sample)"] = {"today": hits(rows, lambda r: np.asarray(r["today"]))}
    w = fit(rows)
    report["all (in-sample)"]["learned"] = hits(rows, lambda r: np.asarray(r["features"]) @ w)
    report["weights"] = dict(zip(NAMES, np.round(w, 4).tolist()))
    print(json.dumps(report, indent=1))
    if args.json_out:
        args.json_out.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    if args.weights:
        args.weights.parent.mkdir(parents=True, exist_ok=True)
        args.weights.write_text(json.dumps({
            "features": list(NAMES), "weights": np.round(w, 6).tolist(),
            "trained_on": str(args.fit), "questions": len(rows), "seed": SEED, "C": C,
        }, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
