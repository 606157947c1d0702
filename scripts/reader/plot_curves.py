"""Draw the cross-encoder's training curves (``train_cross_encoder.py --curves-out``) as an SVG for the docs.

Two panels over training epochs: the training loss, and each held-out set's answerability AUC with
today's margin as a dashed line per set (the AUC the cross-encoder must beat). Needs the ``reader``
extra (matplotlib).

    python scripts/reader/plot_curves.py CURVES.json --today data/reader/results.json --out docs/decisions/cross-encoder-curves.svg
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import matplotlib
import matplotlib.pyplot as plt

matplotlib.rcParams["svg.hashsalt"] = "citedocs"  # the same curves give the same file


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("curves", type=Path)
    parser.add_argument("--today", type=Path, help="train_reader.py's results: the margin's AUC per held-out set")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    run = json.loads(args.curves.read_text(encoding="utf-8"))
    points = run["curves"]
    margin_auc = {}
    if args.today:
        sets = json.loads(args.today.read_text(encoding="utf-8"))["sets"]
        margin_auc = {name: rules["margin (recomputed)+other"]["auc"] for name, rules in sets.items()}
    figure, (loss_axes, auc_axes) = plt.subplots(1, 2, figsize=(10, 3.6))
    trained = [p for p in points if p["train_loss"] is not None]
    loss_axes.plot([p["epoch"] for p in trained], [p["train_loss"] for p in trained], marker="o", color="black")
    loss_axes.set(title="training loss (since the previous point)", xlabel="epoch", ylabel="weighted BCE")
    for index, name in enumerate(sorted(points[0]["sets"])):
        color = f"C{index}"
        auc_axes.plot([p["epoch"] for p in points], [p["sets"][name]["auc"] for p in points], marker="o", color=color, label=name)
        if name in margin_auc:
            auc_axes.axhline(margin_auc[name], color=color, linestyle="--", linewidth=1)
    auc_axes.axhline(0.5, color="grey", linewidth=0.5)
    auc_axes.set(title="held-out answerability AUC (dashed: today's margin)", xlabel="epoch", ylabel="AUC", ylim=(0, 1))
    auc_axes.legend(fontsize=8, loc="lower right")
    figure.suptitle(f"cross-encoder: MiniLM, {run['layers']} layers, {run['pairs']:,} pairs ({run['positive']:,} positive), lr {run['lr']}, seed {run['seed']}", fontsize=10)
    figure.tight_layout()
    figure.savefig(args.out, metadata={"Date": None})
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
