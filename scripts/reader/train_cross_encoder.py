"""A cross-encoder from the bundled MiniLM weights, fine-tuned on the reader's labels, scored like the heads.

Pairs come from ``build_labels.py``'s training rows: (question, source passage) is 1, (question,
hard negative) is 0, and every passage an unanswerable-by-construction question retrieves is 0.
Fewer layers (``--layers``) and a short window (``MAX_TOKENS``) keep it in the issue's budget; CPU
torch, fixed seed. A question's answerability is the best score over its first ``CANDIDATES``
retrieved passages; the refusal threshold is fitted on the dev sets' cases exactly as
``train_reader.py`` fits the heads', and held-out rows are only scored. Four times an epoch it prints
(and with ``--curves-out`` keeps) the training loss, the held-out AUC and refusal figures, and page
recall@1 with those passages re-ordered by it: the curves ``plot_curves.py`` draws.

    CITEDOCS_HOME=DIR python scripts/reader/train_cross_encoder.py data/reader/examples-*.jsonl --layers 3
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

import torch
from sklearn.metrics import roc_auc_score
from transformers import AutoModelForSequenceClassification, AutoTokenizer, get_linear_schedule_with_warmup

sys.path.insert(0, str(Path(__file__).resolve().parent))

from train_reader import f1, refused_elsewhere  # noqa: E402

from citedocs.index import open_store  # noqa: E402
from citedocs.models.encoders import BI_ENCODER_PACKAGE  # noqa: E402

SEED = 20261128
MAX_TOKENS = 160
BATCH = 16
CHECKS_PER_EPOCH = 4  # points on the curves
CANDIDATES = 4


def bundled_minilm() -> Path:
    import importlib

    return Path(importlib.import_module(BI_ENCODER_PACKAGE).__file__).parent / "model"


def page_hit(chunk_ids: list[str], row: dict) -> bool:
    """Whether a chunk is on a page the case expects (``testing#capture-fd/2`` is on ``testing.md``)."""
    pages = {source.split("#")[0].rsplit(".", 1)[0] for source in row["expected_sources"]}
    return any(c.split("#")[0] in pages for c in chunk_ids)


@torch.no_grad()
def score(model, tokenizer, cases: list[dict], today: dict, passage) -> dict:
    """Dev threshold (best refusal F1 over the dev cases, today's other refusals kept) and, per
    held-out set and pooled, AUC over the cases the margin decides and refusal P / R / F1."""

    def logits(row: dict) -> torch.Tensor:
        """The cross-encoder's score of each of the first CANDIDATES retrieved chunks."""
        head = [passage(row["corpus"], c) for c in row["retrieved"][:CANDIDATES]]
        enc = tokenizer([row["question"]] * len(head), head, truncation="only_second", max_length=MAX_TOKENS, padding=True, return_tensors="pt")
        return model(**enc).logits.reshape(-1)

    scored, reranked = [], {}
    for row in cases:
        if not row["retrieved"]:
            scored.append((row, 0.0))
            continue
        row_logits = logits(row)
        scored.append((row, float(torch.sigmoid(row_logits).max())))  # answerability: the best candidate
        if row["split"] == "heldout" and row["answerable"]:  # rerank: the candidates in its order, the rest as retrieved
            head = row["retrieved"][:CANDIDATES]
            reranked[row["case_id"]] = [head[i] for i in torch.argsort(row_logits, descending=True).tolist()] + row["retrieved"][CANDIDATES:]
    dev = [(r, p) for r, p in scored if r["split"] == "train"]
    should = [not r["answerable"] for r, _ in dev]
    other = [refused_elsewhere(today[r["case_id"]]) for r, _ in dev]
    thresholds = sorted({0.0, *(p + 1e-9 for _, p in dev)})
    threshold = max(thresholds, key=lambda t: (f1([(s, o or p < t) for s, o, (_, p) in zip(should, other, dev)])["f1"], -t))
    out: dict = {"dev_threshold": round(threshold, 4), "sets": {}}
    pooled = []
    for dataset in sorted({r["source"] for r, _ in scored if r["split"] == "heldout"}):
        rows = [(r, p) for r, p in scored if r["source"] == dataset]
        should = [not r["answerable"] for r, _ in rows]
        other = [refused_elsewhere(today[r["case_id"]]) for r, _ in rows]
        decided = [(s, -p) for s, o, (_, p) in zip(should, other, rows) if not o]
        auc = roc_auc_score(*zip(*decided)) if len({s for s, _ in decided}) > 1 else float("nan")
        decisions = [(s, o or p < threshold) for s, o, (_, p) in zip(should, other, rows)]
        pooled += decisions
        answerable = [r for r, _ in rows if r["answerable"]]
        recall_at_1 = {
            "page_recall@1_today": round(sum(page_hit(r["retrieved"][:1], r) for r in answerable) / len(answerable), 3),
            "page_recall@1_reranked": round(sum(page_hit(reranked[r["case_id"]][:1], r) for r in answerable) / len(answerable), 3),
        }
        out["sets"][dataset] = {"auc": round(float(auc), 3), **f1(decisions), **recall_at_1}
    out["pooled"] = f1(pooled)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("examples", type=Path, nargs="+")
    parser.add_argument("--today", type=Path, default=Path("data/reader/today-heldout.jsonl"))
    parser.add_argument("--layers", type=int, default=3)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--lr", type=float, default=5e-5)
    parser.add_argument("--curves-out", type=Path, help="four times an epoch: training loss, dev threshold, held-out AUC, refusal figures and re-ranked page recall@1 (JSON, rewritten at each point)")
    parser.add_argument("--save", type=Path, help="write the fine-tuned model here (not shipped: see the decision record)")
    parser.add_argument("--limit", type=int, default=0, help="train on this many pairs only (a smoke test)")
    args = parser.parse_args()
    random.seed(SEED)
    torch.manual_seed(SEED)
    rows = [json.loads(line) for path in args.examples for line in path.read_text(encoding="utf-8").splitlines()]
    today = {c["case_id"]: c for c in map(json.loads, args.today.read_text(encoding="utf-8").splitlines())}
    expected = {}
    for source in {r["source"] for r in rows if r["split"] == "heldout"}:
        for line in (Path("evals") / f"{source}.jsonl").read_text(encoding="utf-8").splitlines():
            case = json.loads(line)
            expected[case["id"]] = case.get("expected_sources") or []
    for row in rows:
        if row.get("case_id") in expected:
            row["expected_sources"] = expected[row["case_id"]]
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
    optimiser = torch.optim.AdamW(model.parameters(), lr=args.lr)
    batches = -(-len(pairs) // BATCH)
    schedule = get_linear_schedule_with_warmup(optimiser, args.epochs * batches // 10, args.epochs * batches)
    loss_fn = torch.nn.BCEWithLogitsLoss(pos_weight=torch.tensor(3.0))
    cases = [r for r in rows if r.get("case_id") in today]
    run = {"pairs": len(pairs), "positive": int(sum(p[2] for p in pairs)), "layers": args.layers, "lr": args.lr, "seed": SEED, "epochs": args.epochs, "curves": []}
    checkpoints = {round(batches * k / CHECKS_PER_EPOCH) for k in range(1, CHECKS_PER_EPOCH + 1)}

    def check(epoch: float, loss: float | None) -> None:
        model.eval()
        point = {"epoch": round(epoch, 2), "train_loss": None if loss is None else round(loss, 4)}
        point.update(score(model, tokenizer, cases, today, passage))
        run["curves"].append(point)
        print(json.dumps(point), flush=True)
        if args.curves_out:  # after every point, so a run stopped early keeps its curves
            args.curves_out.write_text(json.dumps(run, indent=1) + "\n", encoding="utf-8")
        model.train()

    check(0.0, None)
    for epoch in range(args.epochs):
        total, seen = 0.0, 0
        for number, start in enumerate(range(0, len(pairs), BATCH), 1):
            batch = pairs[start : start + BATCH]
            enc = tokenizer([b[0] for b in batch], [b[1] for b in batch], truncation="only_second", max_length=MAX_TOKENS, padding=True, return_tensors="pt")
            loss = loss_fn(model(**enc).logits.squeeze(-1), torch.tensor([b[2] for b in batch]))
            loss.backward()
            optimiser.step()
            schedule.step()
            optimiser.zero_grad()
            total += loss.item() * len(batch)
            seen += len(batch)
            if number in checkpoints:  # the training loss since the last check, then the held-out figures
                check(epoch + number / batches, total / seen)
                total, seen = 0.0, 0
    model.eval()
    if args.save:
        model.save_pretrained(args.save)
        tokenizer.save_pretrained(args.save)
    return 0


if __name__ == "__main__":
    sys.exit(main())
