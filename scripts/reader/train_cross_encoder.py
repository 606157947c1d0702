"""A cross-encoder from the bundled MiniLM weights, fine-tuned on the reader's labels, scored like the heads.

Pairs come from ``build_labels.py``'s training rows: (question, source passage) is 1, (question,
hard negative) is 0, and every passage an unanswerable-by-construction question retrieves is 0.
Fewer layers (``--layers``) and a short window (``MAX_TOKENS``) keep it in the issue's budget; CPU
torch, fixed seed. A question's answerability is the best score over its first ``CANDIDATES``
retrieved passages; the refusal threshold is fitted on the dev sets' cases exactly as
``train_reader.py`` fits the heads', and held-out rows are only scored. Prints the same table rows.

    CITEDOCS_HOME=DIR python scripts/reader/train_cross_encoder.py data/reader/examples-*.jsonl --layers 3
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

import numpy as np
import torch
from sklearn.metrics import roc_auc_score
from transformers import AutoModelForSequenceClassification, AutoTokenizer

sys.path.insert(0, str(Path(__file__).resolve().parent))

from train_reader import f1, refused_elsewhere  # noqa: E402

from citedocs.index import open_store  # noqa: E402
from citedocs.models.encoders import BI_ENCODER_PACKAGE  # noqa: E402

SEED = 20261128
MAX_TOKENS = 160
CANDIDATES = 4


def bundled_minilm() -> Path:
    import importlib

    return Path(importlib.import_module(BI_ENCODER_PACKAGE).__file__).parent / "model"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("examples", type=Path, nargs="+")
    parser.add_argument("--today", type=Path, default=Path("data/reader/today-heldout.jsonl"))
    parser.add_argument("--layers", type=int, default=3)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--limit", type=int, default=0, help="train on this many pairs only (a smoke test)")
    args = parser.parse_args()
    random.seed(SEED)
    torch.manual_seed(SEED)
    rows = [json.loads(line) for path in args.examples for line in path.read_text(encoding="utf-8").splitlines()]
    today = {c["case_id"]: c for c in map(json.loads, args.today.read_text(encoding="utf-8").splitlines())}
    store = open_store(None)
    texts: dict[tuple[str, str], str] = {}

    def passage(corpus: str, chunk_id: str) -> str:
        if (corpus, chunk_id) not in texts:
            for chunk in store.get_chunks(corpus, [chunk_id]):
                texts[(corpus, chunk_id)] = chunk.embedding_text()
        return texts.get((corpus, chunk_id), "")

    pairs = []
    for row in rows:
        if row["split"] != "train" or row["source"] not in ("generated", "structure"):
            continue
        q, corpus = row["question"], row["corpus"]
        if row["answerable"]:
            pairs.append((q, passage(corpus, row["source_chunk"]), 1.0))
            pairs += [(q, passage(corpus, c), 0.0) for c in row.get("hard_negatives", [])[:3]]
        else:
            pairs += [(q, passage(corpus, c), 0.0) for c in row["retrieved"][:2]]
    random.shuffle(pairs)
    if args.limit:
        pairs = pairs[: args.limit]
    print(f"{len(pairs)} training pairs, {sum(p[2] for p in pairs):.0f} positive", flush=True)
    path = bundled_minilm()
    tokenizer = AutoTokenizer.from_pretrained(path)
    model = AutoModelForSequenceClassification.from_pretrained(path, num_labels=1, num_hidden_layers=args.layers)
    optimiser = torch.optim.AdamW(model.parameters(), lr=3e-5)
    loss_fn = torch.nn.BCEWithLogitsLoss(pos_weight=torch.tensor(3.0))
    model.train()
    for epoch in range(args.epochs):
        total = 0.0
        for start in range(0, len(pairs), 16):
            batch = pairs[start : start + 16]
            enc = tokenizer([b[0] for b in batch], [b[1] for b in batch], truncation="only_second", max_length=MAX_TOKENS, padding=True, return_tensors="pt")
            loss = loss_fn(model(**enc).logits.squeeze(-1), torch.tensor([b[2] for b in batch]))
            loss.backward()
            optimiser.step()
            optimiser.zero_grad()
            total += loss.item() * len(batch)
        print(f"epoch {epoch + 1}: loss {total / len(pairs):.4f}", flush=True)
    model.eval()

    @torch.no_grad()
    def answerability(row: dict) -> float:
        candidates = [passage(row["corpus"], c) for c in row["retrieved"][:CANDIDATES]]
        if not candidates:
            return 0.0
        enc = tokenizer([row["question"]] * len(candidates), candidates, truncation="only_second", max_length=MAX_TOKENS, padding=True, return_tensors="pt")
        return float(torch.sigmoid(model(**enc).logits.squeeze(-1)).max())

    scored = [(r, answerability(r)) for r in rows if r.get("case_id") in today]
    dev = [(r, p) for r, p in scored if r["split"] == "train"]
    should = [not r["answerable"] for r, _ in dev]
    other = [refused_elsewhere(today[r["case_id"]]) for r, _ in dev]
    candidates = sorted({0.0, *(p + 1e-9 for _, p in dev)})
    threshold = max(candidates, key=lambda t: (f1([(s, o or p < t) for s, o, (_, p) in zip(should, other, dev)])["f1"], -t))
    print(f"dev threshold {threshold:.4f}")
    pooled = []
    for dataset in sorted({r["source"] for r, _ in scored if r["split"] == "heldout"}):
        cases = [(r, p) for r, p in scored if r["source"] == dataset]
        should = [not r["answerable"] for r, _ in cases]
        other = [refused_elsewhere(today[r["case_id"]]) for r, _ in cases]
        decided = [(s, -p) for s, o, (_, p) in zip(should, other, cases) if not o]
        auc = roc_auc_score(*zip(*decided)) if len({s for s, _ in decided}) > 1 else float("nan")
        pairs_ = [(s, o or p < threshold) for s, o, (_, p) in zip(should, other, cases)]
        pooled += pairs_
        scores = f1(pairs_)
        print(f"{dataset:22} {len(cases):3}  cross-encoder@dev+other {auc:6.3f} {scores['precision']:6.3f} {scores['recall']:6.3f} {scores['f1']:6.3f}")
    scores = f1(pooled)
    print(f"{'all held-out pooled':22} {len(pooled):3}  cross-encoder@dev+other        {scores['precision']:6.3f} {scores['recall']:6.3f} {scores['f1']:6.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
