#!/usr/bin/env python
"""Do int8 vectors depend on the CPU? (a script, not a test)

ONNX Runtime's int8 matrix products (MLAS) pick their kernel by what the CPU reports: AVX-512 VNNI,
AVX-VNNI, or plain AVX2 (``vpmaddubsw``, whose 16-bit pair sums saturate unless weights keep to 7
bits, which is why the int8 graph quantizes weights with ``reduce_range``). An index embedded on one
kind of CPU and queried on another is only correct if both give the same vectors, so this script
embeds a fixed sample of real chunk texts and eval questions with each runtime and saves them;
run it once natively and once under an emulated CPU without AVX-512/VNNI, then compare:

    python benchmarks/bench_int8_paths.py embed --home HOME --out native.npz
    qemu-x86_64 -cpu Haswell $(which python) benchmarks/bench_int8_paths.py embed --home HOME --out haswell.npz
    python benchmarks/bench_int8_paths.py compare native.npz haswell.npz

``embed`` records the CPU features numpy detects (cpuid), so the file says which path made it.
Timings under an emulator mean nothing; only the vectors are compared.
"""

from __future__ import annotations

import argparse
import json
import random
import sqlite3
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
CASE_FILES = sorted((ROOT / "evals").glob("*-dev.jsonl")) + sorted((ROOT / "evals").glob("*.jsonl"))


def cpu_features() -> dict[str, bool]:
    try:
        from numpy._core._multiarray_umath import __cpu_features__ as features
    except ImportError:  # numpy < 2
        from numpy.core._multiarray_umath import __cpu_features__ as features
    return {k: bool(v) for k, v in features.items() if k in ("AVX2", "FMA3", "AVX512F", "AVX512VNNI", "AVXVNNI")}


def sample(home: Path, per_corpus: int, questions: int) -> list[str]:
    """``per_corpus`` chunks of every corpus in ``home`` (what the bi-encoder sees of each) and
    ``questions`` eval questions, both drawn with a fixed seed."""
    db = sqlite3.connect(f"file:{home / 'citedocs.sqlite3'}?mode=ro", uri=True)
    texts = []
    for (corpus,) in db.execute("SELECT DISTINCT corpus FROM chunks ORDER BY corpus"):
        rows = db.execute("SELECT title, heading_path, text FROM chunks WHERE corpus = ? ORDER BY id", (corpus,)).fetchall()
        for title, headings, text in random.Random(7).sample(rows, min(per_corpus, len(rows))):
            texts.append(" > ".join((title, *json.loads(headings or "[]"))) + "\n" + text)
    asked = [json.loads(line)["question"] for path in CASE_FILES for line in path.read_text().splitlines() if line.strip()]
    return texts + random.Random(7).sample(asked, min(questions, len(asked)))


def embed(args: argparse.Namespace) -> None:
    from citedocs.models.encoders import LATE_INTERACTION_TOKENS, load_bi_encoder

    texts = sample(args.home, args.per_corpus, args.questions)
    arrays: dict[str, np.ndarray] = {"texts": np.array(texts, dtype=object)}
    for runtime in args.runtimes.split(","):
        pairs = load_bi_encoder(runtime).encode_with_tokens(texts, LATE_INTERACTION_TOKENS)
        arrays[f"{runtime}/sentence"] = np.stack([p[0] for p in pairs])
        arrays[f"{runtime}/tokens"] = np.concatenate([p[1] for p in pairs])
    arrays["cpu"] = np.array(json.dumps(cpu_features()))
    np.savez(args.out, **arrays)
    print(f"{len(texts)} texts embedded with {args.runtimes} on {cpu_features()} -> {args.out}")


def compare(args: argparse.Namespace) -> None:
    a, b = np.load(args.a, allow_pickle=True), np.load(args.b, allow_pickle=True)
    if list(a["texts"]) != list(b["texts"]):
        sys.exit("the two files embedded different texts: run both with the same --home and sample sizes")
    print(f"{args.a}: {a['cpu']}\n{args.b}: {b['cpu']}\n{len(a['texts'])} texts")
    print("| runtime | vectors | identical | cosine min / median | max abs difference |\n|---|---|---|---|---|")
    for key in sorted(k for k in a.files if "/" in k and k in b.files):
        x, y = a[key], b[key]
        cosine = np.sum(x * y, axis=1) / np.maximum(np.linalg.norm(x, axis=1) * np.linalg.norm(y, axis=1), 1e-12)
        same = int(np.sum(np.all(x == y, axis=1)))
        print(f"| {key.split('/')[0]} | {key.split('/')[1]} | {same} of {len(x)} | "
              f"{cosine.min():.6f} / {np.median(cosine):.6f} | {np.abs(x - y).max():.2e} |")
    if "onnx-fp32/sentence" in a.files and "onnx-int8/sentence" in a.files:
        x, y = a["onnx-fp32/sentence"], a["onnx-int8/sentence"]
        cosine = np.sum(x * y, axis=1)
        print(f"\nfor scale, int8 against fp32 in {args.a}: sentence cosine min {cosine.min():.4f}, median {np.median(cosine):.4f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    e = sub.add_parser("embed", help="embed the sample with each runtime and save the vectors")
    e.add_argument("--home", type=Path, required=True, help="a CITEDOCS_HOME whose chunks are sampled (read only)")
    e.add_argument("--out", type=Path, required=True)
    e.add_argument("--per-corpus", type=int, default=12)
    e.add_argument("--questions", type=int, default=60)
    e.add_argument("--runtimes", default="onnx-int8,onnx-fp32")
    e.set_defaults(run=embed)
    c = sub.add_parser("compare", help="compare two saved files")
    c.add_argument("a", type=Path)
    c.add_argument("b", type=Path)
    c.set_defaults(run=compare)
    args = parser.parse_args()
    args.run(args)


if __name__ == "__main__":
    main()
