#!/usr/bin/env python
"""Embedding-pass benchmark (a script, not a test): each encoder runtime on the same chunks.

Parses the Astro docs as ingest does (no embedding), takes a fixed random sample of the chunks'
embedding texts, and runs ``encode_with_tokens`` (what ingest calls) on every runtime in
``--runtimes``, in rounds that alternate the runtimes so machine load hits them alike. Prints
chunks/s and CPU ms per chunk per runtime and round, and each runtime's cosine to the torch reference (sentence vector
min/median, mean per-token cosine min/median), with the load average.

    python benchmarks/bench_encoder.py --sample 1000 --rounds 2
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import time
from pathlib import Path

import numpy as np


def astro_texts(docs: Path) -> list[str]:
    from citedocs import config
    from citedocs.ingest.chunker import chunk_document
    from citedocs.ingest.pipeline import find_documents
    from citedocs.ingest.planted import Screen

    screen = Screen.for_corpus(config.ASTRO_BASE_URL)
    texts = []
    for path in find_documents(docs):
        parsed = chunk_document(path.relative_to(docs).as_posix(), path.read_text(encoding="utf-8"), config.ASTRO_BASE_URL,
                                root=docs, screen=screen)
        texts.extend(c.embedding_text() for c in parsed.chunks)
    return texts


def load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def main() -> int:
    from citedocs import config
    from citedocs.models.encoders import LATE_INTERACTION_TOKENS, load_bi_encoder

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=Path, default=None, help="docs folder (default: the bundled Astro docs)")
    parser.add_argument("--sample", type=int, default=1000, help="chunks in the sample")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--runtimes", default="torch,onnx-fp32,onnx-int8")
    args = parser.parse_args()

    texts = astro_texts(args.docs or config.bundled_astro_docs())
    sample = random.Random(12).sample(texts, min(args.sample, len(texts)))
    runtimes = args.runtimes.split(",")
    encoders = {name: load_bi_encoder(name) for name in runtimes}
    print(f"{len(sample)} of {len(texts)} chunks; load average at start {load()}")
    rates: dict[str, list[float]] = {name: [] for name in runtimes}
    cpu_per_chunk: dict[str, list[float]] = {name: [] for name in runtimes}
    vectors = {}
    for round_ in range(args.rounds):
        for name in runtimes if round_ % 2 == 0 else runtimes[::-1]:
            started, cpu_started = time.perf_counter(), time.process_time()
            vectors[name] = encoders[name].encode_with_tokens(sample, LATE_INTERACTION_TOKENS)
            rate = len(sample) / (time.perf_counter() - started)
            cpu = time.process_time() - cpu_started  # all threads; less sensitive than wall time to other jobs
            rates[name].append(rate)
            cpu_per_chunk[name].append(1000 * cpu / len(sample))
            print(f"round {round_ + 1} {name}: {rate:.1f} chunks/s, {cpu_per_chunk[name][-1]:.0f} CPU ms/chunk (load {load()})", flush=True)
    print("\n| runtime | chunks/s (median of rounds) | CPU ms/chunk | sentence cosine to torch min / median | token cosine min / median |")
    print("|---|---|---|---|---|")
    for name in runtimes:
        cells = ["", ""]
        if "torch" in vectors and name != "torch":
            ref, got = vectors["torch"], vectors[name]
            sentence = np.array([float(r[0] @ g[0]) for r, g in zip(ref, got)])
            tokens = np.array([float(np.mean(np.sum(r[1] * g[1], axis=1))) for r, g in zip(ref, got)])
            cells = [f"{sentence.min():.4f} / {np.median(sentence):.4f}", f"{tokens.min():.4f} / {np.median(tokens):.4f}"]
        print(f"| {name} | {statistics.median(rates[name]):.1f} | {statistics.median(cpu_per_chunk[name]):.0f} | {cells[0]} | {cells[1]} |")
    print(f"\nload average at end {load()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
