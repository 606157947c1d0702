#!/usr/bin/env python
"""Each case's retrieval confidence, its corpus's floor and the margin between them, by kind (a script,
not a test): how ``hybrid.DENSE_CONFIDENCE_SCALE`` was chosen. A question the MiniLM reranker cannot
read (another language than English, or pages that are not English) over a corpus embedded with
multilingual-e5 is measured by e5's best cosine similarity ("dense"); the margin it needs above its
floor is the one global ``min_retrieval_margin``, so the scale is the one that puts that margin
between the answerable cases and the off-topic ones of the dev sets (false premises are the question
gate's to refuse, not retrieval's).

    python benchmarks/dense_margins.py evals/vitepress-ru-dev.jsonl vitepress-ru
"""

from __future__ import annotations

import json
import sys

from citedocs.index import open_store
from citedocs.language import detect_language
from citedocs.retrieve.hybrid import DENSE_CONFIDENCE_SCALE, RetrievalConfig
from citedocs.retrieve.null_level import NullLevels
from citedocs.service import Services


def main(cases: str, corpus: str) -> None:
    services = Services(store=open_store())
    version = services.store.get_corpus(corpus).version
    levels = NullLevels(services.retriever)
    print(f"{'case':<28} {'bucket':<14} kind    raw margin (e5 cosine above the floor; x{DENSE_CONFIDENCE_SCALE} = margin)")
    for line in open(cases, encoding="utf-8"):
        case = json.loads(line)
        result = services.retriever.retrieve(corpus, case["question"], 8, RetrievalConfig())
        floor = levels.level(corpus, version, detect_language(case["question"]))
        scale = DENSE_CONFIDENCE_SCALE if result.confidence_kind == "dense" else 1.0
        print(f"{case['id']:<28} {case['bucket']:<14} {result.confidence_kind:<7} {(result.confidence - floor) / scale:+.4f}")


if __name__ == "__main__":
    main(*sys.argv[1:])
