"""How often today's answer quotes the unit that states the answer, on the generated questions.

Each generated question (``generate_questions.py``) names the unit of its passage that states the
answer. This asks every question through the configured backend (``citedocs eval`` uses the
extractive one) against its own corpus and counts: refused, answered with the source passage
cited, and answered quoting the answer unit (its text, whitespace-normalised, inside the answer).
It is the baseline a reader that chooses units has to beat; the figures are on training corpora, so
they measure the task, not held-out quality.

    CITEDOCS_HOME=DIR python scripts/reader/unit_baseline.py data/reader/questions.jsonl
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

from citedocs.contract import AskRequest
from citedocs.service import Services


def normalised(text: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"\[[^\]\s]+\]", "", text)).strip().lower()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("questions", type=Path)
    parser.add_argument("--backend", default="extractive")
    args = parser.parse_args()
    services = Services.open(backend=args.backend)
    records = [json.loads(line) for line in args.questions.read_text(encoding="utf-8").splitlines()]
    counts = {"questions": len(records), "refused": 0, "source_cited": 0, "answer_unit_quoted": 0}
    for record in records:
        response = services.ask(AskRequest(question=record["question"], corpus=record["corpus"]))
        if response.refused:
            counts["refused"] += 1
            continue
        counts["source_cited"] += record["chunk_id"] in {c.id for c in response.citations}
        counts["answer_unit_quoted"] += normalised(record["answer_unit"])[:80] in normalised(response.answer)
    print(json.dumps(counts))
    return 0


if __name__ == "__main__":
    sys.exit(main())
